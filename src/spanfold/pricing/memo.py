"""What genai-prices answered, kept on disk for the next process: its price lookups without importing it.

Importing genai-prices builds pydantic models and its whole table (150-400 ms of CPU, holding the GIL the
application's first calls need). A process that prices the same models as the last one reads their rates here instead,
and imports genai-prices only for what the memo does not hold.

One small JSON file (``prices.json``) in the cache directory (:func:`directory`), valid for one genai-prices table
(its data module's size and modification time: an upgrade or a reinstall starts it again). It holds what lookups in the
table genai-prices bundles answered (never in one the program fetched with ``UpdatePrices``):

* a model's flat rates per token, by kind of token, and the UTC days they hold on (a price with tiers, or one that
  depends on the time of day, is not kept: it is asked of genai-prices each time);
* a model the table does not know;
* the provider whose API a URL is, or none.

Written whole to a temporary file renamed over the old one, merged with what another process wrote meanwhile; a file
that cannot be read, or holds something other than the above, is ignored (counted, ``price_memo.unusable``) and
written again; one that cannot be written is tried once per process. At most :data:`MAX_ENTRIES` entries.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from spanfold import counters

#: The file's format; a file of another one is read as empty.
FORMAT = 1
#: Models (and endpoints) kept at most: past it, what is new is asked of genai-prices and not written.
MAX_ENTRIES = 512
#: The kinds of token a rate is kept for (:class:`~spanfold.pricing.table.Rates`).
KINDS = ("input", "output", "cache_read", "cache_write", "reasoning", "other")
#: A lookup the memo does not hold (None is an answer: the table does not know the model).
MISSING: Any = object()

RateMap = dict[str, Decimal]
#: What a lookup asked: ``("model", name, provider, api_url)`` (empty strings for none), ``("override", price, ...)``.
Key = tuple[str, ...]


def directory(setting: str | None) -> Path | None:
    """Where the memo is kept: ``setting`` (the ``price_cache`` option: a directory, or ``off``), else the user's
    cache directory (``$XDG_CACHE_HOME``, ``~/.cache``; ``%LOCALAPPDATA%`` on Windows, ``~/Library/Caches`` on macOS)
    under ``spanfold``; None: not kept."""
    if setting is not None and setting.strip():
        if setting.strip().lower() == "off":
            return None
        try:
            return Path(setting).expanduser()
        except RuntimeError:  # ~ without a home directory
            return None
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "spanfold"
    if os.environ.get("XDG_CACHE_HOME") and sys.platform != "darwin":
        return Path(os.environ["XDG_CACHE_HOME"]) / "spanfold"
    try:
        home = Path.home()
    except (RuntimeError, KeyError, OSError):  # no home directory (a service user, a bare container): no memo
        return None
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "spanfold"
    return home / ".cache" / "spanfold"


def table_version() -> str | None:
    """What names genai-prices' installed table (its data module's size and modification time), without importing it;
    None when it is not installed."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("genai_prices")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        stat = os.stat(os.path.join(next(iter(spec.submodule_search_locations)), "data.py"))
    except OSError:
        return None
    return f"{stat.st_size}-{stat.st_mtime_ns}"


class Memo:
    """The memo of one table version in one directory: read once, looked up, added to and written back."""

    def __init__(self, folder: Path, version: str) -> None:
        self.path = folder / "prices.json"
        self.version = version
        self.models: dict[Key, tuple[RateMap, date | None, date | None] | None] = {}
        self.endpoints: dict[str, str | None] = {}
        self.writable = True
        self._read(self.models, self.endpoints)

    def __len__(self) -> int:
        return len(self.models) + len(self.endpoints)

    def model(self, key: Key, day: date) -> tuple[RateMap, date | None, date | None] | None:
        """The rates kept for ``key`` that hold on ``day``, None for a model the table does not know, or
        :data:`MISSING`."""
        if key not in self.models:
            return MISSING  # type: ignore[no-any-return]
        found = self.models[key]
        if found is not None and (
            (found[1] is not None and day < found[1]) or (found[2] is not None and day >= found[2])
        ):
            return MISSING  # type: ignore[no-any-return]
        return found

    def endpoint(self, url: str) -> str | None:
        """The provider kept for the API at ``url`` (None: none), or :data:`MISSING`."""
        return self.endpoints.get(url, MISSING)

    def remember_model(
        self, key: Key, rates: RateMap | None, first: date | None = None, until: date | None = None
    ) -> None:
        """Keep ``key``'s rates (holding from ``first`` up to, not on, ``until``), or that the table does not know
        it."""
        if len(self) < MAX_ENTRIES:
            self.models[key] = None if rates is None else (rates, first, until)
            self._write()

    def remember_endpoint(self, url: str, provider: str | None) -> None:
        if len(self) < MAX_ENTRIES:
            self.endpoints[url] = provider
            self._write()

    def _read(self, models: dict[Key, Any], endpoints: dict[str, str | None], *, counted: bool = True) -> None:
        """What the file holds into ``models`` and ``endpoints`` (nothing: it holds what this module does not write;
        ``counted``: said and counted as unusable)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        except (OSError, UnicodeDecodeError) as exc:
            if counted:
                _unusable(f"{self.path} cannot be read ({exc})")
            return
        try:
            held = json.loads(text)
            if not isinstance(held, dict) or held.get("format") != FORMAT or held.get("table") != self.version:
                return  # another table's or format's: written again
            for key, value in held["models"].items():
                models[_key(key)] = None if value is None else _entry(value)
            for url, provider in held["endpoints"].items():
                endpoints[_text(url)] = None if provider is None else _text(provider)
        except (ValueError, TypeError, KeyError, AttributeError, InvalidOperation) as exc:
            models.clear()
            endpoints.clear()
            if counted:
                _unusable(f"{self.path} is not a price memo spanfold wrote ({exc})")

    def _write(self) -> None:
        if not self.writable:
            return
        models: dict[Key, Any] = {}
        endpoints: dict[str, str | None] = {}
        self._read(models, endpoints, counted=False)  # what another process added meanwhile
        models.update(self.models)
        endpoints.update(self.endpoints)
        held = {
            "format": FORMAT,
            "table": self.version,
            "models": {json.dumps(key): None if value is None else _plain(*value) for key, value in models.items()},
            "endpoints": endpoints,
        }
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(json.dumps(held, indent=0, sort_keys=True), encoding="utf-8")
            os.replace(temporary, self.path)
        except OSError as exc:
            self.writable = False  # tried once: this process's lookups are kept in memory only
            _unusable(f"{self.path} cannot be written ({exc})")
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)


def _unusable(problem: str) -> None:
    """Count (``price_memo.unusable``) and say once at INFO that the memo cannot be used: nothing is wrong with the
    costs (genai-prices answers), the next process only imports it again."""
    counters.note(
        "price_memo.unusable", f"spanfold: the price memo is not used: {problem}; genai-prices prices instead"
    )


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a string expected, not {type(value).__name__}")
    return value


def _key(text: str) -> Key:
    """A lookup's key, from the JSON list of strings it is written as."""
    key = json.loads(_text(text))
    if not isinstance(key, list) or not key:
        raise ValueError("a key that is not a list of strings")
    return tuple(_text(part) for part in key)


def _entry(value: dict[str, Any]) -> tuple[RateMap, date | None, date | None]:
    """A model's kept rates, checked: every kind, each a finite number >= 0, and the days."""
    rates = {kind: Decimal(_text(value["rates"][kind])) for kind in KINDS}
    if not all(rate.is_finite() and rate >= 0 for rate in rates.values()):
        raise ValueError("a rate that is not a finite number >= 0")
    first, until = value["from"], value["until"]
    return (
        rates,
        None if first is None else date.fromisoformat(_text(first)),
        None if until is None else date.fromisoformat(_text(until)),
    )


def _plain(rates: RateMap, first: date | None, until: date | None) -> dict[str, Any]:
    return {
        "rates": {kind: str(rates[kind]) for kind in KINDS},
        "from": None if first is None else first.isoformat(),
        "until": None if until is None else until.isoformat(),
    }
