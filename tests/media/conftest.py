"""What the media tests share: blobs of known bytes, sent as base64, and where the store put them."""

from __future__ import annotations

import base64
import hashlib
import io
import random
import wave
from pathlib import Path

import pytest

#: A PNG's signature then 5 MiB of seeded noise: the size of a photo a user sends (no API decodes it here).
BIG_PNG = b"\x89PNG\r\n\x1a\n" + random.Random(50).randbytes(5 * 1024 * 1024)
BIG_PNG_B64 = base64.b64encode(BIG_PNG).decode("ascii")
#: A real 1x1 PNG (a browser draws it) and a WAV header with 20 KiB of silence-like noise.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
WAV = b"RIFF\x24\x50\x00\x00WAVEfmt " + random.Random(3).randbytes(20 * 1024)


def silence(seconds: float = 1.0) -> bytes:
    """A real WAV file (8 kHz, 16-bit mono silence) a browser plays."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x00" * int(8000 * seconds))
    return out.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def name_of(data: bytes, extension: str) -> str:
    """The file name the store gives ``data``: the sha256 of its bytes and the extension of its type."""
    return f"{hashlib.sha256(data).hexdigest()}.{extension}"


def files(directory: Path) -> list[str]:
    """Every name in ``directory`` (temporary files included), sorted; [] when it does not exist."""
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


@pytest.fixture
def traces_dir(tmp_path: Path) -> Path:
    return tmp_path / "traces"
