"""What the fuzzers found, each kept as it was found (issue 45)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import spanfold
from spanfold import config
from spanfold.checks.errors import SpecError
from spanfold.checks.spec import loads_spec
from spanfold.commands import convert
from spanfold.pricing import overrides

from .conftest import run_cli

# --- a NUL (or another character YAML refuses) in a YAML file: PyYAML's reader refuses it when the loader is made,
# --- before the guarded parse: a ReaderError traceback out of show / validate / convert / check, and out of init()


def test_a_yaml_trace_file_with_a_nul_is_refused_with_its_line(in_tmp: Path) -> None:
    Path("t.yaml").write_bytes(b"- {role: user, content: hi}\n- {role: assistant, content: \x00}\n")
    for args in (["show"], ["validate"], ["convert", "--to", "compact", "-o", "out.yaml"]):
        outcome = run_cli(*args, "t.yaml")
        assert outcome.exception is None, outcome.exception
        assert outcome.code == 2
        assert outcome.stderr.startswith("t.yaml:2: not valid YAML: unacceptable character #x0000"), outcome.stderr
    assert not Path("out.yaml").exists()


def test_a_spec_with_a_nul_is_refused_with_its_line() -> None:
    with pytest.raises(SpecError, match=r"^s\.yaml:3: not valid YAML: unacceptable character #x0000"):
        loads_spec("checks:\n  - type: tool_trajectory\n    expected: [a\x00]\n", file="s.yaml")


def test_a_prices_file_with_a_nul_is_refused_with_its_line(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_bytes(b"- model: a\n  input_mtok: 1\x00\n")
    with pytest.raises(config.ConfigError, match=rf"^prices: {prices}:2: not YAML or JSON \(unacceptable character"):
        config.load({"prices": str(prices)}, environ={})


# --- convert: an unexpected failure (that ReaderError) left its temporary output files behind ----------------------


def test_convert_leaves_no_partial_output_when_it_fails_unexpectedly(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Path("t.jsonl").write_text('[{"role": "user", "content": "hi"}]\n')

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(convert.formats, "meta_line", boom)
    (in_tmp / "out").mkdir()
    outcome = run_cli("convert", "t.jsonl", "--to", "invariant", "-o", "out/converted.jsonl")
    assert isinstance(outcome.exception, RuntimeError)
    assert list((in_tmp / "out").iterdir()) == []


# --- init() arguments of the wrong type or past what the code holds: a TypeError or AttributeError from deep inside
# --- setup, an OverflowError on every write (keep_days), or silently taken (rotate_bytes=[1])


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"instrument": 5}, "instrument"),
        ({"otlp": 5}, "otlp"),
        ({"output": 5}, "output"),
        ({"rotate_bytes": [1]}, "rotate_bytes"),
        ({"capture_content": []}, "capture_content"),
        ({"max_queue_size": True}, "max_queue_size"),
        ({"max_queue_size": 10**400}, "max_queue_size"),
        ({"trace_timeout": 1e300}, "trace_timeout"),
        ({"keep_days": 10**400, "rotate_bytes": 4096}, "keep_days"),
        ({"format": 5}, "format"),
    ],
    ids=lambda v: "-".join(v) if isinstance(v, dict) else None,
)
def test_init_refuses_an_argument_it_cannot_use_naming_it(kwargs: dict[str, Any], named: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError) as caught:
        spanfold.init(output=str(tmp_path / "out"), **kwargs) if "output" not in kwargs else spanfold.init(**kwargs)
    assert isinstance(caught.value, config.ConfigError)
    assert str(caught.value).startswith(f"{named}="), str(caught.value)
    assert len(str(caught.value)) < 200
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("SPANFOLD_MAX_QUEUE_SIZE", "9" * 5000),
        ("SPANFOLD_TRACE_TIMEOUT", "1e300"),
        ("SPANFOLD_ROTATE_BYTES", "9" * 30 + "GiB"),
        ("SPANFOLD_FORMAT", "x" * 10_000),
    ],
)
def test_a_variable_past_what_spanfold_holds_is_refused_without_repeating_it_whole(var: str, value: str) -> None:
    with pytest.raises(config.ConfigError) as caught:
        config.load(None, environ={var: value})
    assert str(caught.value).startswith(f"{var}="), str(caught.value)
    assert len(str(caught.value)) < 200


def test_a_price_past_the_maximum_quoted_short() -> None:
    with pytest.raises(ValueError, match=r"^prices\[0\]: input_mtok: .*, not 9+\.\.\.$"):
        overrides.load([{"model": "a", "input_mtok": int("9" * 400)}])
