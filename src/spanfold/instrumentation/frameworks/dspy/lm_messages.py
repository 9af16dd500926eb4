"""DSPy's messages as typed messages: what an ``LM`` call sends and answers, and a ReAct trajectory turned back into
the tool calls and outputs it stands for.

DSPy's adapters send OpenAI-style message dicts (``role``, ``content`` as a string or a list of ``text`` /
``image_url`` / ``input_audio`` / ``file`` items, an assistant's ``tool_calls``, a ``tool`` message's
``tool_call_id``); an explicit ``dspy.lm15.Request`` is read through DSPy's own display snapshot of it (the same
shape, its parts as lm15 dicts). An ``LM`` call answers one output per candidate: its text, or a dict of ``text``,
``reasoning_content`` and ``tool_calls``.

ReAct re-sends its trajectory (``thought_i``, ``tool_name_i``, ``tool_args_i``, ``observation_i``) as text in the
user message of every step. :func:`turns` gives what it stands for: per step an assistant message (the thought, and
the tool call with the id :func:`call_id` makes of the step's index) and the tool's output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spanfold.instrumentation.toolkit.reading import fields as m
from spanfold.semconv import parts as p

#: ReAct's trajectory keys, one of each per step (``thought_0``...).
THOUGHT, TOOL_NAME, TOOL_ARGS, OBSERVATION = "thought_", "tool_name_", "tool_args_", "observation_"


def _item(item: Any) -> p.Part:
    kind = m.get(item, "type")
    if kind == "text":
        return p.text(m.get(item, "text"))
    if kind == "image_url":
        url = m.get(item, "image_url")
        return p.media(str(url if isinstance(url, str) else m.get(url, "url", "")), "image")
    if kind == "input_audio":
        audio = m.get(item, "input_audio")
        return p.blob(m.get(audio, "data"), f"audio/{m.get(audio, 'format')}", "audio")
    if kind == "file":
        file = m.get(item, "file")
        data = m.get(file, "file_data")
        if isinstance(data, str) and data:
            return p.media(data, "document")
        return p.file(m.get(file, "file_id"), "document")
    return p.other(kind or "unknown")


def content_parts(content: Any) -> list[p.Part]:
    if content is None:
        return []
    if isinstance(content, str):
        return [p.text(content)]
    return [_item(item) for item in m.as_list(content)]


def _calls(calls: Any) -> list[p.Part]:
    out: list[p.Part] = []
    for call in m.as_list(calls):
        function = m.get(call, "function")
        out.append(p.tool_call(m.get(call, "id"), m.get(function, "name"), m.get(function, "arguments")))
    return out


def message(msg: Any) -> p.Message:
    """One message an adapter sends."""
    role = m.get(msg, "role")
    content = m.get(msg, "content")
    if role == "tool":
        text = content if isinstance(content, str) else m.dumps(content)
        return p.message("tool", [p.tool_response(m.get(msg, "tool_call_id"), text)])
    return p.message(role, [*content_parts(content), *_calls(m.get(msg, "tool_calls"))])


def output_message(output: Any) -> p.Message:
    """One candidate an ``LM`` call answered (its text, or its dict of text, reasoning and tool calls)."""
    if isinstance(output, str) or output is None:
        return p.message("assistant", [p.text(output)] if output else [])
    parts: list[p.Part] = []
    reasoning = m.get(output, "reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        parts.append(p.reasoning(reasoning))
    text = m.get(output, "text")
    if isinstance(text, str) and text:
        parts.append(p.text(text))
    parts.extend(_calls(m.get(output, "tool_calls")))
    return p.message("assistant", parts)


# --- ReAct's trajectory ------------------------------------------------------------------------------------------


def call_id(index: int, prefix: str = "react") -> str:
    """The tool-call id of ReAct's step ``index`` (ReAct's model calls have none): ``react_0``, ``react_1``..."""
    return f"{prefix}_{index}"


def observed(value: Any) -> str:
    """A tool's output as a tool message holds it (its text, else its JSON), as its ``execute_tool`` span does."""
    return value if isinstance(value, str) else m.dumps(value)


def step_call(index: int, prefix: str, thought: Any, name: Any, arguments: Any) -> p.Message:
    """What ReAct parsed of step ``index``'s answer: its thought and its tool call."""
    parts: list[p.Part] = [p.text(thought)] if isinstance(thought, str) and thought else []
    parts.append(p.tool_call(call_id(index, prefix), name, arguments))
    return p.message("assistant", parts)


def indexes(trajectory: Mapping[str, Any]) -> list[int]:
    """The indexes of the steps a trajectory holds (after a truncation, not from 0), in order."""
    out = []
    for key in trajectory:
        if key.startswith(TOOL_NAME) and key[len(TOOL_NAME) :].isdigit():
            out.append(int(key[len(TOOL_NAME) :]))
    return sorted(out)


def next_index(trajectory: Mapping[str, Any]) -> int:
    """The index of the step that follows the trajectory."""
    held = indexes(trajectory)
    return held[-1] + 1 if held else 0


def turns(trajectory: Mapping[str, Any], prefix: str) -> list[p.Message]:
    """The trajectory's steps as the calls and outputs they stand for."""
    out: list[p.Message] = []
    for index in indexes(trajectory):
        out.append(
            step_call(
                index,
                prefix,
                trajectory.get(f"{THOUGHT}{index}"),
                trajectory.get(f"{TOOL_NAME}{index}"),
                trajectory.get(f"{TOOL_ARGS}{index}"),
            )
        )
        if f"{OBSERVATION}{index}" in trajectory:
            observation = observed(trajectory[f"{OBSERVATION}{index}"])
            out.append(p.message("tool", [p.tool_response(call_id(index, prefix), observation)]))
    return out
