"""The one place spanfold encodes and parses JSON on its hot paths: orjson encodes, msgspec parses, the standard
library takes what they refuse. Each measured against the standard library (``bench/json_libs.py`` on spanfold's own
payloads: ratios to the standard library's CPU time, medians of 7 runs; in the process, interleaved fresh processes;
bench/RESULTS.md section 10).

* :func:`loads`: ``json.loads(text)``, the same value or the same error. Parsed by msgspec, which gives exactly the
  values the standard library gives for the JSON it accepts (integers of any size included; orjson turns integers
  beyond 64 bits into floats, so it is not used here); what msgspec rejects (``NaN``/``Infinity``, numbers that
  overflow a float, escaped lone surrogates, invalid JSON) goes to ``json.loads``, which accepts it or raises its own
  error. 0.30-0.48x on span attribute JSON, 0.46x on an OTLP/JSON line; the fold 5-8 % faster than with
  ``json.loads`` (``bench/fold_throughput.py``, 5 runs each: its prefix cache already parses only what is new).
* :func:`dumps`: compact JSON (``separators=(",", ":")``; or indented by two spaces), non-ASCII kept, that parses to
  the value ``json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=default)`` parses to, but for two
  things: a non-finite float is ``null`` (JSON has no NaN or Infinity; ``json.dumps`` writes tokens that strict
  readers refuse), and a plain :class:`enum.Enum` member is its value (``json.dumps`` passes it to ``default``).
  Encoded by orjson: 0.20x on messages encoded one by one (the calling thread), 0.10x on a trace's JSONL lines
  (the writers); with msgspec parsing, the folding worker's CPU per call 0.81x of the standard library's alone
  (``bench/workload.py --inside``, sync, 7 runs each). Float and tuple subclasses (``numpy.float64``, named tuples)
  are written as numbers and arrays; dataclasses, datetimes and other objects go to ``default``. What orjson refuses
  (integers beyond 64 bits, lone surrogates, keys that are not strings, nesting past 254 levels, circular values, a
  ``default`` that raises) the standard library encodes, or refuses with its own error.

  The text is not always the standard library's: orjson spells some floats otherwise (``0.000033`` for ``3.3e-05``,
  as a cost in USD often is). Nothing depends on the spelling: every reader parses the text, and the same value is
  written the same way each time, so a history a producer re-sends still extends its previous text
  (:mod:`spanfold.codecs.json_prefix`).

Nothing else in spanfold imports orjson or msgspec.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Final

import orjson

Default = Callable[[Any], Any] | None

_OPTIONS: Final = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_INDENTED: Final = _OPTIONS | orjson.OPT_INDENT_2
#: msgspec's decoder, made by :func:`warm` (the folding worker's first fold) or the first parse of a large text:
#: importing msgspec costs 3-10 ms, which neither ``init()`` nor an application's first model call should pay; until
#: then the standard library parses (the same values).
_DECODER: Any = None
#: Texts at least this long make the decoder when there is none yet (msgspec's gain outweighs its import).
_LARGE: Final = 1 << 16
#: Per ``default``: orjson's hook, the standard library's encoder (callers pass module-level functions; a cache that
#: fills up, with a caller passing a new function each time, is emptied).
_HOOKS: dict[Default, Callable[[Any], Any]] = {}
_STDLIB: dict[tuple[Default, bool], json.JSONEncoder] = {}
_KEPT: Final = 16


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``: the same value, or the same error."""
    decoder = _DECODER
    if decoder is None:
        if len(text) < _LARGE:
            return json.loads(text)
        decoder = warm()
    try:
        return decoder.decode(text)
    except ValueError:  # msgspec.DecodeError, or UnicodeEncodeError: a str holding a lone surrogate is not UTF-8
        return json.loads(text)


def warm() -> Any:
    """Load msgspec and make the decoder :func:`loads` uses from now on (the folding worker, before its first fold)."""
    global _DECODER
    if _DECODER is None:
        import msgspec

        _DECODER = msgspec.json.Decoder()
    return _DECODER


def dumps(value: Any, default: Default = None, *, indent: bool = False) -> str:
    """Compact JSON of ``value``, objects JSON does not hold through ``default`` (see the module docstring);
    ``indent``: indented by two spaces instead, as ``json.dumps(..., indent=2)`` lays it out."""
    hook = _HOOKS.get(default) or _hook(default)
    try:
        return orjson.dumps(value, default=hook, option=_INDENTED if indent else _OPTIONS).decode("utf-8")
    except TypeError:  # orjson.JSONEncodeError: what orjson refuses
        return _stdlib_dumps(value, default, indent)


def _hook(default: Default) -> Callable[[Any], Any]:
    """orjson's ``default``: float and tuple subclasses (``numpy.float64``, named tuples) as the standard library
    writes them (orjson hands them over), anything else to ``default``."""

    def hook(value: Any) -> Any:
        if isinstance(value, float):
            return float(value)
        if isinstance(value, tuple):
            return list(value)
        if default is None:
            raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
        return default(value)

    if len(_HOOKS) >= _KEPT:
        _HOOKS.clear()
    _HOOKS[default] = hook
    return hook


def _stdlib_dumps(value: Any, default: Default, indent: bool) -> str:
    """The standard library's text, a non-finite float as ``null`` (as orjson writes it)."""
    encoder = _STDLIB.get((default, indent))
    if encoder is None:
        finite_default = None if default is None else lambda item: _finite(default(item))
        if len(_STDLIB) >= _KEPT:
            _STDLIB.clear()
        encoder = _STDLIB[default, indent] = json.JSONEncoder(
            ensure_ascii=False,
            separators=(",", ": ") if indent else (",", ":"),
            indent=2 if indent else None,
            default=finite_default,
            allow_nan=False,
        )
    return encoder.encode(_finite(value))


def _finite(value: Any, copies: dict[int, Any] | None = None) -> Any:
    """``value`` with each non-finite float in it (a key too) as None: its dicts, lists and tuples copied, each once
    (a container that holds itself gives a copy that does, for the encoder to refuse)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if not isinstance(value, dict | list | tuple):
        return value
    if copies is None:
        copies = {}
    copy = copies.get(id(value))
    if copy is not None:
        return copy
    if isinstance(value, dict):
        copy = copies[id(value)] = {}
        for key, item in value.items():
            copy[None if isinstance(key, float) and not math.isfinite(key) else key] = _finite(item, copies)
    else:
        copy = copies[id(value)] = []
        copy.extend([_finite(item, copies) for item in value])
    return copy
