"""Prices from genai-prices (the ``cost`` extra), and what a call's tokens cost at a price, by kind of token.

* :func:`table_price`: the price of a model at a provider on a date, from the snapshot genai-prices holds: the one it
  bundles, unless the program started genai-prices's ``UpdatePrices`` (then what that fetched). spanfold never starts
  it: nothing here reaches the network. None when the table does not know the model (or the provider), never a guess.
* :func:`override_price`: an entry of the user's prices (:mod:`~spanfold.pricing.overrides`) as a genai-prices price.
* :func:`split`: what a :class:`~spanfold.trace.model.Usage` costs at a price, by kind of token
  (:data:`~spanfold.trace.model.COST_KINDS`), computed by genai-prices; the kinds add up to its total exactly.

genai-prices is imported on the first price asked for that the memo of earlier processes' lookups
(:mod:`~spanfold.pricing.memo`, :func:`remember_in`) does not hold (on the fold's worker, never by
``spanfold.init()``); a price the memo holds is a :class:`Rates`. Without genai-prices installed :func:`available` is
False and nothing is priced.
"""

from __future__ import annotations

import math
import sys
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any

from spanfold.pricing import memo as memos
from spanfold.pricing.overrides import PriceOverride
from spanfold.trace.model import Usage

#: Models looked up (a hit or a miss) kept per snapshot before the memo starts again.
MAX_REMEMBERED = 1024
#: The prices of what a model call's usage counts (:class:`~spanfold.trace.model.Usage`): a price's others (per
#: modality, per web search, ...) charge units spanfold never reports, 0 of them, and are left out.
COUNTED = (
    "input_mtok",
    "cache_read_mtok",
    "cache_write_mtok",
    "output_mtok",
    "output_reasoning_mtok",
    "requests_kcount",
)
_ZERO = Decimal(0)


class _Table:
    """genai-prices, imported, and what was looked up in it: models by (name, provider), per snapshot; each price's
    prices of one kind of token; the user's entries as prices."""

    def __init__(self) -> None:
        import genai_prices
        from genai_prices import data_snapshot, types

        self.module = genai_prices
        self.snapshots = data_snapshot
        self.types = types
        self.snapshot: Any = None
        self.models: dict[tuple[str, str | None, str | None], Any] = {}
        self.kinds: dict[int, tuple[Any, _Priced | None]] = {}
        self.overrides: dict[PriceOverride, Any] = {}

    def model(self, name: str, provider: str | None, api_url: str | None = None) -> Any:
        """The model ``name`` at the provider whose API ``api_url`` is (given), else at ``provider``; None when the
        table knows no such provider or model."""
        snapshot = self.snapshots.get_snapshot()
        if snapshot is not self.snapshot or len(self.models) >= MAX_REMEMBERED:
            self.snapshot, self.models, self.kinds = snapshot, {}, {}
        key = (name, None, api_url) if api_url is not None else (name, provider, None)
        if key not in self.models:
            try:
                _, self.models[key] = snapshot.find_provider_model(name, None, key[1], api_url)
            except LookupError:
                self.models[key] = None
        return self.models[key]

    def bundled(self) -> bool:
        """Whether prices come from the table genai-prices bundles (not one the program fetched or set): what the memo
        keeps."""
        return getattr(self.snapshots, "_custom_snapshot", self) is None

    def days(self, info: Any, when: datetime) -> tuple[date | None, date | None] | None:
        """The UTC days on which ``info``'s price at ``when`` is its price (from, up to and not on; None: unbounded), as
        genai-prices picks among prices that start on a date; None for a price that depends on the time of day."""
        prices = info.prices
        if isinstance(prices, self.types.ModelPrice):
            return None, None
        if not all(p.constraint is None or isinstance(p.constraint, self.types.StartDateConstraint) for p in prices):
            return None
        for index in range(len(prices) - 1, -1, -1):  # genai-prices: the last price that applies
            constraint = prices[index].constraint
            if constraint is None or constraint.active(when):
                later = [p.constraint.start_date for p in prices[index + 1 :]]  # none applies yet
                return (None if constraint is None else constraint.start_date), min(later, default=None)
        return None  # none applies: genai-prices falls back to the first, whatever the day

    def provider_at(self, api_url: str) -> str | None:
        """The id of the provider whose API ``api_url`` is; None when the table knows none."""
        try:
            return str(self.snapshots.get_snapshot().find_provider(None, None, api_url).id)
        except LookupError:
            return None

    def counted(self, price: Any) -> _Priced | None:
        """``price`` with only its :data:`COUNTED` prices, and that as one price per kind of token it charges: that
        kind's prices kept, every other one 0 (the same prices set, so genai-prices counts the tokens alike and each
        kind's amount is its share of the total); None when it has no price of tokens."""
        held = self.kinds.get(id(price))
        if held is not None and held[0] is price:
            return held[1]
        given = {key: getattr(price, key) for key in COUNTED if getattr(price, key, None) is not None}
        out: _Priced | None = None
        if given and all(_sound(value) for value in given.values()):
            kinds = {
                kind: {k: v if _kind(k) == kind else _ZERO for k, v in given.items()} for kind in map(_kind, given)
            }
            tiered = any(isinstance(value, self.types.TieredPrices) for value in given.values())
            out = _Priced(
                self,
                self.types.ModelPrice(**given),
                {kind: self.types.ModelPrice(**kept) for kind, kept in kinds.items()},
                tiered,
            )
        if len(self.kinds) >= MAX_REMEMBERED:
            self.kinds = {}
        self.kinds[id(price)] = (price, out)
        return out


class Rates:
    """A price without tiers as what genai-prices charges for it: per token of each kind (:data:`memos.KINDS`), and
    per call beside its tokens (``other``), in US dollars. Computed once per price (:class:`_Priced`), or read from the
    memo."""

    __slots__ = ("by_kind",)

    def __init__(self, by_kind: dict[str, Decimal]) -> None:
        self.by_kind = by_kind


_table: _Table | None = None
_missing = False
#: Where the memo is kept (:func:`remember_in`; None: not kept), and the memo once read.
_memo_folder: Any = None
_memo: memos.Memo | None = None
_memo_read = False


def _get() -> _Table | None:
    global _table, _missing
    if _table is None and not _missing:
        try:
            _table = _Table()
        except ImportError:
            _missing = True
    return _table


def remember_in(setting: str | None) -> None:
    """Keep the memo of lookups where the ``price_cache`` option says (:func:`memos.directory`; ``off``: not kept)."""
    global _memo_folder, _memo, _memo_read
    folder = memos.directory(setting)
    if folder != _memo_folder:
        _memo_folder, _memo, _memo_read = folder, None, False


def _the_memo() -> memos.Memo | None:
    global _memo, _memo_read
    if not _memo_read:
        _memo_read = True
        version = memos.table_version() if _memo_folder is not None else None
        if version is not None:
            _memo = memos.Memo(_memo_folder, version)
    return _memo


def _answering() -> memos.Memo | None:
    """The memo a lookup reads: there is one, and genai-prices is not imported yet (once it is, by spanfold or by the
    program, it answers: the program may have given it prices of its own). None: genai-prices answers."""
    if _table is not None or "genai_prices" in sys.modules:
        return None
    return _the_memo()


def available() -> bool:
    """Whether genai-prices is installed here (``pip install 'spanfold[cost]'``): asked of the memo when it holds
    lookups, else by importing it."""
    if not _missing:
        memo = _answering()
        if memo is not None and len(memo):
            return True
    return _get() is not None


def load() -> None:
    """What the first price asked for would read, read now (the folding worker's preparation, in a quiet moment of the
    application): the memo of earlier lookups when it holds some, else genai-prices' table (150-400 ms of CPU)."""
    memo = _answering()
    if memo is not None and len(memo):
        return
    table = _get()
    if table is not None:
        table.snapshots.get_snapshot()


def table_price(model: str, provider: str | None, when_ns: int, api_url: str | None = None) -> Any | None:
    """The table's price of ``model`` at the provider whose API ``api_url`` is (:mod:`~spanfold.pricing.endpoints`),
    else at ``provider`` (``gen_ai.provider.name``; None: the provider whose models match the name), for a call made at
    ``when_ns`` (ns since the epoch): a genai-prices price, or its :class:`Rates` from the memo; None: the table does
    not know it."""
    when = datetime.fromtimestamp(when_ns / 1e9, tz=timezone.utc)
    key = ("model", model, "" if api_url is not None else provider or "", api_url or "")
    answering = _answering()
    if answering is not None:
        found = answering.model(key, when.date())
        if found is not memos.MISSING:
            return None if found is None else Rates(found[0])
    table = _get()
    if table is None:
        return None
    info = table.model(model, provider, api_url)
    price = None if info is None else info.get_prices(when)
    memo = _the_memo()
    if memo is not None and table.bundled() and memo.model(key, when.date()) is memos.MISSING:
        _remember(memo, table, key, info, price, when)
    return price


def _remember(memo: memos.Memo, table: _Table, key: memos.Key, info: Any, price: Any, when: datetime) -> None:
    """Keep what the table answered in the memo, when it is a price the memo can hold (flat rates, set by the day)."""
    if info is None:
        memo.remember_model(key, None)
        return
    days = table.days(info, when)
    priced = table.counted(price)
    if days is not None and priced is not None and priced.rates is not None:
        memo.remember_model(key, priced.rates.by_kind, *days)


def provider_at(api_url: str) -> str | None:
    """The table's provider whose API ``api_url`` is (None: none, or no table)."""
    answering = _answering()
    if answering is not None:
        found = answering.endpoint(api_url)
        if found is not memos.MISSING:
            return found
    table = _get()
    if table is None:
        return None
    provider = table.provider_at(api_url)
    memo = _the_memo()
    if memo is not None and table.bundled() and memo.endpoint(api_url) is memos.MISSING:
        memo.remember_endpoint(api_url, provider)
    return provider


def override_price(entry: PriceOverride) -> Any | None:
    """The user's entry as a genai-prices price, or its :class:`Rates` from the memo (None: genai-prices is not
    installed)."""
    key = ("override", *(f"{name}={value}" for name, value in entry.prices))
    answering = _answering()
    if answering is not None:
        found = answering.model(key, date.min)
        if found is not memos.MISSING and found is not None:
            return Rates(found[0])
    table = _get()
    if table is None:
        return None
    price = table.overrides.get(entry)
    if price is None:
        price = table.overrides[entry] = table.types.ModelPrice(**dict(entry.prices))
        priced = table.counted(price)
        memo = _the_memo()
        if memo is not None and priced is not None and priced.rates is not None:
            memo.remember_model(key, priced.rates.by_kind)
    return price


def split(price: Any, usage: Usage) -> dict[str, Decimal] | None:
    """What ``usage`` costs at ``price`` (from :func:`table_price` or :func:`override_price`) by kind of token:
    ``input`` and ``output`` always, ``cache_read``, ``cache_write``, ``reasoning`` when the call had such tokens,
    ``other`` when the price charges more (a fee per request). A kind the price has no price of is charged as
    genai-prices charges it (cache tokens at the input price, reasoning at the output price). None when the usage does
    not add up (more cache tokens than input tokens), the price has no price of tokens, or one that is not a finite
    number >= 0 (``1e400``, ``NaN``, ``-1``: a price built past :mod:`~spanfold.pricing.overrides`'s checks), or the
    cost or one of its parts is past what a float holds: no cost is written that is not a finite sum of its parts."""
    if usage.cache_read_tokens + usage.cache_write_tokens > usage.input_tokens:
        return None
    if usage.reasoning_tokens > usage.output_tokens:
        return None
    if isinstance(price, Rates):
        parts: dict[str, Decimal] | None = _charge(price, usage)
    else:
        table = _get()
        priced = None if table is None else table.counted(price)
        if priced is None:
            return None
        parts = priced.split(usage)
    if parts is None or not all(_finite(part) for part in parts.values()) or not _finite(sum(parts.values(), _ZERO)):
        return None  # a cost no float holds: never written (as null, beside parts that do not add up to it)
    return parts


def _finite(amount: Decimal) -> bool:
    """A cost that can be written: a finite number >= 0, in a float too."""
    return amount.is_finite() and amount >= 0 and math.isfinite(float(amount))


def _sound(value: Any) -> bool:
    """A price (a rate, or genai-prices's ``TieredPrices``: a base rate and the tiers') that is a finite number >= 0
    (a price built past :mod:`~spanfold.pricing.overrides`'s checks may hold ``1e400``, ``NaN`` or ``-1``)."""
    if isinstance(value, Decimal):
        return _finite(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return math.isfinite(value) and value >= 0
    base, tiers = getattr(value, "base", None), getattr(value, "tiers", None)
    if base is None or not isinstance(tiers, list):
        return False
    return _sound(base) and all(_sound(getattr(tier, "price", None)) for tier in tiers)


class _Priced:
    """A price of tokens (its :data:`COUNTED` prices), as genai-prices charges it: :meth:`computed` asks genai-prices
    (its total, and each kind's share: the price of that kind alone); a price without tiers (one rate per token,
    whatever the call's size) is asked once, for its rate per token of each kind, and then charges ``tokens * rate``,
    the same product genai-prices takes."""

    __slots__ = ("kinds", "price", "rates", "table")

    def __init__(self, table: _Table, price: Any, kinds: dict[str, Any], tiered: bool) -> None:
        self.table, self.price, self.kinds = table, price, kinds
        self.rates: Rates | None = None
        if not tiered:
            million = 1_000_000
            plain = self.computed(Usage(million, million))
            detailed = self.computed(Usage(2 * million, 2 * million, million, million, million))
            if plain is not None and detailed is not None:
                rates = {kind: amount / million for kind, amount in plain.items() if kind != "other"}
                rates.update((d, detailed[d] / million) for d in ("cache_read", "cache_write", "reasoning"))
                rates["other"] = plain.get("other", _ZERO)
                self.rates = Rates(rates)

    def split(self, usage: Usage) -> dict[str, Decimal] | None:
        return self.computed(usage) if self.rates is None else _charge(self.rates, usage)

    def computed(self, usage: Usage) -> dict[str, Decimal] | None:
        """The split as genai-prices computes it, or None when it refuses the usage."""
        tokens = {
            "cache_read": usage.cache_read_tokens,
            "cache_write": usage.cache_write_tokens,
            "reasoning": usage.reasoning_tokens,
        }
        counted = self.table.module.Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            output_reasoning_tokens=usage.reasoning_tokens,
        )
        kinds = self.kinds
        try:
            whole = self.price.calc_price(counted)
            parts = {k: kinds[k].calc_price(counted)["total_price"] for k, n in tokens.items() if n and k in kinds}
        except ValueError:  # genai-prices refuses usage that does not add up
            return None
        out: dict[str, Decimal] = {}
        sides = (
            ("input", usage.input_tokens, whole["input_price"], ("cache_read", "cache_write")),
            ("output", usage.output_tokens, whole["output_price"], ("reasoning",)),
        )
        for base, total_tokens, amount, details in sides:
            # a kind without a price of its own is charged at the base's: its tokens' share of what the base charged
            rest = amount - sum((parts.get(d, _ZERO) for d in details), _ZERO)
            at_base = total_tokens - sum(tokens[d] for d in details if d in parts)
            shares = {d: rest * tokens[d] / at_base for d in details if tokens[d] and d not in parts and at_base > 0}
            out[base] = rest - sum(shares.values(), _ZERO)
            out.update((d, parts.get(d, shares.get(d, _ZERO))) for d in details if tokens[d])
        other = whole["total_price"] - whole["input_price"] - whole["output_price"]
        if other:
            out["other"] = other
        return out


def _charge(rates: Rates, usage: Usage) -> dict[str, Decimal]:
    """What ``usage`` costs at flat ``rates``, by kind of token: the tokens of each kind times its rate, the same
    product genai-prices takes."""
    by_kind = rates.by_kind
    cache_read, cache_write, reasoning = usage.cache_read_tokens, usage.cache_write_tokens, usage.reasoning_tokens
    out = {
        "input": (usage.input_tokens - cache_read - cache_write) * by_kind["input"],
        "output": (usage.output_tokens - reasoning) * by_kind["output"],
    }
    for kind, tokens in (("cache_read", cache_read), ("cache_write", cache_write), ("reasoning", reasoning)):
        if tokens:
            out[kind] = tokens * by_kind[kind]
    if by_kind["other"]:
        out["other"] = by_kind["other"]
    return out


def _kind(price_key: str) -> str:
    """The kind of token a genai-prices price name charges (``cache_text_read_mtok`` -> ``cache_read``)."""
    if price_key.startswith("cache"):
        return "cache_read" if "_read" in price_key else "cache_write"
    if price_key.startswith("output"):
        return "reasoning" if "reasoning" in price_key else "output"
    return "input" if price_key.startswith("input") else "other"
