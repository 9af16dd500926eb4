"""spanfold.codecs.jsonio: orjson / msgspec with the standard library's exact output, and the structures the calling
thread
shares with the folding worker (taken back by the text's identity, never for another text)."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spanfold.cli import main
from spanfold.codecs import jsonio
from spanfold.exporter.dialects import dispatch as dialects
from spanfold.exporter.fold.folding import fold
from spanfold.exporter.records import SpanRecord
from spanfold.instrumentation.toolkit.reading.history import FragmentCache
from spanfold.trace import formats


def stdlib(value: Any, default: Any = None) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=default)


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts as a process that has seen no non-finite float."""
    monkeypatch.setattr(jsonio, "_non_finite", False)
    yield


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Name(str):
    pass


@dataclasses.dataclass
class Point:
    x: int


EDGE_VALUES: list[Any] = [
    'héllo ☃ 😀 \u2028 \x7f \x00 \x1f "quoted" \\ / \t\n',
    "half an emoji \ud83d",
    "\udcff surrogateescape",
    2**63,
    2**64,
    -(2**70),
    10**40,
    0.1,
    1.0,
    -0.0,
    1e-4,
    1e-5,
    1.2345e-7,
    -3e-9,
    1e16,
    1.5e300,
    5e-324,
    123456789012345678.0,
    [1, 2.5, None, True, False, "x", {"k": [1e-06, {"deep": "ü"}]}],
    {"b": 1, "a": 2, "": 3},
    {1: "int key", 2.5: "float key", False: "bool key", None: "none key"},
    ("a", "tuple", 1),
    {"nested": ("t", ["u"])},
    {"enum": Level.HIGH, "str-subclass": Name("n")},
    {"object": object.__name__, "set": {1}, "bytes": b"raw", "date": datetime.date(2026, 1, 2)},
    {"dataclass": Point(1), "datetime": datetime.datetime(2026, 1, 2, 3, 4, 5)},
    [[[[[["deep"]]]]]],
    [0] * 300,
]


@pytest.mark.parametrize("value", EDGE_VALUES, ids=range(len(EDGE_VALUES)))
def test_dumps_and_encode_give_the_standard_librarys_text(value: Any) -> None:
    assert jsonio.dumps(value, str) == stdlib(value, str)
    text, copy = jsonio.encode(value, str)
    assert text == stdlib(value, str)
    if copy is not jsonio.NOT_PURE:
        assert copy == json.loads(text)


def test_values_nested_past_orjsons_limit_and_circular_ones_behave_as_the_standard_library() -> None:
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    assert jsonio.dumps(deep) == stdlib(deep)
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        jsonio.dumps(loop)


def test_a_plain_enum_goes_to_default_through_encode() -> None:
    """orjson writes an Enum member's value; the standard library calls ``default``: encode() never lets orjson see
    one (the calling thread's values go through it)."""
    value = {"colour": Colour.RED}
    assert jsonio.encode(value, str) == (stdlib(value, str), jsonio.NOT_PURE)


def test_non_finite_floats_are_written_as_the_standard_library_writes_them() -> None:
    value = {"nan": math.nan, "inf": math.inf, "ninf": -math.inf}
    assert jsonio.encode(value)[0] == stdlib(value)
    assert jsonio.dumps(value, finite=False) == stdlib(value)
    assert not jsonio.non_finite_seen()
    parsed = jsonio.loads('{"x": NaN, "y": -Infinity, "z": 1e400}')  # the standard library accepts these
    assert jsonio.non_finite_seen()
    assert jsonio.dumps(parsed) == stdlib(parsed) == '{"x":NaN,"y":-Infinity,"z":Infinity}'


TEXTS = [
    '{"a": 1, "b": [1.5, -0, 1E5, 1e-7, 18446744073709551616, -9223372036854775809, 123456789012345678901234567890]}',
    '"\\ud800 lone"',
    '["raw lone surrogate \ud800", 1]',  # the standard library writes one as it is (ensure_ascii off)
    '"\\ud83d\\ude00 pair"',
    "[1, 2, 3",
    "{'single': 1}",
    "",
    '{"dup": 1, "dup": 2}',
    '  [ "ws" ]  ',
    "NaN",
    "[-Infinity]",
    "1e999",
]


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_loads_gives_the_standard_librarys_value_or_error(text: str) -> None:
    try:
        expected = json.loads(text)
    except ValueError as exc:
        with pytest.raises(type(exc)) as caught:
            jsonio.loads(text)
        assert str(caught.value) == str(exc)
        return
    got = jsonio.loads(text)
    assert repr(got) == repr(expected)  # the same types too (ints stay ints of any size), NaN included


def record(attributes: dict[str, Any], span_id: int = 1) -> SpanRecord:
    return SpanRecord(
        trace_id=7,
        span_id=span_id,
        parent_id=None,
        name="chat m",
        start_ns=1_000 * span_id,
        end_ns=1_000 * span_id + 10,
        attributes=attributes,
    )


def chat_attributes(inputs: str, outputs: str) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "m",
        "gen_ai.input.messages": inputs,
        "gen_ai.output.messages": outputs,
    }


def test_a_trace_line_with_edge_values_is_the_standard_librarys_line() -> None:
    """Tool arguments holding NaN, a float below 1e-4, a 65-bit integer and a lone surrogate: the file line is the
    one the standard library writes (surrogates escaped for UTF-8 by formats.writable, as before)."""
    arguments = '{"nan": NaN, "small": 1e-05, "big": 18446744073709551616, "s": "\\ud800", "t": 1e-7}'
    outputs = json.dumps(
        [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "f", "arguments": arguments}]}]
    )
    inputs = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "ü 😀"}]}])
    trace = fold([record(chat_attributes(inputs, outputs))], trace_id="t")
    for value in (trace.to_invariant(), formats.agentv_document(trace), formats.meta_record(trace)):
        assert formats.dumps(value) == formats.writable(stdlib(value, str))
    assert '"small":1e-05' in formats.invariant_line(trace)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_demo_traces_and_span_attributes_are_the_standard_librarys_bytes(
    tmp_path: Path, global_spans: Any, provider: str, stream: bool
) -> None:
    args = ["demo", "--provider", provider, "-o", str(tmp_path)] + (["--stream"] if stream else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    for name in ("traces.jsonl", "traces.meta.jsonl"):
        for line in (tmp_path / name).read_text(encoding="utf-8").splitlines():
            assert line == stdlib(json.loads(line))
    texts = [
        value
        for span in global_spans.get_finished_spans()
        for value in (span.attributes or {}).values()
        if isinstance(value, str) and value[:1] in "[{"
    ]
    assert len(texts) >= 6
    for text in texts:
        assert text == stdlib(json.loads(text))


# --- the structures shared with the worker ----------------------------------------------------------------------


def test_a_history_that_extends_the_last_one_gives_the_text_and_structures_of_a_fresh_join() -> None:
    """The next call of an agent re-sends the history plus new messages: only the new fragments are joined, and the
    result is what a cache that never saw the shorter list gives. A changed message, a shorter list and a list that
    begins otherwise are joined whole."""

    def convert(item: Any) -> Any:
        return {"role": item["role"], "parts": [{"type": "text", "content": item["content"]}]}

    def fresh(items: list[Any]) -> str:
        return FragmentCache().json_list(items, convert)

    cache = FragmentCache()
    history = [{"role": "user", "content": "hi"}]
    first = '[{"role":"user","parts":[{"type":"text","content":"hi"}]}]'
    assert cache.json_list(history, convert) == fresh(history) == first
    for turn in range(3):
        history += [{"role": "assistant", "content": f"answer {turn}"}, {"role": "user", "content": f"more {turn}"}]
        text = cache.json_list(history, convert)
        assert text == fresh(history)
    same = cache.json_list(history, convert)
    assert same == text
    history[1]["content"] = "changed"  # a message of the last list changed: joined whole
    assert cache.json_list(history, convert) == fresh(history)
    assert cache.json_list(history[:2], convert) == fresh(history[:2])  # shorter
    other = [{"role": "system", "content": "be brief"}, *history]
    assert cache.json_list(other, convert) == fresh(other)  # begins otherwise

    class Obj:
        def __str__(self) -> str:
            return "obj"

    with_object = [*other, {"role": "user", "content": Obj()}]
    text = cache.json_list(with_object, lambda item: {"role": item["role"], "content": item["content"]})
    assert json.loads(text)[-1]["content"] == "obj"


def test_a_message_mutated_after_the_call_does_not_reach_the_worker() -> None:
    """The user's own lists and dicts, changed in place after the call, are not what the worker reads (it reads what
    the span's text says)."""
    content = ["before"]
    message = {"role": "user", "content": content}

    def convert(m: dict[str, Any]) -> dict[str, Any]:
        return {"role": m["role"], "parts": [{"type": "x", "v": m["content"]}]}

    text = FragmentCache().json_list([message], convert)
    content[0] = "after"
    message["role"] = "system"
    step = dialects.to_step(record(chat_attributes(text, "[]")))
    assert step.inputs == json.loads(text)  # type: ignore[union-attr]
    assert step.inputs[0]["parts"][0]["v"] == ["before"]  # type: ignore[union-attr]
