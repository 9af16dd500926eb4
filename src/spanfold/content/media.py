"""Media out of the spans: each base64 blob (an image, audio, a document) of at least ``min_bytes`` stored once,
content-addressed, and a ``uri`` part recorded in its place.

Turn it on with ``spanfold.init(media=True)`` (or ``SPANFOLD_MEDIA=on``): blobs go to ``<output>/media/``.
``media="s3://bucket/prefix"`` (any fsspec URL: ``gs://``, ``az://``, ``memory://``; ``pip install 'spanfold[media]'``
and the URL's own driver, such as ``s3fs``) or a directory's path sends them elsewhere; ``spanfold.Media(url=...,
min_bytes=...)`` says both. Off by default.

What is stored and what the span says:

* a blob's name is the sha256 of its decoded bytes and an extension from its MIME type (else from its first bytes,
  else ``bin``): the same blob, sent by any call of any run, is one file, written once (its existence checked first,
  and remembered: a blob this store wrote or found is not looked for again);
* the part recorded in its place is the conventions' UriPart: ``{"type": "uri", "modality", "mime_type", "uri"}``;
  ``uri`` is the user's URL with the name appended for an fsspec store (``s3://bucket/prefix/<sha256>.png``), and an
  absolute ``file://`` URI for a local directory, one any reader opens. ``spanfold ui`` finds a local blob by its
  name in the trace directory's ``media/``, so a moved directory still shows its images;
* a local directory is written with the standard library, as the trace files are: created 0700, each blob 0600,
  written to a temporary name and linked to its own (a writer racing another finds the file there and leaves it);
  an fsspec URL through ``fsspec`` (imported on the first upload, never at ``init()``);
* blobs under ``min_bytes`` (decoded; default 16 KiB) stay inline, as does anything that is not base64;
* a blob that cannot be stored (a read-only directory, a missing driver, a refused upload) stays inline, counted as
  ``fault.media.upload`` and logged once; the store then rests ``RETRY_AFTER_S`` seconds (blobs inline, counted
  ``media.inline_resting``) before it tries again, so a broken store costs a call nothing but a check;
* with content capture off nothing is recorded, so nothing is uploaded.

The source's blobs are stored when the span is written, on the calling thread (the :class:`~spanfold.content.
runtime.Runtime`'s ``media``, applied by :mod:`spanfold.semconv.parts`): the span, and so every exporter and the
flat trace, carries the uri. Other producers' spans (folded in process, by ``spanfold serve``, by a
``FoldingSpanExporter``) are stored by the folding worker before they are folded (:meth:`MediaStore.attributes`):
their blob parts and ``data:`` URLs become uris in the trace files; the spans they export themselves keep theirs.
"""

from __future__ import annotations

import binascii
import hashlib
import os
import re
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote, urlsplit

from spanfold import counters
from spanfold.codecs import jsonio

if TYPE_CHECKING:
    from spanfold.config import Config

#: Blobs smaller than this (decoded bytes) stay inline unless the option says otherwise.
DEFAULT_MIN_BYTES: Final = 16 * 1024
#: Seconds a store that failed rests (blobs stay inline) before it tries again.
RETRY_AFTER_S: Final = 30.0
#: Names of blobs known to be stored, kept per store (more: forgotten, and looked for again).
KNOWN_LIMIT: Final = 100_000
#: A stored blob's file name: the sha256 of its bytes and an extension.
NAME: Final = re.compile(r"[0-9a-f]{64}\.[a-z0-9]{1,10}")
#: The directory under the trace output a local store writes to by default.
DIRECTORY: Final = "media"

DIR_MODE: Final = 0o700
FILE_MODE: Final = 0o600
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)

_OFF: Final = frozenset({"", "0", "false", "no", "off", "none"})
_ON: Final = frozenset({"1", "true", "yes", "on"})
_KEYS: Final = ("url", "min_bytes")

#: MIME type -> extension, for the types models take (the platform's table, :mod:`mimetypes`, for the rest).
EXTENSIONS: Final = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/jpg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/heic": "heic",
    "image/heif": "heif",
    "image/bmp": "bmp",
    "image/tiff": "tiff",
    "image/svg+xml": "svg",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/ogg": "ogg",
    "audio/webm": "weba",
    "audio/flac": "flac",
    "audio/aac": "aac",
    "audio/mp4": "m4a",
    "audio/pcm": "pcm",
    "video/mp4": "mp4",
    "video/webm": "webm",
    "video/quicktime": "mov",
    "application/pdf": "pdf",
    "application/json": "json",
    "text/plain": "txt",
    "text/csv": "csv",
    "text/html": "html",
    "text/markdown": "md",
}
#: Leading bytes -> MIME type, for a blob sent without one (Ollama's images, a producer that left it out).
_MAGIC: Final = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"ID3", "audio/mpeg"),
)


class MediaError(ValueError):
    """A ``media`` option spanfold cannot use."""


def _shown(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


@dataclass(frozen=True, slots=True)
class Media:
    """Where blobs of at least ``min_bytes`` (decoded) go instead of the spans: ``url`` a local directory's path or
    any fsspec URL (``s3://bucket/prefix``, ``memory://media``); None: ``<output>/media``."""

    url: str | None = None
    min_bytes: int = DEFAULT_MIN_BYTES

    def __post_init__(self) -> None:
        url = self.url
        if isinstance(url, os.PathLike):
            url = os.fspath(url)
        if url is not None and (not isinstance(url, str) or not url.strip()):
            raise MediaError(f"url={_shown(self.url)}: expected a directory's path or an fsspec URL")
        if url is not None and not is_remote(url) and not url.startswith("file:"):
            url = os.path.abspath(os.path.expanduser(url))  # the directory as of init(), whatever the cwd later
        object.__setattr__(self, "url", url)
        size = self.min_bytes
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise MediaError(f"min_bytes={_shown(size)}: expected a whole number of bytes, 0 or more")

    @property
    def remote(self) -> bool:
        """Whether the blobs go through fsspec (any URL but a local path or ``file://``)."""
        return self.url is not None and is_remote(self.url)


def is_remote(url: str) -> bool:
    """Whether ``url`` names an fsspec filesystem other than the local one."""
    scheme = urlsplit(url).scheme.lower()
    return len(scheme) > 1 and scheme != "file"  # a one-letter scheme is a Windows drive


def parse(text: str) -> Media | None:
    """The option's text form (``SPANFOLD_MEDIA``): ``on`` (``<output>/media``), ``off``, a directory's path or an
    fsspec URL, or ``url=...,min_bytes=64KiB`` (``min_bytes`` alone keeps the default place). :class:`MediaError`
    saying what is wrong."""
    raw = text.strip()
    lowered = raw.lower()
    if lowered in _OFF:
        return None
    if lowered in _ON:
        return Media()
    if not lowered.startswith(tuple(f"{key}=" for key in _KEYS)):
        return Media(url=raw)
    values: dict[str, Any] = {}
    for piece in raw.split(","):
        if not piece.strip():
            continue
        key, sep, value = (s.strip() for s in piece.partition("="))
        key = key.lower()
        if not sep or key not in _KEYS:
            raise MediaError(f"{_shown(piece.strip())}: expected key=value, the keys being url and min_bytes")
        if key in values:
            raise MediaError(f"{key} is given twice")
        values[key] = value
    if "min_bytes" in values:
        values["min_bytes"] = _size(values["min_bytes"])
    return Media(**values)


def _size(text: str) -> int:
    if text.strip() == "0":
        return 0
    from spanfold.config import parse_size

    try:
        return parse_size(text)
    except ValueError:
        raise MediaError(f"min_bytes={_shown(text)}: expected a size in bytes, such as 16384 or 64KiB") from None


def option(value: Any) -> Media | None:
    """``init(media=...)``: True (``<output>/media``), False or None (off), a :class:`Media`, a directory's path, an
    fsspec URL or the text form (:func:`parse`)."""
    if value is None or value is False:
        return None
    if value is True:
        return Media()
    if isinstance(value, Media):
        return value
    if isinstance(value, os.PathLike):
        return Media(url=os.fspath(value))
    if isinstance(value, str):
        return parse(value)
    raise MediaError(
        f"{_shown(value)}: expected true, false, a spanfold.Media, a directory's path or an fsspec URL (s3://...)"
    )


def available(media: Media) -> str | None:
    """Why ``media`` cannot be used in this environment (an fsspec URL without fsspec installed), else None. Looks
    for fsspec without importing it (``init()`` imports nothing the program does not)."""
    if not media.remote:
        return None
    import importlib.util

    if importlib.util.find_spec("fsspec") is None:
        return f"{media.url}: fsspec URLs need fsspec and the URL's driver: pip install 'spanfold[media]'"
    return None


def extension(mime: str | None) -> str:
    """The file extension of a MIME type (``bin`` when none is known)."""
    if not mime:
        return "bin"
    base = mime.split(";", 1)[0].strip().lower()
    known = EXTENSIONS.get(base)
    if known is not None:
        return known
    import mimetypes  # the platform's table, read on first use

    guessed = mimetypes.guess_extension(base, strict=False)
    ext = (guessed or "").lstrip(".").lower()
    return ext if re.fullmatch(r"[a-z0-9]{1,10}", ext) else "bin"


def sniffed(data: bytes) -> str | None:
    """The MIME type a blob's first bytes show (PNG, JPEG, GIF, WebP, WAV, PDF, MP3), else None."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    return None


def decoded_size(data: str | bytes | bytearray) -> int:
    """The bytes a base64 text decodes to (about: whitespace counts), or a byte string's length."""
    if not isinstance(data, str):
        return len(data)
    n = len(data)
    return n * 3 // 4 - (2 if data.endswith("==") else 1 if data.endswith("=") else 0)


def _strict(text: str | bytes) -> bytes:
    if sys.version_info >= (3, 11):
        return binascii.a2b_base64(text, strict_mode=True)
    import base64  # 3.10: validated by a regular expression first (slower, the same answer)

    return base64.b64decode(text, validate=True)


def decoded(text: str) -> bytes | None:
    """The bytes of base64 text (whitespace between its lines allowed); None when it is not base64."""
    try:
        return _strict(text)
    except (binascii.Error, ValueError):
        pass
    try:
        return _strict(re.sub(r"\s+", "", text))
    except (binascii.Error, ValueError):
        return None


class _Local:
    """A local directory: written with the standard library, to a temporary name and linked to its own."""

    __slots__ = ("directory", "made")

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.made = False

    def exists(self, name: str) -> bool:
        return os.path.lexists(os.path.join(self.directory, name))

    def write(self, name: str, data: bytes) -> bool:
        """Store ``data`` as ``name``; False when another writer stored it first."""
        if not self.made:
            os.makedirs(self.directory, mode=DIR_MODE, exist_ok=True)
            self.made = True
        final = os.path.join(self.directory, name)
        temporary = os.path.join(self.directory, f".{name}.{os.urandom(8).hex()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, FILE_MODE)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            try:
                os.link(temporary, final)  # fails when the name exists: a racing writer's file is left as it is
            except FileExistsError:
                return False
            except OSError:  # a filesystem without hard links: an atomic rename (of the same bytes)
                os.replace(temporary, final)
            return True
        finally:
            if os.path.lexists(temporary):
                os.unlink(temporary)

    def uri(self, name: str) -> str:
        return Path(self.directory, name).as_uri()


class _Fsspec:
    """Any fsspec URL: the filesystem made on the first upload."""

    __slots__ = ("_fs", "_root", "url")

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self._fs: Any = None
        self._root = ""

    def _filesystem(self) -> tuple[Any, str]:
        if self._fs is None:
            import fsspec

            self._fs, self._root = fsspec.core.url_to_fs(self.url)
        return self._fs, self._root.rstrip("/")

    def exists(self, name: str) -> bool:
        fs, root = self._filesystem()
        return bool(fs.exists(f"{root}/{name}"))

    def write(self, name: str, data: bytes) -> bool:
        fs, root = self._filesystem()
        fs.pipe_file(f"{root}/{name}", data)  # one object written whole (an S3 PUT), or none
        return True

    def uri(self, name: str) -> str:
        return f"{self.url}/{name}"


class MediaStore:
    """Blobs of at least ``min_bytes`` stored once by content; safe to share between threads."""

    __slots__ = ("_backend", "_known", "_resting_until", "location", "min_bytes")

    def __init__(self, location: str, min_bytes: int = DEFAULT_MIN_BYTES) -> None:
        #: A local directory's absolute path, or an fsspec URL.
        self.location = location
        self.min_bytes = min_bytes
        self._backend: _Local | _Fsspec = _Fsspec(location) if is_remote(location) else _Local(_local_path(location))
        #: Names known to be stored (each add and clear is atomic: no lock for a forked child to inherit held).
        self._known: set[str] = set()
        self._resting_until = 0.0

    @property
    def directory(self) -> str | None:
        """The local directory blobs are written to (None for an fsspec URL)."""
        backend = self._backend
        return backend.directory if isinstance(backend, _Local) else None

    # --- one blob ------------------------------------------------------------------------------------------

    def stored(self, data: Any, mime: Any = None) -> tuple[str, str | None] | None:
        """Store a blob (base64 text, or bytes) of at least ``min_bytes``: its uri and MIME type (the one given, else
        the one its bytes show); None when it stays inline (small, not base64, or the store failed). Never raises."""
        if not isinstance(data, (str, bytes, bytearray)) or decoded_size(data) < self.min_bytes:
            return None
        if time.monotonic() < self._resting_until:
            counters.incr("media.inline_resting")
            return None
        try:
            return self._stored(data, mime)
        except Exception as exc:  # the blob stays inline; the store rests before it tries again
            self._resting_until = time.monotonic() + RETRY_AFTER_S
            counters.fault("media.upload", exc, f"blobs stay inline in the spans ({self.location})")
            return None

    def _stored(self, data: str | bytes | bytearray, mime: Any) -> tuple[str, str | None] | None:
        raw = bytes(data) if not isinstance(data, str) else decoded(data)
        if raw is None:
            counters.incr("media.not_base64")
            return None
        if len(raw) < self.min_bytes:
            return None
        kind = mime if isinstance(mime, str) and mime else sniffed(raw)
        name = f"{hashlib.sha256(raw).hexdigest()}.{extension(kind)}"
        backend = self._backend
        if name in self._known:
            counters.incr("media.reused")
        elif backend.exists(name) or not backend.write(name, raw):
            counters.incr("media.reused")
            self._remember(name)
        else:
            counters.incr("media.stored")
            self._remember(name)
        return backend.uri(name), kind

    def _remember(self, name: str) -> None:
        known = self._known
        if len(known) >= KNOWN_LIMIT:
            known.clear()
        known.add(name)

    def part(self, part: Mapping[str, Any]) -> Mapping[str, Any]:
        """A blob part as a span records it: a uri part when its content was stored, else the very part."""
        found = self.stored(part.get("content"), part.get("mime_type"))
        if found is None:
            return part
        uri, mime = found
        out: dict[str, Any] = {"type": "uri", "modality": part.get("modality")}
        if mime is not None:
            out["mime_type"] = mime
        out["uri"] = uri
        return out

    def data_url(self, url: str) -> str:
        """A ``data:<mime>;base64,`` URL as stored: its uri, else the very URL."""
        header, sep, data = url.partition(";base64,")
        if not sep or not header.startswith("data:"):
            return url
        found = self.stored(data, header[5:] or None)
        return url if found is None else found[0]

    # --- spans of other producers ------------------------------------------------------------------------

    @property
    def text_floor(self) -> int:
        """The fewest characters of span attribute text that can hold a blob this store takes."""
        return max(self.min_bytes * 4 // 3, 1)

    def attributes(self, attrs: Mapping[str, Any]) -> dict[str, Any] | None:
        """A span's (or a span event's) attributes with each blob stored: blob parts in message JSON (the
        conventions' and their older shapes), ``data:`` URLs whole (OpenInference's image URL) or inside JSON
        (OpenLLMetry's content); None when nothing changed. Only text long enough to hold a blob is looked at, and
        only JSON that holds a blob part or a base64 URL is parsed."""
        floor = self.text_floor
        out: dict[str, Any] | None = None
        for key, value in attrs.items():
            if type(value) is not str or len(value) < floor:
                continue
            new = self._text(value)
            if new is not value:
                if out is None:
                    out = dict(attrs)
                out[key] = new
        return out

    def _text(self, value: str) -> str:
        if value.startswith("data:"):
            return self.data_url(value)
        if value[:1] not in ("[", "{") or ('"blob"' not in value and ";base64," not in value):
            return value
        try:
            parsed = jsonio.loads(value)
        except ValueError:
            return value
        new = self._walk(parsed)
        return value if new is parsed else jsonio.dumps(new)

    def _walk(self, value: Any) -> Any:
        if isinstance(value, dict):
            if value.get("type") == "blob" and isinstance(value.get("content"), str):
                return self.part(value)
            changed: dict[str, Any] | None = None
            for key, item in value.items():
                new = self._walk(item)
                if new is not item:
                    if changed is None:
                        changed = dict(value)
                    changed[key] = new
            return value if changed is None else changed
        if isinstance(value, list):
            items: list[Any] | None = None
            for i, item in enumerate(value):
                new = self._walk(item)
                if new is not item:
                    if items is None:
                        items = list(value)
                    items[i] = new
            return value if items is None else items
        if isinstance(value, str) and value.startswith("data:") and len(value) >= self.text_floor:
            return self.data_url(value)
        return value


def _local_path(location: str) -> str:
    if location.startswith("file:"):
        return unquote(urlsplit(location).path)
    return location


_stores: dict[tuple[Media, str], MediaStore] = {}
_stores_lock = threading.Lock()


def _fresh_lock_in_child() -> None:
    """A forked child gets a new lock: a parent thread may have held this one at the fork."""
    global _stores_lock
    _stores_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_lock_in_child)


def store(media: Media | None, output: str) -> MediaStore | None:
    """The store of ``media`` (None: off), its default place under the trace directory ``output``; one per place,
    shared by the calling threads and the folding worker (one memory of what is stored)."""
    if media is None:
        return None
    location = media.url if media.url is not None else os.path.join(os.path.abspath(output), DIRECTORY)
    key = (media, location)
    with _stores_lock:
        found = _stores.get(key)
        if found is None:
            found = _stores[key] = MediaStore(location, media.min_bytes)
        return found


def forget() -> None:
    """Drop every store (``shutdown()``): a later ``init()`` starts with no memory of what was stored, and no rest."""
    with _stores_lock:
        _stores.clear()


def for_config(cfg: Config) -> MediaStore | None:
    """The store of a configuration's ``media`` option; None when it is off or content capture is off (nothing is
    recorded, so nothing is stored)."""
    from spanfold.config import NO_CONTENT

    if cfg.media is None or cfg.capture_content == NO_CONTENT:
        return None
    return store(cfg.media, cfg.output)
