"""The media store itself: names by content, one file however many writers race for it, the existence check before a
write, what stays inline, and the option's forms (``init(media=...)``, ``spanfold.Media``, ``SPANFOLD_MEDIA``)."""

from __future__ import annotations

import os
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import fsspec
import pytest

import spanfold
from spanfold import config, counters
from spanfold.content import media, runtime
from spanfold.content.media import Media, MediaStore

from .conftest import BIG_PNG, PIXEL, WAV, b64, files, name_of


def test_writers_racing_for_one_blob_write_one_file(tmp_path: Path) -> None:
    """Eight stores (as eight processes would have) store the same blob at once: one file, the exact bytes, no
    temporary file left, the same uri for all."""
    directory = tmp_path / "media"
    data = b64(BIG_PNG[: 1024 * 1024])
    stores = [MediaStore(str(directory), 0) for _ in range(8)]
    start = threading.Barrier(len(stores))
    uris: list[Any] = [None] * len(stores)

    def store(k: int) -> None:
        start.wait()
        uris[k] = stores[k].stored(data, "image/png")

    threads = [threading.Thread(target=store, args=(k,)) for k in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    name = name_of(BIG_PNG[: 1024 * 1024], "png")
    assert files(directory) == [name]
    assert (directory / name).read_bytes() == BIG_PNG[: 1024 * 1024]
    assert set(uris) == {((directory / name).as_uri(), "image/png")}
    stats = counters.snapshot()
    assert (stats.get("media.stored"), stats.get("media.reused")) == (1, 7)


def test_a_blob_already_stored_is_not_written_again(tmp_path: Path) -> None:
    directory = tmp_path / "media"
    first = MediaStore(str(directory), 0)
    assert first.stored(b64(WAV), "audio/wav") is not None
    before = (directory / name_of(WAV, "wav")).stat()
    later = MediaStore(str(directory), 0)  # a later process: it looks before it writes
    assert later.stored(b64(WAV), "audio/wav") == ((directory / name_of(WAV, "wav")).as_uri(), "audio/wav")
    after = (directory / name_of(WAV, "wav")).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert counters.snapshot().get("media.reused") == 1


def test_an_fsspec_store_looks_before_it_writes() -> None:
    url = f"memory://spanfold-exists-{uuid.uuid4().hex}"
    memory = fsspec.filesystem("memory")
    try:
        assert MediaStore(url, 0).stored(b64(WAV), "audio/wav") == (f"{url}/{name_of(WAV, 'wav')}", "audio/wav")
        before = memory.info(f"{url}/{name_of(WAV, 'wav')}")["created"]
        assert MediaStore(url, 0).stored(b64(WAV), "audio/wav") is not None  # a later process's store
        assert memory.info(f"{url}/{name_of(WAV, 'wav')}")["created"] == before
        assert counters.snapshot().get("media.reused") == 1
    finally:
        memory.rm(url.removeprefix("memory://"), recursive=True)


def test_what_stays_inline(tmp_path: Path) -> None:
    store = MediaStore(str(tmp_path / "media"), 1024)
    assert store.stored(b64(PIXEL), "image/png") is None  # under min_bytes
    assert store.stored("not base64 at all, but long enough to be looked at" * 40, "image/png") is None
    assert store.stored(None) is None and store.stored(12345) is None
    part = {"type": "blob", "modality": "image", "mime_type": "image/png", "content": b64(PIXEL)}
    assert store.part(part) is part
    assert files(tmp_path / "media") == []
    assert counters.snapshot().get("media.not_base64") == 1
    wrapped = "\n".join(b64(WAV)[i : i + 76] for i in range(0, len(b64(WAV)), 76))  # MIME's lines: still base64
    assert store.stored(wrapped, "audio/wav") == ((tmp_path / "media" / name_of(WAV, "wav")).as_uri(), "audio/wav")


def test_a_blob_without_a_type_is_named_by_its_bytes(tmp_path: Path) -> None:
    store = MediaStore(str(tmp_path / "media"), 0)
    part = store.part({"type": "blob", "modality": "image", "mime_type": None, "content": b64(BIG_PNG[:4096])})
    assert part["mime_type"] == "image/png" and part["uri"].endswith(".png")
    assert store.part({"type": "blob", "modality": "document", "content": b64(b"\x00\x01" * 100)})["uri"].endswith(
        ".bin"
    )


def test_other_producers_attributes_get_uris(tmp_path: Path) -> None:
    """What the folding worker does to a span another instrumentation made: blob parts in message JSON and data: URLs
    (whole, or inside JSON) become uris; the rest of the text is left as it was; nothing changed gives None."""
    store = MediaStore(str(tmp_path / "media"), 1024)
    image = b64(BIG_PNG[:4096])
    uri = (tmp_path / "media" / name_of(BIG_PNG[:4096], "png")).as_uri()
    blob = {"type": "blob", "modality": "image", "mime_type": "image/png", "content": image}
    attrs = {
        "gen_ai.input.messages": media.jsonio.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": "hi"}, blob]}]
        ),
        "llm.input_messages.0.message.contents.1.message_content.image.image.url": f"data:image/png;base64,{image}",
        "input.value": media.jsonio.dumps(
            {"messages": [{"content": [{"image_url": {"url": f"data:image/png;base64,{image}"}}]}]}
        ),
        "gen_ai.request.model": "gpt-4o",
        "long text": "x" * 10_000,
    }
    out = store.attributes(attrs)
    assert out is not None
    assert media.jsonio.loads(out["gen_ai.input.messages"]) == [
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "hi"},
                {"type": "uri", "modality": "image", "mime_type": "image/png", "uri": uri},
            ],
        }
    ]
    assert out["llm.input_messages.0.message.contents.1.message_content.image.image.url"] == uri
    assert media.jsonio.loads(out["input.value"]) == {"messages": [{"content": [{"image_url": {"url": uri}}]}]}
    assert out["long text"] is attrs["long text"] and out["gen_ai.request.model"] == "gpt-4o"
    assert store.attributes({"gen_ai.request.model": "gpt-4o", "long text": "x" * 10_000}) is None
    assert files(tmp_path / "media") == [name_of(BIG_PNG[:4096], "png")]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (True, Media()),
        ("on", Media()),
        ("off", None),
        (False, None),
        ("s3://bucket/prefix", Media(url="s3://bucket/prefix")),
        ("url=memory://m,min_bytes=64KiB", Media(url="memory://m", min_bytes=64 * 1024)),
        ("min_bytes=0", Media(min_bytes=0)),
        (Media(url="gs://b", min_bytes=10), Media(url="gs://b", min_bytes=10)),
    ],
)
def test_the_option_reads_every_form(given: Any, expected: Media | None) -> None:
    assert config.load({"media": given}, environ={}).media == expected
    if isinstance(given, str):
        assert config.load({}, environ={"SPANFOLD_MEDIA": given}).media == expected


def test_a_relative_directory_is_made_absolute_when_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert config.load({"media": "blobs"}, environ={}).media == Media(url=str(tmp_path / "blobs"))
    assert config.load({"media": tmp_path / "b"}, environ={}).media == Media(url=str(tmp_path / "b"))


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (3, "media: 3: expected true, false, a spanfold.Media"),
        ("min_bytes=lots", "media: min_bytes='lots': expected a size in bytes"),
        ("url=a,colour=red", "media: 'colour=red': expected key=value"),
        ("url=a,url=b", "media: url is given twice"),
    ],
)
def test_a_bad_option_is_a_clear_error(given: Any, message: str) -> None:
    with pytest.raises(config.ConfigError, match=message.replace("(", r"\(")):
        config.load({"media": given}, environ={})
    with pytest.raises(ValueError, match="min_bytes=-1"):
        Media(min_bytes=-1)


def test_spanfold_media_is_the_option_s_type() -> None:
    assert spanfold.Media is Media
    assert "Media" in spanfold.__all__


def test_an_fsspec_url_without_fsspec_is_said_and_left_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _global_provider: Any, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "fsspec", None)  # as if not installed
    handle = spanfold.init(output=str(tmp_path), media="s3://bucket/prefix")
    try:
        assert handle.config.media is None and runtime.active().media is None
        assert counters.snapshot().get("media_unavailable") == 1
        assert "pip install 'spanfold[media]'" in caplog.text
    finally:
        spanfold.shutdown()


def test_init_gives_the_calls_and_the_worker_one_store(tmp_path: Path, _global_provider: Any) -> None:
    handle = spanfold.init(output=str(tmp_path), media=Media(min_bytes=1))
    try:
        store = runtime.active().media
        assert store is not None and store.directory == str(tmp_path / "media")
        assert handle.processor is not None and handle.processor._fold._media is store
    finally:
        spanfold.shutdown()
    assert runtime.active().media is None
    assert os.path.isdir(tmp_path / "media") is False  # nothing stored: nothing made
