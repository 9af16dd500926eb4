"""One tool run recorded twice is one tool step.

A tool run can be seen by two producers at once, each span nested in the other's: spanfold's MCP client span
(arguments, result) and, below it, the MCP server's own ``tools/call`` span (same process, or received by
``spanfold serve`` with the propagated context), which carries the tool's name and nothing else; or a framework's
tool span (the OpenAI Agents SDK's function span for an MCP tool) above spanfold's MCP span. A tool step whose
nearest tool-step ancestor has the same name is that ancestor's run (Claude Code names an MCP server's tool
``mcp__<server>__<tool>``, its server's span ``<tool>``: the same tool): what the outer step lacks (arguments, result,
call id, error) is filled from the inner one, and the inner one is dropped (counted ``fold.nested_tool_steps``).
Cost: one walk up the parents per tool step, stopped at the first tool step (cycles in bad input end the walk).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from spanfold import counters
from spanfold.exporter.steps import Step, ToolStep


def _enclosing_tool(span_id: int, steps: Mapping[int, Step], parents: Mapping[int, int | None]) -> ToolStep | None:
    seen: set[int] = set()
    parent = parents.get(span_id)
    while parent is not None and parent not in seen:
        seen.add(parent)
        step = steps.get(parent)
        if isinstance(step, ToolStep):
            return step
        parent = parents.get(parent)
    return None


def _same_tool(outer: str | None, inner: str | None) -> bool:
    if outer == inner:
        return True
    return bool(outer and inner and outer.startswith("mcp__") and outer.endswith(f"__{inner}"))


def merge_nested_tool_steps(steps: dict[int, Step], parents: Mapping[int, int | None]) -> None:
    """Fold each tool step into an enclosing tool step of the same name (in place)."""
    tools = sorted((s for s in steps.values() if isinstance(s, ToolStep)), key=lambda s: (-s.start_ns, s.span_id))
    if len(tools) < 2:
        return
    for step in tools:  # innermost first: a chain of three folds upwards
        inner = steps[step.span_id]
        if not isinstance(inner, ToolStep):
            continue
        outer = _enclosing_tool(inner.span_id, steps, parents)
        if outer is None or not _same_tool(outer.name, inner.name):
            continue
        steps[outer.span_id] = replace(  # a copy: parsed steps may be shared with a later fold of the same spans
            outer,
            arguments=outer.arguments if outer.arguments is not None else inner.arguments,
            result=outer.result if outer.result is not None else inner.result,
            call_id=outer.call_id if outer.call_id is not None else inner.call_id,
            error=outer.error if outer.error is not None else inner.error,
        )
        del steps[inner.span_id]
        counters.incr("fold.nested_tool_steps")
