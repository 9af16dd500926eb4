"""The configuration entry points, fuzzed: prices files and prices given in code, every ``SPANFOLD_*`` / ``OTEL_*``
variable config.py reads, ``init()``'s keyword arguments, and the receiver's protobuf bodies. The property: the value
is taken, or refused with a ``ValueError`` (``ConfigError``) naming where it came from (the file and line, the
variable, the argument); never another exception or a hang."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

import spanfold
from spanfold import config
from spanfold.exporter.otlp.common import OtlpError
from spanfold.exporter.otlp.proto_in import decode_body
from spanfold.pricing import overrides

from .conftest import FUZZ, ODD_VALUES, Corpus, dumps, mutated_bytes, mutated_value, no_hang, write

PRICES = [
    {"model": "llama3.2", "provider": "ollama", "input_mtok": 0, "output_mtok": 0},
    {"model": ["gpt-4o", "gpt-4o-2024-08-06"], "provider": "openai", "input_mtok": 2.0, "cache_read_mtok": 1.0,
     "output_mtok": 8.0, "requests_kcount": 0.5},
]  # fmt: skip


def _sound(loaded: overrides.PriceOverrides) -> None:
    for entry in loaded.entries:
        for _, price in entry.prices:
            assert price.is_finite() and 0 <= price <= overrides.MAX_PRICE and math.isfinite(float(price))


@st.composite
def prices_file(draw: st.DrawFn) -> tuple[str, bytes]:
    value: Any = draw(mutated_value(PRICES))
    as_json = draw(st.booleans())
    if as_json:
        data = dumps(value).encode()
    else:
        try:
            data = yaml.safe_dump(value, sort_keys=False).encode()
        except yaml.YAMLError:
            data = dumps(value).encode()
    if draw(st.integers(0, 2)) == 0:
        data = draw(mutated_bytes(data))
    return ("prices.json" if as_json else "prices.yaml"), data


def test_prices_files(in_tmp: Path) -> None:
    @FUZZ
    @given(file=prices_file())
    def check(file: tuple[str, bytes]) -> None:
        path = write(Path(file[0]), file[1])
        try:
            with no_hang():
                loaded = config.load({"prices": path}, environ={})
        except config.ConfigError as exc:
            message = str(exc)
            assert message.startswith((f"prices: {path}:", f"prices: prices file {path}:")), message
            assert len(message) < 400, message
        else:
            assert loaded.prices is not None
            _sound(loaded.prices)

    check()


def test_prices_given_in_code() -> None:
    @FUZZ
    @given(value=mutated_value(PRICES))
    def check(value: Any) -> None:
        try:
            loaded = config.load({"prices": value}, environ={})
        except config.ConfigError as exc:
            assert str(exc).startswith("prices: "), str(exc)
            assert len(str(exc)) < 400
        else:
            if loaded.prices is not None:
                _sound(loaded.prices)

    check()


#: Every variable config.py reads, and a valid value of each.
ENV = {var: opt for opt in config.OPTIONS.values() for var in opt.env}
VALID = {
    "SPANFOLD_FORMAT": "agentv", "SPANFOLD_CAPTURE_CONTENT": "false",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY", "SPANFOLD_TOOL_DEFINITIONS": "full",
    "SPANFOLD_MAX_QUEUE_SIZE": "100", "SPANFOLD_TRACE_TIMEOUT": "2.5", "SPANFOLD_ROTATE_BYTES": "64MiB",
    "SPANFOLD_ROTATE_WHEN": "midnight", "SPANFOLD_KEEP_DAYS": "7", "SPANFOLD_INSTRUMENT": "openai,anthropic",
}  # fmt: skip
ODD_TEXT = st.sampled_from(
    ["", " ", "0", "-1", "1e400", "1e-400", "nan", "inf", "9" * 400, "9" * 5000, "1.5", "0x10", "true", "none",
     "64KiB", "9" * 30 + "GiB", "\x00", "\ud800", "é", "١٢", "a,,b", "x" * 10_000]
)  # fmt: skip


@st.composite
def environments(draw: st.DrawFn) -> dict[str, str]:
    names = draw(st.lists(st.sampled_from(sorted(ENV)), min_size=1, max_size=4, unique=True))
    env = {}
    for name in names:
        valid = VALID.get(name, "1")
        env[name] = draw(ODD_TEXT | st.text(max_size=12) | st.just(valid) | st.just(valid + draw(st.text(max_size=3))))
    return env


def test_environment_values() -> None:
    @FUZZ
    @given(env=environments())
    def check(env: dict[str, str]) -> None:
        env = {k: v for k, v in env.items() if k != "SPANFOLD_PRICES" or not v.strip() or Path(v).name == v}
        try:
            config.load(None, environ=env)
        except config.ConfigError as exc:
            message = str(exc)
            named = message.startswith(tuple(env)) or message.startswith("keep_files and keep_days")
            assert named, message
            assert len(message) < 400, message

    check()


ARGUMENT_VALUES = st.sampled_from(ODD_VALUES) | st.sampled_from(
    [1, 0.5, 10**400, 1e300, "1", "true", "9" * 5000, ["openai"], ("x",), b"bytes", Path("p"), object()]
)


def test_init_arguments_through_config() -> None:
    @FUZZ
    @given(kwargs=st.dictionaries(st.sampled_from(sorted(config.OPTIONS)), ARGUMENT_VALUES, min_size=1, max_size=3))
    def check(kwargs: dict[str, Any]) -> None:
        kwargs.pop("redact", None)  # a callable too: the Runtime checks it (TypeError naming redact)
        if isinstance(kwargs.get("prices"), str) and kwargs["prices"].strip():
            kwargs["prices"] = None  # a path: the prices fuzzers' part
        try:
            config.load(kwargs, environ={})
        except config.ConfigError as exc:
            message = str(exc)
            assert message.startswith(tuple(kwargs)) or message.startswith("keep_files and keep_days"), message
            assert len(message) < 400, message

    check()


def test_init_itself_takes_or_refuses_its_arguments(tmp_path: Path, _global_provider: Any) -> None:
    """The real ``spanfold.init()`` (a few arguments each, being slow): a value taken sets spanfold up, one refused
    raises a ValueError naming the argument and sets nothing up."""

    @FUZZ
    @given(kwargs=st.dictionaries(st.sampled_from(["format", "capture_content", "max_queue_size", "trace_timeout",
                                                    "instrument", "otlp", "rotate_bytes", "stitch_idle"]),
                                  ARGUMENT_VALUES, min_size=1, max_size=2))  # fmt: skip
    def check(kwargs: dict[str, Any]) -> None:
        if "otlp" in kwargs and isinstance(kwargs["otlp"], str):
            kwargs["otlp"] = None  # an endpoint: nothing to send to here
        try:
            with no_hang():
                spanfold.init(output=str(tmp_path / "out"), instrument=kwargs.pop("instrument", ()), **kwargs)
        except ValueError as exc:
            assert str(exc).split("=")[0].split(":")[0] in {*kwargs, "instrument"}, str(exc)
        else:
            spanfold.shutdown()

    check()


def test_receiver_protobuf_bodies(corpus: Corpus) -> None:
    """What ``spanfold serve`` decodes from an OTLP/protobuf request: spans, or ``OtlpError`` (a 400)."""

    @FUZZ
    @given(body=mutated_bytes(corpus.otlp_proto))
    def check(body: bytes) -> None:
        try:
            with no_hang():
                decode_body(body)
        except OtlpError:
            pass

    check()


def test_seeds_are_valid(corpus: Corpus, tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(yaml.safe_dump(PRICES))
    _sound(config.load({"prices": str(prices)}, environ={}).prices)
    config.load(None, environ=VALID)
    assert decode_body(corpus.otlp_proto) is not None
    assert json.loads(corpus.otlp_json.splitlines()[0])
    assert Decimal(0) == overrides.load(PRICES).entries[0].prices[0][1]
