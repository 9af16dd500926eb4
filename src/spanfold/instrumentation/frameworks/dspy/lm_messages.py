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
from spanfold.instrumentation.toolkit.reading.chat_messages import tool_call_parts
from spanfold.semconv import parts as p

#: ReAct's trajectory keys, one of each per step (``thought_0``...).
THOUGHT, TOOL_NAME, TOOL_ARGS, OBSERVATION = "thought_", "tool_name_", "tool_args_", "observation_"


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
    parts.extend(tool_call_parts(m.get(output, "tool_calls")))
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
