"""The toolkit's History: a request list converted per item, remembered by identity, the Runtime applied per
Runtime; an agent's next call joins only its new messages onto the last text."""

from __future__ import annotations

import json
from typing import Any

from spanfold.content.redaction import Redaction
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit.reading.history import History
from spanfold.semconv import parts as p

FULL = Runtime()


def convert(item: Any) -> p.Message:
    return p.message(item["role"], [p.text(item["content"])])


def test_a_history_that_extends_the_last_one_gives_the_text_of_a_fresh_join() -> None:
    """The next call of an agent re-sends the history plus new messages: only the new fragments are joined, and the
    result is what a History that never saw the shorter list gives. A changed message, a shorter list and a list that
    begins otherwise are joined whole."""

    def fresh(items: list[Any]) -> str:
        return History(convert).json(items, FULL)

    history = History(convert)
    items = [{"role": "user", "content": "hi"}]
    first = '[{"role":"user","parts":[{"type":"text","content":"hi"}]}]'
    assert history.json(items, FULL) == fresh(items) == first
    for turn in range(3):
        items += [{"role": "assistant", "content": f"answer {turn}"}, {"role": "user", "content": f"more {turn}"}]
        text = history.json(items, FULL)
        assert text == fresh(items)
    assert history.json(items, FULL) == text
    items[1]["content"] = "changed"  # a message of the last list changed: converted again, joined whole
    assert history.json(items, FULL) == fresh(items)
    assert '"changed"' in history.json(items, FULL)
    assert history.json(items[:2], FULL) == fresh(items[:2])  # shorter
    other = [{"role": "system", "content": "be brief"}, *items]
    assert history.json(other, FULL) == fresh(other)  # begins otherwise


def test_each_runtime_gets_its_own_conversion() -> None:
    """What was recorded under one capture or redaction setting is never reused under another."""
    history = History(convert)
    items = [{"role": "user", "content": "mail me at ann@example.com"}]
    off = Runtime(capture_content=False)
    redacting = Runtime(redaction=Redaction())
    assert json.loads(history.json(items, FULL))[0]["parts"][0]["content"] == "mail me at ann@example.com"
    assert json.loads(history.json(items, off)) == [{"role": "user", "parts": [{"type": "text"}]}]
    assert "ann@example.com" not in history.json(items, redacting)
    assert "ann@example.com" in history.json(items, FULL)


def test_merged_histories_join_consecutive_assistant_messages() -> None:
    """``merge=True``: the model-side items that follow each other are one assistant message (the Responses API)."""

    def item(value: Any) -> Any:
        if value["kind"] == "call":
            return p.message("assistant", [p.tool_call(value["id"], "f", "{}")])
        if value["kind"] == "output":
            return p.message("tool", [p.tool_response(value["id"], "ok")])
        return p.message(value["role"], [p.text(value["text"])])

    items = [
        {"kind": "message", "role": "user", "text": "go"},
        {"kind": "message", "role": "assistant", "text": "calling"},
        {"kind": "call", "id": "a"},
        {"kind": "call", "id": "b"},
        {"kind": "output", "id": "a"},
        {"kind": "message", "role": "assistant", "text": "done"},
    ]
    messages = json.loads(History(item, merge=True).json(items, FULL))
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert [part["type"] for part in messages[1]["parts"]] == ["text", "tool_call", "tool_call"]


def test_tool_definitions_keep_the_required_fields_unless_full() -> None:
    tools = History(lambda tool: [tool, {"type": "function", "name": "second"}], messages=False)
    items = [{"type": "function", "name": "get_weather", "description": "d", "parameters": {"type": "object"}}]
    assert json.loads(tools.json(items, FULL)) == [  # the default
        {"type": "function", "name": "get_weather"},
        {"type": "function", "name": "second"},
    ]
    assert json.loads(tools.json(items, Runtime(full_tool_definitions=True)))[0]["parameters"] == {"type": "object"}


def test_init_records_the_required_fields_unless_told_full(tmp_path: Any, global_spans: Any) -> None:
    """``spanfold.init()`` (the default) and ``tool_definitions="full"``, on the real openai SDK over HTTP."""
    import openai

    import spanfold
    from spanfold.testing import MockLLMServer

    tools = [{"type": "function", "function": {"name": "get_weather", "description": "d", "parameters": {}}}]
    recorded = []
    with MockLLMServer() as server:
        for option in (None, "full"):
            global_spans.clear()
            spanfold.init(output=str(tmp_path / str(option)), tool_definitions=option)
            try:
                client = openai.OpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)
                client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], tools=tools
                )
            finally:
                spanfold.shutdown()
            (span,) = [s for s in global_spans.get_finished_spans() if s.name.startswith("chat ")]
            recorded.append(json.loads(str(span.attributes["gen_ai.tool.definitions"])))
    assert recorded[0] == [{"type": "function", "name": "get_weather"}]
    assert recorded[1] == [{"type": "function", "name": "get_weather", "description": "d", "parameters": {}}]
