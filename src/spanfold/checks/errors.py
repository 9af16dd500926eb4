"""Errors raised for bad check specifications and unreadable traces."""

from __future__ import annotations

from collections.abc import Sequence

#: Where a value sits inside a spec: keys and list indexes from the top, e.g. ``("checks", 0, "mode")``.
SpecPath = tuple[str | int, ...]


def format_path(path: Sequence[str | int]) -> str:
    """``("checks", 0, "mode")`` -> ``checks[0].mode``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


class SpecError(ValueError):
    """A check specification is invalid.

    ``problem`` says what is wrong, naming the field (``mode must be one of ...``); ``path`` is where the
    value sits; ``file`` and ``line`` are set when the spec came from a file, and then ``str()`` reads
    ``FILE:LINE: problem``.
    """

    def __init__(self, problem: str, path: SpecPath = (), *, file: str | None = None, line: int | None = None):
        self.problem = problem
        self.path = tuple(path)
        self.file = file
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.file is not None:
            where = self.file if self.line is None else f"{self.file}:{self.line}"
            return f"{where}: {self.problem}"
        parent = format_path(self.path[:-1]) if self.path and isinstance(self.path[-1], str) else format_path(self.path)
        return f"{parent}: {self.problem}" if parent else self.problem

    def located(self, file: str, line: int | None) -> SpecError:
        """The same problem, placed in ``file`` at ``line``."""
        return SpecError(self.problem, self.path, file=file, line=line)


class TraceFormatError(ValueError):
    """A trace is not an Invariant event list (nor an AgentV trace document)."""
