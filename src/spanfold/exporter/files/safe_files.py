"""Opening the output directory and its files so that nobody else can steer where traces go.

A writer never writes through a symbolic link planted in the output directory, never into a file or directory
another user owns, never into a file others may read or write (wider than 0600), and never into anything but a
regular file with a single name. Every check runs on the opened descriptor (``fstat``), and files are opened relative
to the directory's descriptor with ``O_NOFOLLOW``: nothing can be swapped between the check and the write.

The configured output path itself may be a symbolic link (the user's choice): it is followed, and the directory it
leads to must be the user's own.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

DIR_MODE: Final = 0o700
FILE_MODE: Final = 0o600
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
#: A FIFO planted under a trace file's name must not block the writer (ignored for regular files).
_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)


class UnsafePath(OSError):
    """A path spanfold refuses to write through; ``strerror`` says why, ``filename`` is the path."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(errno.EPERM, reason, os.fspath(path))


def open_dir(directory: Path) -> int:
    """A descriptor of ``directory``, created (0700) when missing; raises :class:`UnsafePath` when another user
    owns it."""
    flags = os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC
    try:
        fd = os.open(directory, flags)
    except FileNotFoundError:
        os.makedirs(directory, mode=DIR_MODE, exist_ok=True)
        fd = os.open(directory, flags)
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid():
            raise UnsafePath(directory, _not_ours("the directory", st.st_uid))
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(dir_fd: int, directory: Path, name: str, flags: int) -> int:
    """Open ``name`` in the directory ``dir_fd`` (created 0600 with ``O_CREAT``) without following a symbolic link;
    raises :class:`UnsafePath` unless it is a regular file with one name, owned by this process's user, that no one
    else may read or write."""
    try:
        fd = os.open(name, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, FILE_MODE, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(directory / name, "it is a symbolic link") from None
        raise
    try:
        problem = file_problem(os.fstat(fd))
        if problem is not None:
            raise UnsafePath(directory / name, problem)
    except BaseException:
        os.close(fd)
        raise
    return fd


def file_problem(st: os.stat_result) -> str | None:
    """Why an open file with this status is not safe to write traces to (see :func:`open_file`); None when it is."""
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file"
    if st.st_uid != os.geteuid():
        return _not_ours("the file", st.st_uid)
    if st.st_mode & 0o077:
        return f"its permissions {stat.S_IMODE(st.st_mode):04o} are wider than 0600"
    if st.st_nlink != 1:
        return f"it has {st.st_nlink} hard links"
    return None


def _not_ours(what: str, uid: int) -> str:
    return f"{what} belongs to uid {uid}, not to this process's user (uid {os.geteuid()})"
