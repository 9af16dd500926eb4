"""``--trace N|ID``: pick traces from a stream of records, keeping memory bounded.

``N`` counts traces from 1 (``-1`` is the last: only the last ``|N|`` are kept while reading); anything else
is a trace id, or the start of one. A spec of eight characters or more is always an id: a trace id prefix can be
all digits (``12345678...``), and no file holds ten million traces.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import click

from spanfold.trace.read import Record

TRACE_HELP = "Only trace N (from 1; -1 is the last) or the trace whose id is (or starts with) ID."


_NUMBER = re.compile(r"[+-]?[0-9]{1,7}")


def _number(spec: str) -> int | None:
    """The trace number ``spec`` names, or None when it names a trace id."""
    return int(spec) if _NUMBER.fullmatch(spec.strip()) else None


@dataclass(slots=True)
class Picker:
    """Filters the trace records of a stream by ``spec``; :attr:`seen` counts every trace read."""

    spec: str | None
    seen: int = 0
    picked: int = 0

    def __post_init__(self) -> None:
        if self.spec is not None and (self.spec.strip() == "" or _number(self.spec) == 0):
            raise click.BadParameter("give a trace number (from 1; -1 is the last) or a trace id", param_hint="--trace")

    def __call__(self, records: Iterable[Record]) -> Iterator[Record]:
        for record in self._select(r for r in records if r.is_trace):
            self.picked += 1
            yield record

    def _select(self, traces: Iterator[Record]) -> Iterator[Record]:
        number = _number(self.spec) if self.spec is not None else None
        if self.spec is None:
            yield from self._count(traces)
        elif number is not None and number > 0:
            for record in self._count(traces):
                if self.seen == number:
                    yield record
                    return  # no need to read on
        elif number is not None:
            last = deque(self._count(traces), maxlen=-number)
            if len(last) == -number:
                yield last[0]
        else:
            for record in self._count(traces):
                trace_id = record.trace.meta.trace_id if record.trace is not None else ""
                if trace_id and trace_id.startswith(self.spec):
                    yield record

    def _count(self, records: Iterable[Record]) -> Iterator[Record]:
        for record in records:
            self.seen += 1
            yield record

    def missing(self, name: str) -> str | None:
        """The problem to report when ``--trace`` matched nothing (None when it did, or was not given)."""
        if self.spec is None or self.picked:
            return None
        return f"{name}: --trace {self.spec}: no such trace (the file holds {self.seen})"
