"""Small text helpers for reasons and tables: cut text to a width, count with a noun."""

from __future__ import annotations


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, its start kept and the cut marked ``...``."""
    return text if len(text) <= width else text[: width - 3] + "..."


def clip_left(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, its end kept (long paths keep their file name and line)."""
    return text if len(text) <= width else "..." + text[len(text) - width + 3 :]


def plural(n: int, word: str) -> str:
    """``1 call``, ``2 calls``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
