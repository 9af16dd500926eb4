"""The user's own prices: a model served on their own hardware, a negotiated rate, a model the table does not know.

Given in a small YAML (or JSON) file, ``spanfold.init(prices="prices.yaml")`` or ``SPANFOLD_PRICES=prices.yaml``, or
in code, ``spanfold.init(prices=[...])``: a list of entries, each naming its model (or a list of names, matched
without regard to case), optionally the provider whose calls it prices (``gen_ai.provider.name``: ``openai``,
``ollama``, ...; without one, every provider's), and its prices in US dollars, by genai-prices's price names
(:data:`PRICE_KEYS`)::

    - model: llama3.2            # free: it runs on our own machine
      provider: ollama
      input_mtok: 0
      output_mtok: 0
    - model: [gpt-4o, gpt-4o-2024-08-06]
      provider: openai
      input_mtok: 2.00           # our negotiated rate, per million input tokens
      cache_read_mtok: 1.00
      output_mtok: 8.00

An entry replaces the table's price of its model whole: a kind of token it gives no price for is priced as
genai-prices prices a model without that price (cache reads and writes at the input price, reasoning at the output
price). An entry naming the provider wins over one that does not. A file or list that is not of this form is
refused when the options are read (``ValueError``, saying where: ``prices.yaml:7: ...``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

#: The prices an entry may give (genai-prices's names): US dollars per million input tokens (not read from or written
#: to a cache), cache reads, cache writes, output tokens, reasoning tokens, and per thousand requests.
PRICE_KEYS = (
    "input_mtok",
    "cache_read_mtok",
    "cache_write_mtok",
    "output_mtok",
    "output_reasoning_mtok",
    "requests_kcount",
)
#: The highest price taken, in US dollars per million tokens (or per thousand requests): far above any model's; past it
#: is a slip (a price per token written per million) or a number no cost can be made of (``1e400``, no float holds).
MAX_PRICE = 1_000_000
#: The longest prices file read (it is a short list).
MAX_FILE_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class PriceOverride:
    """One entry: the models it prices (lower case), the provider whose calls it prices (None: any), its prices."""

    models: frozenset[str]
    provider: str | None
    prices: tuple[tuple[str, Decimal], ...]


@dataclass(frozen=True, slots=True)
class PriceOverrides:
    """The user's prices, checked; ``origin`` says where they were given (a file's path, or ``prices``)."""

    entries: tuple[PriceOverride, ...]
    origin: str

    def find(self, model: str, provider: str | None) -> PriceOverride | None:
        """The entry that prices ``model`` called at ``provider``: one naming that provider, else one naming none."""
        name = model.lower()
        called = provider.lower() if provider else None
        anyone = None
        for entry in self.entries:
            if name not in entry.models:
                continue
            if entry.provider is None:
                anyone = anyone or entry
            elif entry.provider == called:
                return entry
        return anyone


def load(value: Any) -> PriceOverrides:
    """The user's prices from a path (str or ``os.PathLike``: a YAML or JSON file) or a list of entries given in code;
    ``ValueError`` saying what is wrong and where."""
    if isinstance(value, PriceOverrides):
        return value
    if isinstance(value, (str, os.PathLike)):
        return _from_file(Path(value))
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return PriceOverrides(tuple(_entry(item, f"prices[{n}]") for n, item in enumerate(value)), "prices")
    raise ValueError(f"prices: expected a file's path or a list of prices, not {type(value).__name__}")


def _from_file(path: Path) -> PriceOverrides:
    import yaml  # only when there is a prices file

    from spanfold.trace.read import (
        TOO_DEEP,
        TOO_LONG_NUMBER,
        reader_error_line,
        reader_error_problem,
        yaml_problem,
    )

    try:
        with path.open("rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"prices file {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"prices file {path}: longer than {MAX_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path}:1: not UTF-8 text") from None
    # Composed, checked, then built entry by entry: each problem found says its line (a file nested 200 kB deep, a
    # number of 5,000 digits, an alias inside itself).
    try:
        loader = yaml.SafeLoader(text)  # checks every character first
    except yaml.reader.ReaderError as exc:
        raise ValueError(
            f"{path}:{reader_error_line(text, exc)}: not YAML or JSON ({reader_error_problem(exc)})"
        ) from None
    line: int | None = None  # the entry being built (None: still composing)
    try:
        root = loader.get_single_node()
        if not isinstance(root, yaml.SequenceNode):
            raise ValueError(f"{path}:1: expected a list of prices (- model: ..., input_mtok: ..., output_mtok: ...)")
        found = yaml_problem(root)
        if found is not None:
            raise ValueError(f"{path}:{found[0].start_mark.line + 1}: {found[1]}")
        entries = []
        for node in root.value:
            line = node.start_mark.line + 1
            entries.append(_entry(loader.construct_object(node, deep=True), f"{path}:{line}"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        raise ValueError(f"{path}:{line}: not YAML or JSON ({getattr(exc, 'problem', None) or exc})") from None
    except RecursionError:
        raise ValueError(f"{path}:{line or loader.line + 1}: {TOO_DEEP}") from None
    except ValueError as exc:
        if str(exc).startswith(f"{path}:"):  # said here, or by _entry
            raise
        # an integer of more digits than Python converts (int() refuses past 4,300)
        raise ValueError(f"{path}:{line or loader.line + 1}: {TOO_LONG_NUMBER}") from None
    finally:
        loader.dispose()
    return PriceOverrides(tuple(entries), str(path))


def _entry(item: Any, where: str) -> PriceOverride:
    if not isinstance(item, Mapping):
        raise ValueError(f"{where}: expected an entry (model: ..., input_mtok: ..., output_mtok: ...)")
    unknown = sorted(str(k) for k in item if k not in ("model", "provider", *PRICE_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r} (an entry has model, provider, {', '.join(PRICE_KEYS)})")
    models = item.get("model")
    names = [models] if isinstance(models, str) else models
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n.strip() for n in names):
        raise ValueError(f"{where}: model: expected a model's name or a list of names")
    provider = item.get("provider")
    if provider is not None and not (isinstance(provider, str) and provider.strip()):
        raise ValueError(f"{where}: provider: expected a provider's name (gen_ai.provider.name, such as openai)")
    prices = tuple((key, _price(item[key], f"{where}: {key}")) for key in PRICE_KEYS if key in item)
    if not prices:
        raise ValueError(f"{where}: no price: give at least one of {', '.join(PRICE_KEYS)}")
    return PriceOverride(
        frozenset(n.strip().lower() for n in names), provider.strip().lower() if provider else None, prices
    )


def _price(value: Any, where: str) -> Decimal:
    """A price in US dollars: a number from 0 to :data:`MAX_PRICE` (a float read by its shortest spelling: 0.15 is
    0.15)."""
    expected = f"{where}: expected a number of US dollars from 0 to {MAX_PRICE:,}"
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Decimal)):
        raise ValueError(expected)
    try:
        price = value if isinstance(value, Decimal) else Decimal(str(value).strip())
    except (ArithmeticError, ValueError):  # not a number; an integer of more digits than str() converts
        raise ValueError(f"{expected}, not {_shown(value)}") from None
    if not price.is_finite() or not 0 <= price <= MAX_PRICE:  # NaN, 1e400 (no float holds it), -1
        raise ValueError(f"{expected}, not {_shown(value)}")
    return price


def _shown(value: Any) -> str:
    """``value`` as written, clipped (a price of 5,000 digits is not repeated back whole)."""
    try:
        text = repr(value)
    except ValueError:  # an integer past the digits str() converts
        return "a number of too many digits"
    return text if len(text) <= 40 else f"{text[:37]}..."
