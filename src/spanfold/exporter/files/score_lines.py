"""Appending one score line to a directory's scores sidecar (:data:`spanfold.trace.scores.SCORES_FILE`).

One ``os.write`` of the whole line on an ``O_APPEND`` descriptor: the kernel puts each write at the end of the file
as it is then, so lines from threads and processes appending at once never interleave, with no lock. The file is
opened as the trace writers open theirs (:mod:`.safe_files`): relative to the directory's descriptor, never through
a symbolic link, only a regular file of this user's that no one else may read or write (created 0600, the directory
0700).

A line a crashed writer left without its newline would swallow the next one: when the file does not end with a
newline the line is written after one, so the torn part stays a line of its own (a blank line, when a concurrent
append ended it meanwhile: readers skip those).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from spanfold.exporter.files.safe_files import open_dir, open_file

_FLAGS: Final = os.O_RDWR | os.O_APPEND | os.O_CREAT


def append_line(directory: Path, name: str, line: bytes) -> None:
    """Append ``line`` (one JSON object, without its newline) to ``directory/name`` in one write; ``OSError`` (an
    :class:`~.safe_files.UnsafePath` for a path refused) when it cannot be, or was only partly written."""
    dir_fd = open_dir(directory)
    try:
        fd = open_file(dir_fd, directory, name, _FLAGS)
    finally:
        os.close(dir_fd)
    try:
        size = os.fstat(fd).st_size
        torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
        data = (b"\n" if torn else b"") + line + b"\n"
        written = os.write(fd, data)
        if written != len(data):  # a full disk: the part written is a line readers report, never a score
            raise OSError(f"{directory / name}: only {written} of {len(data)} bytes written (is the disk full?)")
    finally:
        os.close(fd)
