"""Fixtures shared by every test directory."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

RECORDINGS = Path(__file__).resolve().parents[2] / "shared" / "recordings"
if not RECORDINGS.is_dir():  # a checkout laid out differently: the copy shipped with the tests
    RECORDINGS = Path(__file__).resolve().parent / "recordings"


def _load_recording(name: str) -> list[dict[str, Any]]:
    data = json.loads((RECORDINGS / name).read_text())
    interactions: list[dict[str, Any]] = data["interactions"]
    return interactions


@pytest.fixture
def load_recording() -> Callable[[str], list[dict[str, Any]]]:
    """The interactions of a recording in ../shared/recordings (request, response: status, content_type, body)."""
    return _load_recording


@pytest.fixture(autouse=True)
def _reset_stats() -> Iterator[None]:
    from spanfold import counters

    counters.reset()
    yield
