"""Validate JSON values against the trace formats' JSON Schemas (shipped in ``spanfold/trace/schemas``).

The schema is picked by the value's shape (:func:`spanfold.trace.decode.shape_of`) unless one is asked for. Every
problem is reported with a JSON path (``$[2].tool_calls[0].function.name``). Beyond the schemas: a tool output
whose ``tool_call_id`` answers no earlier call, and an AgentV ``trace_summary`` that disagrees with its events.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator, ValidationError
from referencing import Registry, Resource

from spanfold.trace.decode import decode, shape_of
from spanfold.trace.errors import TraceError

if TYPE_CHECKING:
    from referencing._core import Resolver  # the type of Registry.resolver(); referencing exports no name for it

#: Schema file (without ``.schema.json``) for each shape.
SCHEMAS = {
    "invariant": "invariant",
    "invariant-object": "invariant-object",
    "invariant-document": "invariant-document",
    "agentv": "agentv",
    "agentv-summary": "agentv",
    "compact": "compact",
    "agentv-cli": "agentv-cli",
    "agentv-transcript": "agentv-transcript",
    "metadata": "metadata",
}


@dataclass(frozen=True, slots=True)
class Issue:
    """One problem: where in the value (a JSON path) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def load_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of a format (``invariant``, ``agentv``, ``compact``, ``agentv-cli``, ``metadata``, ...)."""
    path = resources.files("spanfold.trace").joinpath("schemas").joinpath(f"{name}.schema.json")
    text = path.read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _registry() -> Registry[Any]:
    resources_ = [Resource.from_contents(load_schema(name)) for name in sorted(set(SCHEMAS.values()))]
    return Registry().with_resources((str(r.contents["$id"]), r) for r in resources_)


def _inline(node: Any, resolver: Resolver[Any]) -> Any:
    """``node`` with every ``$ref`` replaced by what it points to (the schemas have no cycles): validating a value
    then never resolves a reference, which is most of jsonschema's time on a trace."""
    if isinstance(node, list):
        return [_inline(item, resolver) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _inline(v, resolver) for k, v in node.items() if k not in ("$ref", "$defs")}
    if "$ref" in node:
        resolved = resolver.lookup(node["$ref"])
        target = {k: v for k, v in _inline(resolved.contents, resolved.resolver).items() if k not in ("$id", "$schema")}
        out = {**target, **out} if not set(target) & set(out) else {"allOf": [target], **out}
    return out


@cache
def validator(name: str) -> Draft202012Validator:
    """The validator of a format's schema, its references inlined."""
    schema = load_schema(name)
    resolver = _registry().resolver(base_uri=str(schema["$id"]))
    return Draft202012Validator(_inline(schema, resolver))


def json_path(parts: Iterable[Any]) -> str:
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and part.isidentifier():
            out += f".{part}"
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out


def _position(error: ValidationError) -> list[tuple[int, int, str]]:
    """Document order: by path, indices numerically."""
    return [(0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in error.absolute_path]


def _message(error: ValidationError) -> str:
    if error.validator == "not":
        return f"{error.instance!r} is not allowed here"
    if error.validator in ("anyOf", "oneOf") and error.context:
        return "; or ".join(sorted({e.message for e in error.context}))
    return str(error.message)


def _dangling_outputs(events: list[Any], prefix: tuple[Any, ...]) -> list[Issue]:
    issues: list[Issue] = []
    seen: set[str] = set()
    for i, ev in enumerate(events):
        if not isinstance(ev, dict):
            continue
        for call in ev.get("tool_calls") or []:
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                seen.add(call["id"])
        call_id = ev.get("tool_call_id")
        if ev.get("role") == "tool" and isinstance(call_id, str) and call_id not in seen:
            issues.append(Issue(json_path((*prefix, i, "tool_call_id")), f"{call_id!r} answers no earlier tool call"))
    return issues


def _summary_mismatch(value: dict[str, Any]) -> list[Issue]:
    given = value.get("trace_summary")
    if not isinstance(given, dict) or not isinstance(value.get("trace"), list):
        return []
    trace = decode(value).trace
    if trace is None:
        return []
    actual = trace.summary().to_dict()
    return [
        Issue(json_path(("trace_summary", key)), f"is {given[key]!r} but the events give {actual[key]!r}")
        for key in actual
        if key in given and given[key] != actual[key]
    ]


def _semantic(shape: str, value: Any) -> list[Issue]:
    try:
        if shape == "invariant":
            return _dangling_outputs(value, ())
        if shape in ("invariant-object", "invariant-document"):
            key = "messages" if shape == "invariant-object" else "trace"
            return _dangling_outputs(value[key], (key,))
        if shape == "agentv":
            return _summary_mismatch(value)
    except TraceError:
        return []  # the schema errors already say what is wrong
    return []


def validate_value(value: Any, fmt: str | None = None) -> tuple[str | None, list[Issue]]:
    """``(shape, issues)`` for one JSON value; ``fmt`` forces the schema (a key of :data:`SCHEMAS`)."""
    shape = fmt
    if shape is None:
        try:
            shape = shape_of(value)
        except TraceError as exc:
            return None, [Issue("$", str(exc))]
    errors = sorted(validator(SCHEMAS[shape]).iter_errors(value), key=_position)
    issues = [Issue(json_path(e.absolute_path), _message(e)) for e in errors]
    if not issues:
        issues = _semantic(shape, value)
    return shape, issues
