"""``--where EXPR``: select runs by their scores and by who they are for, from their metadata.

An expression is ``FIELD OP VALUE`` (spaces around the operator allowed; quote it for the shell):

* ``score.NAME``: the run's latest score of that name (``spanfold.score``, read from ``traces.scores.jsonl``); with
  ``<``, ``<=``, ``>``, ``>=`` a number (a bool counts 1 or 0), with ``=`` / ``!=`` a number, ``true`` / ``false`` or
  a label (``score.tone=rude``);
* ``user``, ``session`` (else the run's conversation), ``tag`` (any of its tags), ``prompt`` (``name`` or
  ``name@version``): with ``=`` / ``!=``, as ``spanfold.context`` names them in the metadata.

A run that lacks the field (no such score, no user) matches no expression, ``!=`` included. Several ``--where``
options must all hold.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import click

from spanfold.trace.model import TraceMeta
from spanfold.trace.scores import Value, latest

WHERE_HELP: Final = (
    "Only the runs that match: score.NAME<0.5 (also <=, >, >=, =, !=; a label: score.tone=rude), user=ID, "
    "session=ID, tag=T, prompt=NAME[@VERSION]. Repeatable: all must hold."
)
FIELDS: Final = ("user", "session", "tag", "prompt")
_EXPR: Final = re.compile(
    r"\s*(score\.(?P<score>[^<>=!]+?)|(?P<field>[a-z]+))\s*(?P<op><=|>=|!=|=|<|>)\s*(?P<value>.*)"
)
_ORDER: Final[dict[str, Callable[[float, float], bool]]] = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


@dataclass(frozen=True, slots=True)
class Where:
    """One ``--where`` expression, parsed."""

    text: str
    field: str  # "score" or one of FIELDS
    name: str  # the score's name ("" for the others)
    op: str
    value: str

    @classmethod
    def parse(cls, text: str) -> Where:
        """The expression ``text``; ``click.BadParameter`` saying what is wrong with it."""
        found = _EXPR.fullmatch(text)
        if found is None:
            raise click.BadParameter(
                f"{text!r}: expected FIELD OP VALUE, such as score.helpful<0.5 or user=u-42", param_hint="--where"
            )
        op, value = found["op"], found["value"].strip()
        if found["score"] is not None:
            name = found["score"].strip()
            if op in _ORDER and _number(value) is None:
                raise click.BadParameter(f"{text!r}: {op} compares with a number, not {value!r}", param_hint="--where")
            return cls(text, "score", name, op, value)
        if found["field"] not in FIELDS:
            raise click.BadParameter(
                f"{text!r}: unknown field {found['field']!r}; expected score.NAME, {', '.join(FIELDS)}",
                param_hint="--where",
            )
        if op not in ("=", "!="):
            raise click.BadParameter(f"{text!r}: {found['field']} takes = or !=, not {op}", param_hint="--where")
        return cls(text, found["field"], "", op, value)

    def __call__(self, meta: TraceMeta) -> bool:
        """Whether the run of this metadata matches."""
        if self.field == "score":
            given = latest(meta.scores).get(self.name)
            return given is not None and self._compare(given.value)
        have = _context_values(meta, self.field)
        if not have:
            return False
        return (self.value in have) == (self.op == "=")

    def _compare(self, value: Value) -> bool:
        if self.op in _ORDER:
            number = _as_number(value)
            wanted = _number(self.value)
            return number is not None and wanted is not None and _ORDER[self.op](number, wanted)
        equal = _equal(value, self.value)
        return equal if self.op == "=" else not equal


def _number(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _as_number(value: Value) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    return None


def _equal(value: Value, text: str) -> bool:
    if isinstance(value, bool):
        return text.lower() == ("true" if value else "false")
    if isinstance(value, (int, float)):
        wanted = _number(text)
        return wanted is not None and float(value) == wanted
    return value == text


def _context_values(meta: TraceMeta, field: str) -> list[str]:
    extra = meta.extra
    if field == "user":
        user = extra.get("user_id")
        return [user] if isinstance(user, str) else []
    if field == "session":
        session = extra.get("session_id") or extra.get("conversation_id")
        return [session] if isinstance(session, str) else []
    if field == "tag":
        tags = extra.get("tags")
        return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []
    prompt = extra.get("prompt")
    if not isinstance(prompt, dict) or not isinstance(prompt.get("name"), str):
        return []
    version = prompt.get("version")
    return [prompt["name"]] + ([f"{prompt['name']}@{version}"] if version is not None else [])


def parse_all(texts: Sequence[str]) -> list[Where]:
    return [Where.parse(text) for text in texts]


def matches(wheres: Sequence[Where], meta: TraceMeta) -> bool:
    """Whether the run matches every expression."""
    return all(where(meta) for where in wheres)
