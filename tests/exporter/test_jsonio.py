"""spanfold.codecs.jsonio: orjson / msgspec giving the standard library's values (non-finite floats as null), and the
history cache's joins on the calling thread."""

from __future__ import annotations

import collections
import dataclasses
import datetime
import enum
import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spanfold.cli import main
from spanfold.codecs import jsonio
from spanfold.content.runtime import Runtime
from spanfold.exporter.dialects import dispatch as dialects
from spanfold.exporter.fold.folding import fold
from spanfold.exporter.records import SpanRecord
from spanfold.instrumentation.toolkit.reading.history import History
from spanfold.trace import formats


def stdlib(value: Any, default: Any = None) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=default)


def strict(text: str) -> Any:
    """``text`` parsed as strict JSON: no NaN or Infinity tokens."""

    def refuse(token: str) -> Any:
        raise ValueError(f"not strict JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def same_value(text: str, expected: str) -> bool:
    """Whether two texts parse to the same value, types included (ints stay ints, -0.0 keeps its sign)."""
    return repr(json.loads(text)) == repr(json.loads(expected))


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Name(str):
    pass


class Score(float):  # numpy.float64 is a float subclass too
    pass


Pair = collections.namedtuple("Pair", "left right")


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
    3.3e-05,
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
    {"enum": Level.HIGH, "str-subclass": Name("n"), "float-subclass": Score(0.5), "named": Pair(1, Score(2.5))},
    {"object": object.__name__, "set": {1}, "bytes": b"raw", "date": datetime.date(2026, 1, 2)},
    {"dataclass": Point(1), "datetime": datetime.datetime(2026, 1, 2, 3, 4, 5)},
    {"big": 2**64, "small": 1e-05, "named": Pair(Score(1.5), "x")},  # the standard library's path: the same values
    [[[[[["deep"]]]]]],
    [0] * 300,
]


@pytest.mark.parametrize("value", EDGE_VALUES, ids=range(len(EDGE_VALUES)))
def test_dumps_gives_the_standard_librarys_value_compactly(value: Any) -> None:
    text = jsonio.dumps(value, str)
    assert same_value(text, stdlib(value, str)), (text, stdlib(value, str))
    assert jsonio.dumps(json.loads(text)) == text  # compact, and the same text for the same value each time


def test_common_values_are_the_standard_librarys_text() -> None:
    value = {"role": "user", "parts": [{"type": "text", "content": 'ü 😀 "q"'}], "n": [1, 2.5, 1e16, None, True]}
    assert (
        jsonio.dumps(value)
        == stdlib(value)
        == ('{"role":"user","parts":[{"type":"text","content":"ü 😀 \\"q\\""}],"n":[1,2.5,1e+16,null,true]}')
    )


def test_values_nested_past_orjsons_limit_and_circular_ones_behave_as_the_standard_library() -> None:
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    assert jsonio.dumps(deep) == stdlib(deep)
    loop: list[Any] = [math.nan]
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        jsonio.dumps(loop)
    with pytest.raises(TypeError, match="Object of type object is not JSON serializable"):
        jsonio.dumps({"x": object()})


def test_indented_text_is_laid_out_as_the_standard_librarys() -> None:
    """``indent=True`` (the pretty per-trace files) on either path: the standard library's ``indent=2`` layout."""
    value: dict[str, Any] = {"a": [1, {"b": [], "c": {}, "d": "é"}, [[]]], "e": None, "f": [{}], "g": 0.5}
    assert jsonio.dumps(value, indent=True) == json.dumps(value, indent=2, ensure_ascii=False)
    value["big"] = 2**64
    assert jsonio.dumps(value, indent=True) == json.dumps(value, indent=2, ensure_ascii=False)
    value["nan"] = math.nan
    assert jsonio.dumps(value, indent=True).endswith('"big": 18446744073709551616,\n  "nan": null\n}')
    assert formats.dumps({"x": [Point(1)]}, pretty=True) == '{\n  "x": [\n    "Point(x=1)"\n  ]\n}'


def test_a_plain_enum_member_is_its_value() -> None:
    """The standard library would call ``default`` (``"Colour.RED"``); orjson writes the value, as the standard
    library writes a ``str`` or ``int`` enum's."""
    assert jsonio.dumps({"colour": Colour.RED, "level": Level.HIGH}, str) == '{"colour":"red","level":3}'


NON_FINITE = {"nan": math.nan, "inf": math.inf, "ninf": -math.inf, "list": [1.0, math.nan]}
NULLS = '"nan":null,"inf":null,"ninf":null,"list":[1.0,null]'


def test_non_finite_floats_are_null_on_either_path() -> None:
    """JSON has no NaN or Infinity: orjson's path and the standard library's (a 65-bit integer, a lone surrogate, a
    key that is not a string, ``default``'s result) all write null, and the text is strict JSON."""
    assert jsonio.dumps(NON_FINITE) == "{" + NULLS + "}"
    for extra in ({"big": 2**64}, {"s": "\ud800"}, {1: "int key"}):
        text = jsonio.dumps({**NON_FINITE, **extra})
        assert text.startswith("{" + NULLS + ","), text
        strict(text)
    assert jsonio.dumps({math.inf: 1, "x": 2**64}) == '{"null":1,"x":18446744073709551616}'
    assert jsonio.dumps([Point(1), 2**64], lambda o: [math.nan, o.x]) == "[[null,1],18446744073709551616]"
    assert jsonio.dumps(Score(math.inf)) == "null"


def test_a_parsed_nan_changes_nothing_for_later_values() -> None:
    """No state outlives a call: parsing NaN (the standard library accepts it) does not change how values are
    written afterwards."""
    before = jsonio.dumps({"small": 3.3e-05})
    parsed = jsonio.loads('{"x": NaN, "y": -Infinity, "z": 1e400}')
    assert math.isnan(parsed["x"]) and parsed["y"] == -math.inf and parsed["z"] == math.inf
    assert jsonio.dumps(parsed) == '{"x":null,"y":null,"z":null}'
    assert jsonio.dumps({"small": 3.3e-05}) == before


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


def test_a_trace_line_with_edge_values_holds_the_standard_librarys_values_as_strict_json() -> None:
    """Tool arguments holding NaN, floats below 1e-4, a 65-bit integer and a lone surrogate: each file line holds the
    values the standard library's line holds, NaN as null, and reads as strict JSON (the surrogate escaped for UTF-8
    by formats.writable)."""
    arguments = '{"nan": NaN, "small": 1e-05, "big": 18446744073709551616, "s": "\\ud800", "t": 1e-7}'
    outputs = json.dumps(
        [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "f", "arguments": arguments}]}]
    )
    inputs = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "ü 😀"}]}])
    trace = fold([record(chat_attributes(inputs, outputs))], trace_id="t")
    for value in (trace.to_invariant(), formats.agentv_document(trace), formats.meta_record(trace)):
        line = formats.dumps(value)
        line.encode("utf-8")
        expected = formats.writable(stdlib(value, str)).replace("NaN", "null")
        assert repr(strict(line)) == repr(strict(expected))
    called = strict(formats.invariant_line(trace))[1]["tool_calls"][0]["function"]["arguments"]
    assert called == {"nan": None, "small": 1e-05, "big": 2**64, "s": "\ud800", "t": 1e-7}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_demo_traces_and_span_attributes_are_compact_strict_json(
    tmp_path: Path, global_spans: Any, provider: str, stream: bool
) -> None:
    """Every line of the demo's files and every JSON span attribute: strict JSON, compact, and what jsonio writes for
    its own value (the same value is written the same way each time)."""
    args = ["demo", "--provider", provider, "-o", str(tmp_path)] + (["--stream"] if stream else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    lines = [
        line
        for name in ("traces.jsonl", "traces.meta.jsonl")
        for line in (tmp_path / name).read_text(encoding="utf-8").splitlines()
    ]
    texts = [
        value
        for span in global_spans.get_finished_spans()
        for value in (span.attributes or {}).values()
        if isinstance(value, str) and value[:1] in "[{"
    ]
    assert len(lines) >= 2 and len(texts) >= 6
    for text in lines + texts:
        assert jsonio.dumps(strict(text)) == text
        assert same_value(text, stdlib(json.loads(text)))


# --- the structures shared with the worker ----------------------------------------------------------------------


def test_a_message_mutated_after_the_call_does_not_reach_the_worker() -> None:
    """The user's own lists and dicts, changed in place after the call, are not what the worker reads (it reads what
    the span's text says)."""
    content = ["before"]
    message = {"role": "user", "content": content}

    def convert(m: dict[str, Any]) -> dict[str, Any]:
        return {"role": m["role"], "parts": [{"type": "x", "v": m["content"]}]}

    text = History(convert).json([message], Runtime())
    content[0] = "after"
    message["role"] = "system"
    step = dialects.to_step(record(chat_attributes(text, "[]")))
    assert step.inputs == json.loads(text)  # type: ignore[union-attr]
    assert step.inputs[0]["parts"][0]["v"] == ["before"]  # type: ignore[union-attr]
