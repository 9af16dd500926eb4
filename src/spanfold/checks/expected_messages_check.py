"""``expected_messages``: a trace against AgentV's compact expected-messages spec.

The spec is a list of ``{role, content?, tool_calls?: [{tool, input?, output?}]}``. The trace is seen the
same way (tool outputs folded into the calls they answer), and the spec's messages are found in order by
a forward scan (trace messages the spec leaves out may come between). Content: a string (exact), ``{contains:
s}``, ``{regex: s}`` (re.search), or absent/null (not checked). ``tool_calls``, when given, must list the
message's calls in order, each ``input`` matched as a subset of the actual arguments (``args_match`` as in
``tool_trajectory``) and ``output`` like content, or as data contained in the (JSON) output. Score = spec
messages found / spec messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from spanfold.checks.errors import SpecError, SpecPath
from spanfold.checks.fields import check_keys, parse_name, parse_threshold, require_list, require_mapping
from spanfold.checks.matching import ANY, TextMatch, clip, parse_text_match, show, show_call
from spanfold.checks.result import CheckResult, make_result
from spanfold.checks.trajectory import ExpectedCall, parse_expected_call
from spanfold.checks.view import CompactMessage, TraceLike, TraceView, view_of

_MESSAGE_KEYS = ("role", "content", "tool_calls")


@dataclass(frozen=True, slots=True)
class ExpectedMessage:
    role: str
    content: TextMatch = ANY
    tool_calls: tuple[ExpectedCall, ...] | None = None

    def diff(self, msg: CompactMessage) -> str | None:
        """Why ``msg`` is not this message, or None."""
        if msg.role != self.role:
            return f"role: expected {self.role}, got {msg.role}"
        found = self.content.diff(msg.content)
        if found is not None:
            return f"content: {found}"
        if self.tool_calls is None:
            return None
        if len(self.tool_calls) != len(msg.calls):
            want = ", ".join(e.tool for e in self.tool_calls) or "none"
            got = ", ".join(c.name for c in msg.calls) or "none"
            return f"tool calls: expected {len(self.tool_calls)} ({want}), got {len(msg.calls)} ({got})"
        for k, (exp, call) in enumerate(zip(self.tool_calls, msg.calls, strict=True), start=1):
            if call.name != exp.tool:
                return f"tool call {k}: expected {exp.describe()}, got {show_call(call.name, call.args)}"
            found = exp.diff(call)
            if found is not None:
                return f"tool call {k} ({exp.tool}): {found}"
        return None

    def describe(self) -> str:
        parts = [self.role]
        if self.content.kind != "any":
            parts.append(self.content.describe())
        if self.tool_calls is not None:
            parts.append("calling " + (", ".join(e.tool for e in self.tool_calls) or "no tools"))
        return " ".join(parts)


def parse_expected_message(raw: Any, path: SpecPath) -> ExpectedMessage:
    item = require_mapping(raw, path, "an expected message")
    check_keys(item, _MESSAGE_KEYS, path, "an expected message")
    role = item.get("role")
    if not isinstance(role, str) or not role:
        raise SpecError(f"role must be a string such as user or assistant (got {show(role)})", (*path, "role"))
    if role == "tool":
        raise SpecError(
            "role tool is not a message in the compact format: give the output on the assistant's tool call "
            "(tool_calls: [{tool, input, output}])",
            (*path, "role"),
        )
    content = parse_text_match(item.get("content"), (*path, "content"), data=False)
    calls: tuple[ExpectedCall, ...] | None = None
    if item.get("tool_calls") is not None:
        raw_calls = require_list(item["tool_calls"], (*path, "tool_calls"), "tool_calls")
        calls = tuple(parse_expected_call(c, (*path, "tool_calls", i)) for i, c in enumerate(raw_calls))
    return ExpectedMessage(role=role, content=content, tool_calls=calls)


def _closest(exp: ExpectedMessage, messages: Sequence[CompactMessage]) -> str | None:
    for msg in messages:
        if msg.role == exp.role:
            return f"event {msg.event} ({msg.role}): {exp.diff(msg)}"
    return None


def _score(expected: Sequence[ExpectedMessage], messages: list[CompactMessage]) -> tuple[int, list[str]]:
    pos = hits = 0
    reasons: list[str] = []
    for j, exp in enumerate(expected):
        found = next((i for i in range(pos, len(messages)) if exp.diff(messages[i]) is None), None)
        if found is not None:
            hits += 1
            pos = found + 1
            continue
        after = f"after event {messages[pos - 1].event}" if pos else "in the trace"
        what = f"expected_messages[{j}] ({clip(exp.describe(), 100)}): not found {after}"
        near = _closest(exp, messages[pos:])
        reasons.append(f"{what}; closest: {near}" if near else f"{what}; no later {exp.role} message")
    return hits, reasons


@dataclass(frozen=True, slots=True)
class MessagesCheck:
    """A validated ``expected_messages`` check."""

    name: str
    expected: tuple[ExpectedMessage, ...]
    threshold: float = 1.0

    kind: ClassVar[str] = "expected_messages"

    def run(self, trace: TraceLike | TraceView) -> CheckResult:
        hits, reasons = _score(self.expected, view_of(trace).messages)
        return make_result(self.name, self.kind, hits, len(self.expected), self.threshold, reasons)

    @classmethod
    def build(
        cls,
        *,
        spec: Any,
        threshold: Any = 1.0,
        name: Any = None,
        path: SpecPath = (),
        spec_path: SpecPath | None = None,
    ) -> MessagesCheck:
        """Validate and build. ``spec``: the compact list (or a mapping holding it under ``expected_messages``);
        ``path`` locates the check, ``spec_path`` the list (default: ``path`` + ``expected_messages``)."""
        if isinstance(spec, Mapping) and "expected_messages" in spec:
            spec = spec["expected_messages"]
        where = (*path, "expected_messages") if spec_path is None else spec_path
        items = require_list(spec, where, "expected_messages")
        return cls(
            name=parse_name(name, (*path, "name")) if name is not None else cls.kind,
            expected=tuple(parse_expected_message(m, (*where, i)) for i, m in enumerate(items)),
            threshold=parse_threshold(threshold, (*path, "threshold")),
        )


def expected_messages(
    trace: TraceLike,
    spec: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    *,
    threshold: float = 1.0,
    name: str | None = None,
) -> CheckResult:
    """Match ``trace`` against a compact expected-messages ``spec``; see the module docstring."""
    items = list(spec) if not isinstance(spec, (Mapping, str)) else spec
    return MessagesCheck.build(spec=items, threshold=threshold, name=name).run(trace)
