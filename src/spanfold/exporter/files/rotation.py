"""Rotated trace files: which file a :class:`~spanfold.exporter.files.writers.JsonlWriter` appends to when
``rotate_bytes``
or ``rotate_when`` is set, and which old ones go (``keep_files``, ``keep_days``).

With rotation on, traces go to numbered files instead of one ``traces.jsonl``: ``<stem>.<day>.<n>.jsonl``
(``traces.2025-06-01.000003.jsonl``, its metadata beside it in ``traces.2025-06-01.000003.meta.jsonl``), the day it
was started and a number one past the newest file's. A file is never renamed: a reader that has read part of one
(``spanfold ui``, ``spanfold serve --ui``) goes on from where it was, and a new file is one more file in the
directory; names sort in the order the files were started. The newest file is the one written to; a new one is
started before the next trace would take the newest pair (events and metadata together) past ``rotate_bytes`` (a
trace longer than that goes whole into a pair of its own: lines are never split), and at the first write of a new
day with ``rotate_when="midnight"``.

Writers of several processes decide under one ``flock`` of ``.<events file>.lock`` in the directory: which file is
the newest, whether to start another, and the appends themselves (:mod:`.writers`). Before a writer leaves a file
for a new one it repairs it as it repairs any file it appends to (a torn last line cut, a lost metadata line
restored), so that every trace's events line and its metadata line are in the same numbered pair. When a file is
started, the oldest beyond ``keep_files`` and those last written more than ``keep_days`` days ago are deleted, each
events file with its metadata file.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from dataclasses import dataclass
from typing import Final

from spanfold import counters
from spanfold.config import Config

_SEGMENT: Final = re.compile(r"(?P<stem>.+)\.(?P<day>\d{4}-\d{2}-\d{2})\.(?P<n>\d{6,})\.jsonl")
_DAY_S: Final = 86400


@dataclass(frozen=True, slots=True)
class Rotation:
    """When to start a new trace file, and which old ones to keep (None: no bound)."""

    max_bytes: int | None = None
    when: str | None = None
    keep_files: int | None = None
    keep_days: int | None = None

    @classmethod
    def of(cls, config: Config) -> Rotation | None:
        """The rotation ``config`` asks for; None when it asks for none."""
        if config.rotate_bytes is None and config.rotate_when is None:
            return None
        return cls(config.rotate_bytes, config.rotate_when, config.keep_files, config.keep_days)


@dataclass(frozen=True, slots=True)
class Segment:
    """One numbered trace file (``name``) of a stem."""

    n: int
    day: str
    name: str

    @property
    def meta_name(self) -> str:
        return meta_name(self.name)


def meta_name(events: str) -> str:
    """The metadata file beside the events file ``events`` (``x.jsonl`` -> ``x.meta.jsonl``)."""
    return events[: -len(".jsonl")] + ".meta.jsonl"


def day_of(now: float) -> str:
    """The local day of ``now`` (seconds since the epoch), as segment names write it."""
    return time.strftime("%Y-%m-%d", time.localtime(now))


def segment(stem: str, day: str, n: int) -> Segment:
    return Segment(n, day, f"{stem}.{day}.{n:06d}.jsonl")


def segments(dir_fd: int, stem: str) -> list[Segment]:
    """The numbered files of ``stem`` in the directory, oldest first."""
    found = []
    for name in os.listdir(dir_fd):
        match = _SEGMENT.fullmatch(name)
        if match is not None and match["stem"] == stem:
            found.append(Segment(int(match["n"]), match["day"], name))
    return sorted(found, key=lambda s: s.n)


def due(rotation: Rotation, newest: Segment, size: int, adding: int, now: float) -> bool:
    """Whether a new file starts before ``adding`` bytes (a trace's lines) go after the ``size`` bytes of
    ``newest`` (its events and metadata files together)."""
    if rotation.when == "midnight" and newest.day != day_of(now):
        return True
    return rotation.max_bytes is not None and size > 0 and size + adding > rotation.max_bytes


def fitting(rotation: Rotation, size: int, lengths: list[int]) -> int:
    """How many of the next traces (the ``lengths`` of their lines) go into a pair of files of ``size`` bytes: as
    many as stay within ``rotate_bytes``, and at least one."""
    if rotation.max_bytes is None:
        return len(lengths)
    n = 0
    for length in lengths:
        if n and size + length > rotation.max_bytes:
            break
        size += length
        n += 1
    return max(n, 1)


def prune(dir_fd: int, stem: str, rotation: Rotation, now: float) -> None:
    """Delete the files beyond ``keep_files`` (oldest first) and those last written more than ``keep_days`` days
    ago; never the newest. Counted ``writer.files_removed``."""
    if rotation.keep_files is None and rotation.keep_days is None:
        return
    old = segments(dir_fd, stem)[:-1]
    doomed = old[: max(0, len(old) + 1 - rotation.keep_files)] if rotation.keep_files is not None else []
    if rotation.keep_days is not None:
        horizon = now - rotation.keep_days * _DAY_S
        for seg in old[len(doomed) :]:
            try:
                if os.stat(seg.name, dir_fd=dir_fd, follow_symlinks=False).st_mtime < horizon:
                    doomed.append(seg)
            except FileNotFoundError:
                continue
    for seg in doomed:
        for name in (seg.name, seg.meta_name):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=dir_fd)
        counters.incr("writer.files_removed")
