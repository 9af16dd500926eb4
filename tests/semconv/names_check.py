"""What the semconv tests share with the framework tests: the names a set of finished spans carries that the table of
written names (:mod:`spanfold.semconv.written`) does not list."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from spanfold.semconv import written


def unlisted(spans: Iterable[Any]) -> set[str]:
    """Every attribute key, span event name, event attribute key and ``gen_ai.operation.name`` value of spanfold's
    spans among ``spans`` (scope ``spanfold`` / ``spanfold.*``) that the table does not list, each prefixed with what
    it is (``attribute:``, ``event:``, ``event attribute:``, ``operation:``)."""
    out: set[str] = set()
    for span in spans:
        scope = span.instrumentation_scope.name if span.instrumentation_scope else ""
        if scope != "spanfold" and not scope.startswith("spanfold."):
            continue
        attributes = dict(span.attributes or {})
        out |= {
            f"attribute: {k}"
            for k in attributes
            if k not in written.ATTRIBUTES and not k.startswith(tuple(written.ATTRIBUTE_PREFIXES))
        }
        op = attributes.get("gen_ai.operation.name")
        if op is not None and op not in written.OPERATIONS:
            out.add(f"operation: {op}")
        for event in span.events:
            if event.name not in written.SPAN_EVENTS:
                out.add(f"event: {event.name}")
            out |= {f"event attribute: {k}" for k in event.attributes or {} if k not in written.EVENT_ATTRIBUTES}
    return out
