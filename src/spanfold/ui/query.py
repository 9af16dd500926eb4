"""The run list's filters, sorting and paging over index rows.

The filters combine (each one given must hold): a text (in the run's metadata, file, tools and first question, or,
from :data:`CONTENT_CHARS` characters on, anywhere in its content: :mod:`spanfold.ui.search`), a tool, a model, a
provider (one its model calls went to), an agent, a service, a status, errors or none, a time range (when the run
started), the conversation (session) and user ids its metadata records, a tag and a prompt (``NAME`` or
``NAME@VERSION``) from its ``spanfold.context``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from spanfold.ui.index import Row, prompt_of, tags_of
from spanfold.ui.steps import epoch_ms, trace_cost

#: Sortable columns and the key each sorts by (missing values sort as the smallest).
SORT_KEYS: dict[str, Callable[[Row], Any]] = {
    "time": lambda r: (r.meta.start or "", r.seq),
    "name": lambda r: ((r.meta.name or "").lower(), r.seq),
    "service": lambda r: (r.meta.service or "", r.seq),
    "user": lambda r: (user_of(r) or "", r.seq),
    "models": lambda r: (",".join(r.meta.models), r.seq),
    "providers": lambda r: (",".join(r.meta.providers), r.seq),
    "steps": lambda r: (r.step_count, r.seq),
    "calls": lambda r: (sum(r.summary.tool_calls_by_name.values()), r.seq),
    "errors": lambda r: (r.summary.error_count, r.seq),
    "tokens_in": lambda r: ((t := r.tokens()) is not None, t[0] if t else 0, r.seq),  # unknown: below every count
    "tokens_out": lambda r: ((t := r.tokens()) is not None, t[1] if t else 0, r.seq),
    "cost": lambda r: ((trace_cost(r.meta.extra) or {"amount": -1.0})["amount"], r.seq),
    "duration": lambda r: (r.meta.duration_ms if r.meta.duration_ms is not None else -1.0, r.seq),
    "status": lambda r: (r.status, r.seq),
    "file": lambda r: (r.file, r.line),
}
MAX_LIMIT = 500
#: A text this long or longer is also looked for in the runs' content (a shorter one is in nearly every run).
CONTENT_CHARS = 3
#: The metadata keys a conversation (session) id and a user id are found under, first found first.
CONVERSATION_KEYS = ("conversation_id", "gen_ai.conversation.id", "session_id", "session.id")
USER_KEYS = ("user_id", "user.id", "enduser.id", "gen_ai.user.id")


def _first(extra: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = extra.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
            return str(value)
    return None


def conversation_of(row: Row) -> str | None:
    """The conversation (session) id the run's metadata records."""
    return _first(row.meta.extra, CONVERSATION_KEYS)


def user_of(row: Row) -> str | None:
    """The user id the run's metadata records."""
    return _first(row.meta.extra, USER_KEYS)


@dataclass(frozen=True, slots=True)
class Query:
    text: str = ""
    tool: str = ""
    model: str = ""
    provider: str = ""  # runs with a model call to this provider (``gen_ai.provider.name``)
    agent: str = ""
    service: str = ""
    status: str = ""
    errors: str = ""  # "", "yes", "no"
    conversation: str = ""
    user: str = ""
    tag: str = ""
    prompt: str = ""  # NAME@VERSION, or NAME: any version of it
    score: str = ""  # runs scored under this name (``spanfold.score``)
    since: float | None = None  # ms since the epoch: runs that started then or later
    until: float | None = None  # ... started before then
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
            provider=params.get("provider", ""),
            agent=params.get("agent", ""),
            service=params.get("service", ""),
            status=params.get("status", ""),
            errors=params.get("errors", ""),
            conversation=params.get("conversation", "").strip(),
            user=params.get("user", "").strip(),
            tag=params.get("tag", ""),
            prompt=params.get("prompt", ""),
            score=params.get("score", ""),
            since=epoch_ms(params.get("from")),
            until=epoch_ms(params.get("to")),
            copies=params.get("copies", "") == "show",
            sort=sort if sort in SORT_KEYS else "time",
            desc=params.get("order", "desc") != "asc",
            offset=number("offset", 0, 10**9),
            limit=number("limit", 100, MAX_LIMIT) or 1,
        )

    def keeps(self, row: Row) -> bool:
        """Whether every filter but the text holds for the row."""
        meta = row.meta
        if self.tool and self.tool not in row.summary.tool_calls_by_name:
            return False
        if self.model and self.model not in meta.models:
            return False
        if self.provider and self.provider not in meta.providers:
            return False
        if self.agent and meta.name != self.agent:
            return False
        if self.service and meta.service != self.service:
            return False
        if self.status and row.status != self.status:
            return False
        if self.errors == "yes" and not row.summary.error_count:
            return False
        if self.errors == "no" and row.summary.error_count:
            return False
        if self.conversation and conversation_of(row) != self.conversation:
            return False
        if self.user and user_of(row) != self.user:
            return False
        if self.tag and self.tag not in tags_of(meta.extra):
            return False
        if self.prompt and not _same_prompt(prompt_of(meta.extra), self.prompt):
            return False
        if self.score and self.score not in row.scores:
            return False
        if self.since is not None or self.until is not None:
            start = epoch_ms(meta.start)
            if start is None or (self.since is not None and start < self.since):
                return False
            if self.until is not None and start >= self.until:
                return False
        return True

    def key(self) -> tuple[Any, ...]:
        """What the rows kept, and their order, depend on (not the page)."""
        return tuple(getattr(self, f.name) for f in fields(self) if f.name not in ("offset", "limit"))


def _same_prompt(prompt: str | None, wanted: str) -> bool:
    """Whether a run's prompt (``NAME@VERSION``) is the one asked for: that version, or any version of a name."""
    return prompt is not None and (prompt == wanted or ("@" not in wanted and prompt.startswith(wanted + "@")))


#: Which rows hold a text in their content: ``(text, rows) -> {id(row)}`` (:class:`spanfold.ui.search.ContentSearch`).
ContentMatch = Callable[[str, list[Row]], set[int]]


class Lister:
    """Filters and sorts the rows once per (query, index generation), then pages from that result."""

    def __init__(self, content: ContentMatch | None = None) -> None:
        self.content = content
        self._cache: tuple[tuple[Any, ...], int, list[Row]] | None = None

    def chosen(self, generation: int, rows: list[Row], query: Query) -> list[Row]:
        """Every row the query keeps, in its order."""
        cached = self._cache
        if cached is not None and cached[0] == query.key() and cached[1] == generation:
            return cached[2]
        chosen = [r for r in rows if query.keeps(r)]
        if query.text:
            deep = self.content is not None and len(query.text) >= CONTENT_CHARS
            inside = self.content(query.text, chosen) if self.content is not None and deep else set()
            chosen = [r for r in chosen if id(r) in inside or query.text in r.haystack()]
        chosen.sort(key=SORT_KEYS[query.sort], reverse=query.desc)
        self._cache = (query.key(), generation, chosen)
        return chosen

    def page(self, generation: int, rows: list[Row], query: Query) -> tuple[int, list[Row]]:
        chosen = self.chosen(generation, rows, query)
        return len(chosen), chosen[query.offset : query.offset + query.limit]


def facets(rows: list[Row]) -> dict[str, Any]:
    """The filters' choices: the tool names, models, providers, agents, services and statuses present; whether any
    run records its cost, a conversation id, a user id; the tags and prompts (``NAME@VERSION``) the runs' context
    names."""
    tools: set[str] = set()
    models: set[str] = set()
    providers: set[str] = set()
    agents: set[str] = set()
    services: set[str] = set()
    statuses: set[str] = set()
    tags: set[str] = set()
    prompts: set[str] = set()
    scores: set[str] = set()
    priced = conversations = users = False
    for r in rows:
        scores.update(r.scores)
        tools.update(r.summary.tool_calls_by_name)
        models.update(r.meta.models)
        if r.meta.name:
            agents.add(r.meta.name)
        if r.meta.service:
            services.add(r.meta.service)
        statuses.add(r.status)
        extra = r.meta.extra
        if extra:
            priced = priced or "cost" in extra or "cost_usd" in extra
            conversations = conversations or conversation_of(r) is not None
            users = users or user_of(r) is not None
            got = extra.get("providers")
            if got.__class__ is list:  # TraceMeta.providers, inline: kept below only when text
                try:
                    providers.update(got)
                except TypeError:  # an entry that is no text (a record, a list)
                    providers.update(p for p in got if isinstance(p, str))
            if "tags" in extra:
                tags.update(tags_of(extra))
            if "prompt" in extra and (prompt := prompt_of(extra)) is not None:
                prompts.add(prompt)
    return {
        "tools": sorted(tools),
        "models": sorted(models),
        "providers": sorted(p for p in providers if isinstance(p, str) and p),
        "agents": sorted(agents),
        "services": sorted(services),
        "statuses": sorted(statuses),
        "priced": priced,
        "conversations": conversations,
        "users": users,
        "tags": sorted(tags),
        "prompts": sorted(prompts),
        "scores": sorted(scores),
    }
