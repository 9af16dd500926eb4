"""Prices that no cost can be made of (issue 45, item 3): refused at ``init()`` with ``FILE:LINE``; and should one reach
the fold anyway (a :class:`PriceOverrides` built in code, a table entry), no cost is written that is not a finite sum
of its parts: the call is left unpriced and counted."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import spanfold
from spanfold.config import ConfigError
from spanfold.pricing import overrides, table
from spanfold.pricing.overrides import PriceOverride, PriceOverrides
from spanfold.trace.model import Usage

from .test_cost import known_usage, metas, models, run_weather

genai_prices = pytest.importorskip("genai_prices")

#: name -> (the prices file, the line the problem is on, words the problem says).
BAD_FILES: dict[str, tuple[str, int, str]] = {
    "200-kB-of-nested-brackets": ("[" * 200_000, 1, "nested too deeply"),
    "nested-brackets-in-an-entry": ("- model: " + "[" * 50_000 + "\n", 1, "nested too deeply"),
    "a-5000-digit-price": ("- model: a\n  output_mtok: 1\n- model: b\n  input_mtok: " + "9" * 5000 + "\n", 3, "digits"),
    "1e400": ("- model: llama3.2\n  input_mtok: 1e400\n", 1, "input_mtok"),
    "1.0e+400": ("- model: llama3.2\n  output_mtok: 1.0e+400\n", 1, "output_mtok"),
    "400-digits": ("- model: a\n  input_mtok: 1\n- model: b\n  input_mtok: " + "9" * 400 + "\n", 3, "input_mtok"),
    "nan": ("- model: a\n  input_mtok: .nan\n", 1, "input_mtok"),
    "infinity-in-json": ('[{"model": "a", "input_mtok": 1E400}]', 1, "input_mtok"),
    "an-alias-to-itself": ("- &a {model: a, input_mtok: 1, output_mtok: *a}\n", 1, "contains itself"),
}


@pytest.mark.parametrize("name", BAD_FILES)
def test_a_prices_file_no_cost_can_be_made_of_is_refused_at_init_with_file_and_line(name: str, tmp_path: Path) -> None:
    text, line, words = BAD_FILES[name]
    prices = tmp_path / ("prices.json" if text.startswith("[{") else "prices.yaml")
    prices.write_text(text)
    with pytest.raises(ValueError) as caught:  # ConfigError is a ValueError
        spanfold.init(output=str(tmp_path / "out"), prices=str(prices))
    assert isinstance(caught.value, ConfigError)
    message = str(caught.value)
    assert message.startswith(f"prices: {prices}:{line}: "), message
    assert words in message, message
    assert len(message) < 300, message  # says where, never quotes 5,000 digits back
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("price", "words"),
    [
        (1e400, "input_mtok"),
        ("1e400", "input_mtok"),
        (10**400, "input_mtok"),
        (10**5000, "input_mtok"),
        (Decimal("1e400"), "input_mtok"),
        (Decimal("-0.5"), "input_mtok"),
        (Decimal("NaN"), "input_mtok"),
    ],
    ids=["float-inf", "string", "400-digit-int", "5000-digit-int", "decimal", "negative-decimal", "nan-decimal"],
)
def test_prices_given_in_code_are_refused_the_same(price: Any, words: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        spanfold.init(output=str(tmp_path / "out"), prices=[{"model": "a", "input_mtok": price}])
    assert str(caught.value).startswith("prices: prices[0]: input_mtok: ")
    assert len(str(caught.value)) < 300


def test_the_largest_price_allowed_is_still_a_price() -> None:
    (entry,) = overrides.load([{"model": "a", "input_mtok": overrides.MAX_PRICE}]).entries
    assert entry.prices == (("input_mtok", Decimal(overrides.MAX_PRICE)),)
    with pytest.raises(ValueError, match=r"prices\[0\]: input_mtok: "):
        overrides.load([{"model": "a", "input_mtok": overrides.MAX_PRICE * 10}])


# --- the table's guard ---------------------------------------------------------------------------------------------


def _unchecked(**prices: Decimal) -> PriceOverride:
    """An entry built past :func:`overrides.load`'s checks."""
    return PriceOverride(frozenset({"llama3.2"}), None, tuple(prices.items()))


@pytest.mark.parametrize(
    "prices",
    [
        {"input_mtok": Decimal("1e400")},
        {"input_mtok": Decimal("Infinity"), "output_mtok": Decimal(1)},
        {"output_mtok": Decimal("NaN")},
        {"input_mtok": Decimal(-1), "output_mtok": Decimal(1)},
        {"requests_kcount": Decimal("1e400")},
        {"input_mtok": Decimal("1.5e308"), "output_mtok": Decimal("1.5e308")},  # finite parts, a sum past a float
    ],
    ids=["1e400", "infinity", "nan", "negative", "per-request-1e400", "sum-past-a-float"],
)
def test_the_table_prices_nothing_at_a_price_that_is_not_finite_or_negative(prices: dict[str, Decimal]) -> None:
    price = table.override_price(_unchecked(**prices))
    parts = None if price is None else table.split(price, Usage(1_000_000, 1_000_000))
    assert parts is None


def test_a_finite_price_splits_into_finite_parts() -> None:
    price = table.override_price(_unchecked(input_mtok=Decimal("0.5"), output_mtok=Decimal("1.5")))
    parts = table.split(price, Usage(1200, 40))
    assert parts == {"input": Decimal("0.0006"), "output": Decimal("0.00006")}


def test_no_cost_is_written_at_a_price_past_a_float(tmp_path: Path) -> None:
    """A price of 1e400 built in code, past init()'s checks: before, every priced call was written with
    ``cost.amount: null`` and ``by_kind.other: -1.0``; now the calls are unpriced and counted."""
    prices = PriceOverrides((_unchecked(input_mtok=Decimal("1e400"), output_mtok=Decimal(1)),), "test")
    run_weather("ollama", tmp_path, known_usage(), prices=prices)
    (meta,) = metas(tmp_path)
    assert "null" not in json.dumps(meta.get("cost") or {})
    for step in models(meta):
        assert "cost" not in step, step["cost"]
    assert meta.get("cost") is None or meta["cost"]["unpriced_steps"] == 3
    for value in _numbers(meta.get("cost")):
        assert math.isfinite(value) and value >= 0


def _numbers(value: Any) -> list[float]:
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    return [value] if isinstance(value, float) else []
