"""The runs ``spanfold ui`` lists, one per run however many files hold it, each under a permalink that does not
change when other files appear.

A run's permalink is its trace id. The same trace id in several files is one run written in several formats (the
copies ``spanfold convert`` writes beside the traces): the list shows it once, from the file that says the most (an
Invariant trace or the spans it was folded from, before an AgentV file, a transcript, a compact spec, a summary),
and the run's page names the copies. Within one file, a trace id written twice is two records (a run written before
it was done, then again): the later is the run, the earlier keeps its place-in-file id. A record without a trace id
(a compact spec) is a copy when a run of the same directory, in another file, has the same first question, tool
calls, events and steps; else it is a run of its own under its place in its file (``FILE:LINE``).
"""

from __future__ import annotations

import os
from bisect import bisect_left
from dataclasses import dataclass, field

from spanfold.ui.index import Row

#: The fewest characters of a trace id a permalink may name the run by (``spanfold summary`` prints 16).
PREFIX_CHARS = 8

#: How much a record of each shape says of its run (lower says more); others rank as ``agentv-cli``.
SHAPE_RANK = {
    "invariant": 0,
    "otlp-json": 0,
    "invariant-document": 1,
    "invariant-object": 1,
    "agentv": 2,
    "agentv-transcript": 3,
    "agentv-cli": 3,
    "compact": 4,
    "agentv-summary": 5,
}


def _rank(row: Row) -> tuple[int, int]:
    return (SHAPE_RANK.get(row.shape, 3), -row.seq)


def _content(row: Row) -> tuple[object, ...]:
    """What a copy without a trace id shares with its run."""
    calls = tuple(sorted(row.summary.tool_calls_by_name.items()))
    return (row.preview, calls, row.summary.event_count, row.steps)


@dataclass(slots=True)
class Catalog:
    """The rows of one index generation: those listed, every row by its permalink, each run's copies."""

    generation: int = -1
    rows: list[Row] = field(default_factory=list)  # every record, copies too
    shown: list[Row] = field(default_factory=list)
    by_id: dict[str, Row] = field(default_factory=dict)
    ids: dict[int, str] = field(default_factory=dict)  # id(row) -> its permalink
    copies: dict[int, list[Row]] = field(default_factory=dict)  # id(listed row) -> the run's other records
    _sorted_ids: list[str] | None = None  # the runs' trace ids in order, made on the first look-up by a prefix

    @classmethod
    def of(cls, generation: int, rows: list[Row]) -> Catalog:
        catalog = cls(generation, rows)
        for row in rows:
            catalog.by_id[row.id] = row
        by_trace: dict[str, list[Row]] = {}
        loose: list[Row] = []
        for row in rows:
            if row.meta.trace_id:
                by_trace.setdefault(row.meta.trace_id, []).append(row)
            else:
                loose.append(row)
        hidden: set[int] = set()
        best_of: list[Row] = []
        for trace_id, group in by_trace.items():
            best = group[0] if len(group) == 1 else min(group, key=_rank)
            catalog._name(best, trace_id)
            best_of.append(best)
            for row in group:
                if row is best:
                    continue
                if row.file != best.file:
                    hidden.add(id(row))
                    catalog.copies.setdefault(id(best), []).append(row)
        if loose:  # (directory, content) -> a listed run with a trace id
            runs: dict[tuple[str, tuple[object, ...]], Row] = {}
            for best in best_of:
                runs.setdefault((os.path.dirname(best.file), _content(best)), best)
            for row in loose:
                run = runs.get((os.path.dirname(row.file), _content(row)))
                if run is not None and run.file != row.file:
                    hidden.add(id(row))
                    catalog.copies.setdefault(id(run), []).append(row)
        catalog.shown = [row for row in rows if id(row) not in hidden]
        return catalog

    def _name(self, row: Row, run_id: str) -> None:
        self.ids[id(row)] = run_id
        self.by_id.setdefault(run_id, row)

    def id_of(self, row: Row) -> str:
        """The row's permalink: its trace id when it is the run listed under it, else its place in its file."""
        return self.ids.get(id(row), row.id)

    def resolve(self, run_id: str) -> Row | None:
        """The row a permalink names: a trace id, a record's place in its file, or the start of exactly one run's
        trace id (:data:`PREFIX_CHARS` characters or more, any case: what ``spanfold summary`` prints)."""
        found = self.by_id.get(run_id)
        if found is not None or len(run_id) < PREFIX_CHARS:
            return found
        prefix = run_id.lower()
        if self._sorted_ids is None:
            self._sorted_ids = sorted(self.ids.values())
        ids = self._sorted_ids
        at = bisect_left(ids, prefix)
        if at >= len(ids) or not ids[at].startswith(prefix):
            return None
        if at + 1 < len(ids) and ids[at + 1].startswith(prefix):
            return None  # two runs start so: the prefix names neither
        return self.by_id.get(ids[at])

    def copies_of(self, row: Row) -> list[Row]:
        return self.copies.get(id(row), [])
