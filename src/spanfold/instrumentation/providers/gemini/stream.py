"""Gemini stream chunks -> the typed response: one accumulator per ``generateContent`` stream.

Each chunk is a whole ``GenerateContentResponse`` holding the next parts of each candidate: text (and thought text)
arrives word by word and is merged back into one part per run; a function call arrives whole in a chunk of its own,
or, with Vertex AI's streamed function-call arguments, as a call whose ``will_continue`` chunks bring ``partial_args``
(``json_path`` + a string fragment or a value); the finish reason and the complete usage come in the last chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spanfold.instrumentation.providers.gemini import content as shape
from spanfold.instrumentation.providers.gemini.parts import part_parts
from spanfold.instrumentation.toolkit.invocation import Response
from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.semconv import parts as p


@dataclass(slots=True)
class _Call:
    """A function call being streamed: its id and name, whole args, or the partial args by JSON path."""

    id: Any = None
    name: Any = None
    args: Any = None
    partial: dict[str, Any] = field(default_factory=dict)
    open: bool = False

    def merge(self, call: Any) -> None:
        for arg in m.as_list(m.get(call, "partial_args")):
            path = str(m.get(arg, "json_path") or "$")
            text = m.get(arg, "string_value")
            if text is not None:
                self.partial[path] = str(self.partial.get(path) or "") + text
                continue
            for key in ("number_value", "bool_value"):
                if m.get(arg, key) is not None:
                    self.partial[path] = m.get(arg, key)
            if m.get(arg, "null_value") is not None:
                self.partial[path] = None
        if m.get(call, "args") is not None:
            self.args = m.get(call, "args")
        self.open = bool(m.get(call, "will_continue"))

    def arguments(self) -> Any:
        if self.args is not None or not self.partial:
            return self.args
        out: dict[str, Any] = {}
        for path, value in self.partial.items():
            *parents, leaf = path.removeprefix("$").lstrip(".").split(".")
            node = out
            for key in parents:
                node = node.setdefault(key, {})
            node[leaf] = value
        return out


@dataclass(slots=True)
class _Candidate:
    """One candidate's parts so far: ``("text" | "thought", fragments)``, ``("call", _Call)`` or ``("parts", parts)``
    (any other part, converted as it came)."""

    segments: list[tuple[str, Any]] = field(default_factory=list)
    finish_reason: Any = None

    def add(self, part: Any) -> None:
        text = part.text
        if text is not None:
            kind = "thought" if part.thought else "text"
            if self.segments and self.segments[-1][0] == kind:
                self.segments[-1][1].append(text)
            else:
                self.segments.append((kind, [text]))
            return
        call = part.function_call
        if call is None:
            self.segments.append(("parts", part_parts(part)))
            return
        last = self.segments[-1][1] if self.segments and self.segments[-1][0] == "call" else None
        if not (isinstance(last, _Call) and last.open and not call.name):
            last = _Call(id=call.id, name=call.name)
            self.segments.append(("call", last))
        last.merge(call)

    def parts(self) -> list[p.Part]:
        out: list[p.Part] = []
        for kind, value in self.segments:
            if kind == "text":
                out.append(p.text("".join(value)))
            elif kind == "thought":
                out.append(p.reasoning("".join(value)))
            elif kind == "call":
                out.append(p.tool_call(value.id, value.name, value.arguments()))
            else:
                out.extend(value)
        return out


class GeminiStreamAccumulator:
    """Accumulates ``GenerateContentResponse`` chunks: parts per candidate, the last finish reason and usage."""

    __slots__ = ("candidates", "id", "model", "usage")

    def __init__(self) -> None:
        self.id: Any = None
        self.model: Any = None
        self.usage: Any = None
        self.candidates: dict[int, _Candidate] = {}

    def add(self, chunk: Any) -> None:
        if self.id is None:
            self.id = chunk.response_id
            self.model = chunk.model_version
        if chunk.usage_metadata is not None:
            self.usage = chunk.usage_metadata  # a running total: the last one is the call's
        for c in chunk.candidates or ():
            index = c.index or 0
            candidate = self.candidates.get(index)
            if candidate is None:
                candidate = self.candidates[index] = _Candidate()
            content = c.content
            if content is not None and content.parts:
                for part in content.parts:
                    candidate.add(part)
            if c.finish_reason:
                candidate.finish_reason = c.finish_reason

    def result(self) -> Response:
        outputs = [
            (self.candidates[i].parts(), shape.raw_reason(self.candidates[i].finish_reason))
            for i in sorted(self.candidates)
        ]
        return shape.result(self.id, self.model, outputs, self.usage)
