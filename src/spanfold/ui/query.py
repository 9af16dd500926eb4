"""The run list's filters, sorting and paging (pure functions over index rows)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from spanfold.ui.index import Row
from spanfold.ui.steps import trace_cost

#: Sortable columns and the key each sorts by (missing values sort as the smallest).
SORT_KEYS: dict[str, Callable[[Row], Any]] = {
    "time": lambda r: (r.meta.start or "", r.seq),
    "name": lambda r: ((r.meta.name or "").lower(), r.seq),
    "models": lambda r: (",".join(r.meta.models), r.seq),
    "steps": lambda r: (r.steps, r.seq),
    "calls": lambda r: (sum(r.summary.tool_calls_by_name.values()), r.seq),
    "errors": lambda r: (r.summary.error_count, r.seq),
    "tokens_in": lambda r: (r.meta.usage.input_tokens, r.seq),
    "tokens_out": lambda r: (r.meta.usage.output_tokens, r.seq),
    "cost": lambda r: ((trace_cost(r.meta.extra) or {"amount": -1.0})["amount"], r.seq),
    "duration": lambda r: (r.meta.duration_ms if r.meta.duration_ms is not None else -1.0, r.seq),
    "status": lambda r: (r.status, r.seq),
    "file": lambda r: (r.file, r.line),
}
MAX_LIMIT = 500


@dataclass(frozen=True, slots=True)
class Query:
    text: str = ""
    tool: str = ""
    model: str = ""
    status: str = ""
    errors: str = ""  # "", "yes", "no"
    copies: bool = False  # list the copies of a run in other files too
    sort: str = "time"
    desc: bool = True
    offset: int = 0
    limit: int = 100

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> Query:
        def number(name: str, default: int, top: int) -> int:
            try:
                return max(0, min(top, int(params.get(name, default))))
            except ValueError:
                return default

        sort = params.get("sort", "time")
        return cls(
            text=params.get("q", "").strip().lower(),
            tool=params.get("tool", ""),
            model=params.get("model", ""),
            status=params.get("status", ""),
            errors=params.get("errors", ""),
            copies=params.get("copies", "") == "show",
            sort=sort if sort in SORT_KEYS else "time",
            desc=params.get("order", "desc") != "asc",
            offset=number("offset", 0, 10**9),
            limit=number("limit", 100, MAX_LIMIT) or 1,
        )

    def keeps(self, row: Row) -> bool:
        if self.tool and self.tool not in row.summary.tool_calls_by_name:
            return False
        if self.model and self.model not in row.meta.models:
            return False
        if self.status and row.status != self.status:
            return False
        if self.errors == "yes" and not row.summary.error_count:
            return False
        if self.errors == "no" and row.summary.error_count:
            return False
        return not self.text or self.text in row.haystack()

    def key(self) -> tuple[Any, ...]:
        return (self.text, self.tool, self.model, self.status, self.errors, self.copies, self.sort, self.desc)


class Lister:
    """Filters and sorts the rows once per (query, index generation), then pages from that result."""

    def __init__(self) -> None:
        self._cache: tuple[tuple[Any, ...], int, list[Row]] | None = None

    def chosen(self, generation: int, rows: list[Row], query: Query) -> list[Row]:
        """Every row the query keeps, in its order."""
        cached = self._cache
        if cached is not None and cached[0] == query.key() and cached[1] == generation:
            return cached[2]
        chosen = [r for r in rows if query.keeps(r)]
        chosen.sort(key=SORT_KEYS[query.sort], reverse=query.desc)
        self._cache = (query.key(), generation, chosen)
        return chosen

    def page(self, generation: int, rows: list[Row], query: Query) -> tuple[int, list[Row]]:
        chosen = self.chosen(generation, rows, query)
        return len(chosen), chosen[query.offset : query.offset + query.limit]


def facets(rows: list[Row]) -> dict[str, Any]:
    """The tool names, models and statuses present (the filters' choices), and whether any run records its cost."""
    tools: set[str] = set()
    models: set[str] = set()
    statuses: set[str] = set()
    priced = False
    for r in rows:
        tools.update(r.summary.tool_calls_by_name)
        models.update(r.meta.models)
        statuses.add(r.status)
        priced = priced or "cost" in r.meta.extra or "cost_usd" in r.meta.extra
    return {"tools": sorted(tools), "models": sorted(models), "statuses": sorted(statuses), "priced": priced}
