"""spanfold's options, their defaults and their environment variables, in one table.

Precedence: an argument passed to ``spanfold.init()`` wins, then the environment variable, then the default.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from spanfold.content import media as media_option
from spanfold.pricing import overrides as price_overrides
from spanfold.sampling import option as sampling

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})
# OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT takes booleans (older instrumentations) or, in the
# latest experimental mode, a content-capturing mode: content on spans, in the details event, both, or none.
NO_CONTENT = "no_content"
SPAN_ONLY = "span_only"
EVENT_ONLY = "event_only"
SPAN_AND_EVENT = "span_and_event"
CAPTURE_MODES = (NO_CONTENT, SPAN_ONLY, EVENT_ONLY, SPAN_AND_EVENT)


class ConfigError(ValueError):
    """An option or environment variable has a value spanfold cannot use."""


def _bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name}={shown(raw)}: expected true or false")


def _content(name: str, raw: str) -> str:
    """A capture mode (:data:`CAPTURE_MODES`): true is ``span_only``, false ``no_content``."""
    value = raw.strip().lower()
    if value in CAPTURE_MODES:
        return value
    if value in _TRUE:
        return SPAN_ONLY
    if value in _FALSE:
        return NO_CONTENT
    raise ConfigError(f"{name}={shown(raw)}: expected true, false, NO_CONTENT, SPAN_ONLY, EVENT_ONLY or SPAN_AND_EVENT")


def content_mode(given: bool | str) -> str:
    """The capture mode of ``capture_content`` as given to ``init()``: a bool or a mode's name."""
    if isinstance(given, bool):
        return SPAN_ONLY if given else NO_CONTENT
    return _content("capture_content", given)


def _format(name: str, raw: str) -> str:
    value = raw.strip().lower()
    if value not in ("invariant", "agentv", "agentv-transcript", "otlp-json"):
        raise ConfigError(f"{name}={shown(raw)}: expected invariant, agentv, agentv-transcript or otlp-json")
    return value


def _definitions(name: str, raw: str) -> str:
    value = raw.strip().lower()
    if value not in ("required", "full"):
        raise ConfigError(f"{name}={shown(raw)}: expected required or full")
    return value


_Number = TypeVar("_Number", int, float)


#: The largest whole number an option takes (a count, bytes, days): ``sys.maxsize``, far past any real limit (what
#: ``spanfold fold`` sets to mean "none"); more is a slip, and past what the arithmetic done with it holds (a
#: ``keep_days`` of 400 digits made every write fail with ``OverflowError``).
MAX_WHOLE = sys.maxsize
#: The most seconds an option takes (about 31 years): waits past ``threading.TIMEOUT_MAX`` raise ``OverflowError``.
MAX_SECONDS = 10**9


def shown(given: object, limit: int = 60) -> str:
    """A value as the user gave it, for an error message: ``repr``, clipped (5,000 digits are not repeated back)."""
    try:
        text = repr(given)
    except ValueError:  # an integer past the digits repr() converts
        return "a number of too many digits"
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def _check_positive(name: str, given: object, value: float, maximum: float = MAX_WHOLE) -> None:
    """Refuse a number that is not positive and at most ``maximum`` (``given``: as the user wrote it)."""
    if not (0 < value <= maximum):  # NaN compares false both ways: refused too, and infinity is past any maximum
        raise ConfigError(f"{name}={shown(given)}: expected a positive, finite number (at most {maximum:,})")


def _positive(kind: Callable[[str], _Number], expected: str, maximum: float) -> Callable[[str, str], _Number]:
    """A parser of positive numbers of ``kind`` up to ``maximum``; ``expected`` says what text that is not one should
    have been."""

    def parse(name: str, raw: str) -> _Number:
        try:
            value = kind(raw)
        except ValueError:  # not a number; or an integer of more than 4,300 digits
            raise ConfigError(f"{name}={shown(raw)}: {expected}") from None
        _check_positive(name, raw, value, maximum)
        return value

    return parse


_positive_float = _positive(float, "expected a number of seconds", MAX_SECONDS)
_positive_int = _positive(int, "expected a whole number", MAX_WHOLE)


def parse_size(text: str) -> int:
    """``65536``, ``64KiB``, ``64MiB``, ``1GiB`` (also ``K``/``M``/``G``, powers of 1024) as bytes; ValueError."""
    raw = text.strip()
    units = {"": 1, "k": 1024, "kib": 1024, "m": 1024**2, "mib": 1024**2, "g": 1024**3, "gib": 1024**3}
    digits = raw.rstrip("kmgibKMGIB")
    unit = raw[len(digits) :].lower()
    if not digits.isascii() or not digits.isdigit() or unit not in units or len(digits) > 20 or int(digits) <= 0:
        raise ValueError(f"{shown(text)} is not a size in bytes (such as 1048576 or 64MiB)")
    size = int(digits) * units[unit]
    if size > MAX_WHOLE:
        raise ValueError(f"{shown(text)} is more bytes than {MAX_WHOLE:,}")
    return size


def _size(name: str, raw: str) -> int:
    try:
        return parse_size(raw)
    except ValueError:
        raise ConfigError(f"{name}={shown(raw)}: expected a size in bytes, such as 104857600 or 100MiB") from None


#: Said where no trace exists yet (``spanfold show``, ``spanfold ui``): how traces are made.
HOW_TRACES_ARE_MADE = (
    "Traces are written by a program that calls spanfold.init() (to ./traces by default), or that runs under "
    "`spanfold run -- python app.py`; `spanfold demo` writes one without an API key."
)
#: When ``rotate_when`` starts a new trace file.
ROTATE_WHEN = ("midnight",)


def _when(name: str, raw: str) -> str | None:
    value = raw.strip().lower()
    if value in ("", "off", "none"):
        return None
    if value not in ROTATE_WHEN:
        raise ConfigError(f"{name}={shown(raw)}: expected midnight (a new file each day, local time)")
    return value


def _str(name: str, raw: str) -> str:
    return raw


def _names(name: str, raw: str) -> tuple[str, ...] | None:
    """``all`` (None: every installed library), ``none`` (()), or a comma-separated list of names."""
    value = raw.strip().lower()
    if value in ("", "all"):
        return None
    if value == "none":
        return ()
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _prices(name: str, raw: Any) -> price_overrides.PriceOverrides | None:
    """The user's prices: a file's path, or (given in code) a list of entries; checked now, so a mistake is said at
    ``init()`` (:mod:`spanfold.pricing.overrides`)."""
    if isinstance(raw, str) and not raw.strip():
        return None
    try:
        return price_overrides.load(raw)
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None


def _sample(name: str, raw: Any) -> sampling.Sample | None:
    """Whole-run sampling: a ``spanfold.Sample``, a rate (0 to 1), or its text form (:func:`spanfold.sampling.parse`:
    ``0.1``, ``rate=0.1,slower_than=30s,costlier_than=0.5,failing=spec.yaml``; ``off``)."""
    if raw is None or isinstance(raw, sampling.Sample):
        return raw
    try:
        if isinstance(raw, str):
            return sampling.parse(raw)
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            return sampling.Sample(rate=raw)
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    raise ConfigError(f"{name}={shown(raw)}: expected a spanfold.Sample, a rate from 0 to 1, or its text form")


def _media(name: str, raw: Any) -> media_option.Media | None:
    """Where blobs go instead of the spans: a ``spanfold.Media``, true (``<output>/media``), false, a directory's
    path, an fsspec URL, or its text form (:func:`spanfold.content.media.parse`: ``url=s3://b/p,min_bytes=64KiB``)."""
    try:
        return media_option.option(raw)
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None


#: A stitched conversation whose latest model call asked for tools waits on them: however long a plain (untraced)
#: tool function or a person approving it takes, it stays open this many times ``stitch_idle`` (at the source and in
#: the fold alike).
ASKING_IDLE_FACTOR = 10


@dataclass(frozen=True, slots=True)
class Option:
    env: tuple[str, ...]
    parse: Callable[[str, str], Any]
    default: Any
    help: str


def _option(env: tuple[str, ...], parse: Callable[[str, str], Any], default: Any, help: str) -> Any:
    """A :class:`Config` field and its :class:`Option` (environment variables, parser, default, meaning)."""
    return field(default=default, metadata={"option": Option(env, parse, default, help)})


@dataclass(frozen=True, slots=True)
class Config:
    """Every option, once: name, type, environment variables (first set wins), parser, default and meaning."""

    output: str = _option(("SPANFOLD_OUTPUT",), _str, "traces", "directory the trace files are written to")
    format: str = _option(
        ("SPANFOLD_FORMAT",),
        _format,
        "invariant",
        "invariant, agentv, agentv-transcript (AgentV's transcript rows, what `agentv eval run --transcript` grades) "
        "or otlp-json (each trace's spans, as the Collector's file exporter writes them)",
    )
    capture_content: str = _option(
        ("SPANFOLD_CAPTURE_CONTENT", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"),
        _content,
        SPAN_ONLY,
        "record prompts, completions and tool arguments/results: true / SPAN_ONLY on the spans, EVENT_ONLY a "
        "model call's in its gen_ai.client.inference.operation.details log event, SPAN_AND_EVENT both, "
        "false / NO_CONTENT none",
    )
    tool_definitions: str = _option(
        ("SPANFOLD_TOOL_DEFINITIONS",),
        _definitions,
        "required",
        "what gen_ai.tool.definitions holds (with content capture on): required (each tool's type and name, as the "
        "conventions advise by default) or full (descriptions and parameter schemas too)",
    )
    stream_usage: bool = _option(
        ("SPANFOLD_STREAM_USAGE",),
        _bool,
        False,
        "ask OpenAI Chat Completions streams for their token usage (stream_options.include_usage) when the "
        "application did not; the usage-only chunk this adds is kept from the application",
    )
    disabled: bool = _option(("SPANFOLD_DISABLED",), _bool, False, "make init() a no-op")
    file_per_trace: bool = _option(
        ("SPANFOLD_FILE_PER_TRACE",), _bool, False, "also write each trace to its own <trace_id>.json"
    )
    otlp: str | None = _option(
        ("SPANFOLD_OTLP",),
        _str,
        None,
        "also export the raw spans over OTLP/HTTP to this endpoint (default: when spanfold installs the provider "
        "and OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set)",
    )
    max_queue_size: int = _option(("SPANFOLD_MAX_QUEUE_SIZE",), _positive_int, 20_000, "spans waiting to be folded")
    max_traces_in_flight: int = _option(
        ("SPANFOLD_MAX_TRACES_IN_FLIGHT",), _positive_int, 2_000, "traces buffered before the oldest is cut"
    )
    max_spans_per_trace: int = _option(
        ("SPANFOLD_MAX_SPANS_PER_TRACE",), _positive_int, 20_000, "spans kept per trace (more: truncated)"
    )
    max_attribute_bytes_per_trace: int = _option(
        ("SPANFOLD_MAX_ATTRIBUTE_BYTES_PER_TRACE",),
        _positive_int,
        64 * 1024 * 1024,
        "bytes of span attribute text kept per trace (more: spans dropped, trace truncated)",
    )
    max_buffered_bytes: int = _option(
        ("SPANFOLD_MAX_BUFFERED_BYTES",),
        _positive_int,
        256 * 1024 * 1024,
        "bytes of span attribute text buffered across all traces (more: stitched conversations are closed, then the "
        "least recently active traces whose root has not arrived are cut; spanfold serve answers 503)",
    )
    trace_timeout: float = _option(
        ("SPANFOLD_TRACE_TIMEOUT",),
        _positive_float,
        300.0,
        "seconds before a trace whose root never ends is written as incomplete",
    )
    stitch_idle: float = _option(
        ("SPANFOLD_STITCH_IDLE",),
        _positive_float,
        30.0,
        "seconds an un-parented conversation stays open for stitching without a call (ten times as long when its "
        "latest call asked for tools: the run waits on them)",
    )
    stitch: bool = _option(
        ("SPANFOLD_STITCH",),
        _bool,
        True,
        "give the model calls and tool runs of one zero-code run (no invoke_agent span) one trace id, in every "
        "backend, and stitch other producers' un-parented calls in the trace files",
    )
    threads: bool = _option(
        ("SPANFOLD_THREADS",),
        _bool,
        True,
        "carry the OpenTelemetry context (the current span, spanfold.context's values) into threads and thread pools "
        "(as opentelemetry-instrumentation-threading does; built in), so a run whose tools run in a ThreadPoolExecutor "
        "stays one trace",
    )
    baggage: bool = _option(
        ("SPANFOLD_BAGGAGE",),
        _bool,
        False,
        "carry spanfold.context's user and session to the services the application calls as W3C baggage (user.id, "
        "session.id: on each request its HTTP instrumentation propagates context on), and take an incoming "
        "request's baggage user.id and session.id as the run's where no spanfold.context names them",
    )
    instrument: tuple[str, ...] | None = _option(
        ("SPANFOLD_INSTRUMENT",),
        _names,
        None,
        "client libraries spanfold patches: all installed (default), none (fold spans another instrumentation "
        "makes), or a list such as openai,anthropic",
    )
    rotate_bytes: int | None = _option(
        ("SPANFOLD_ROTATE_BYTES",),
        _size,
        None,
        "start new numbered trace files before the next trace would take the newest (with its metadata file) past "
        "this many bytes (100MiB, ...); lines and traces are never split, a longer trace gets files of its own",
    )
    rotate_when: str | None = _option(
        ("SPANFOLD_ROTATE_WHEN",),
        _when,
        None,
        "midnight: start a new trace file each day (local time), at the first write of the day",
    )
    keep_files: int | None = _option(
        ("SPANFOLD_KEEP_FILES",),
        _positive_int,
        None,
        "with rotation: keep at most this many trace files (the newest; older ones are deleted when a new one starts)",
    )
    keep_days: int | None = _option(
        ("SPANFOLD_KEEP_DAYS",),
        _positive_int,
        None,
        "with rotation: delete trace files last written more than this many days ago (when a new one starts)",
    )
    prices: Any = _option(  # noqa: RUF009 (a field() with metadata, like the others; its value is a default)
        ("SPANFOLD_PRICES",),
        _prices,
        None,
        "your own prices, over genai-prices' (pip install 'spanfold[cost]'): a YAML or JSON file of entries (model, "
        "optional provider, input_mtok, output_mtok, ... in US dollars), or pass the list of entries to init()",
    )
    price_cache: str | None = _option(
        ("SPANFOLD_PRICE_CACHE",),
        _str,
        None,
        "directory where the prices of the models priced are kept for the next process, so that it need not import "
        "genai-prices to price them (default: the user's cache directory, ~/.cache/spanfold); off: not kept",
    )
    metrics: Any = _option(  # noqa: RUF009 (a field() with metadata, like the others; its value is a default)
        ("SPANFOLD_METRICS",),
        _bool,
        None,
        "record the GenAI client metrics (operation duration, token usage, time to first chunk, cost): by default when "
        "the application set a MeterProvider before init(); true: also without one, exported over OTLP/HTTP (otlp or "
        "OTEL_EXPORTER_OTLP_ENDPOINT); false: never; or pass a MeterProvider to init()",
    )
    sample: sampling.Sample | None = _option(  # noqa: RUF009 (a field() with metadata, like the others)
        ("SPANFOLD_SAMPLE",),
        _sample,
        None,
        "keep whole runs: every run that errored, ran longer or cost more than a bound, or failed a check, and a "
        "fraction of the rest chosen by trace id (0.1, or rate=0.1,slower_than=30s,costlier_than=0.5,"
        "failing=spec.yaml; a spanfold.Sample in code); applies to the trace files and spanfold's OTLP export alike",
    )
    media: media_option.Media | None = _option(  # noqa: RUF009 (a field() with metadata, like the others)
        ("SPANFOLD_MEDIA",),
        _media,
        None,
        "store each image, audio or document sent as base64 (of at least min_bytes, 16KiB by default) once, by its "
        "sha256, and record a uri part in its place, in the spans and the trace files: on (<output>/media), a "
        "directory, an fsspec URL such as s3://bucket/prefix (pip install 'spanfold[media]' and its driver), or "
        "url=...,min_bytes=64KiB; a spanfold.Media in code",
    )
    redact: Any = _option(  # noqa: RUF009 (a field() with metadata, like the others; its value is a default)
        ("SPANFOLD_REDACT",),
        _bool,
        False,
        "redact recorded content: true (built-in patterns: emails, API keys, tokens, card numbers), or pass a "
        "callable (text -> text, run after them) or a spanfold.content.redaction.Redaction to init()",
    )


#: name -> :class:`Option`, in the order of :class:`Config`'s fields.
OPTIONS: Mapping[str, Option] = {f.name: f.metadata["option"] for f in fields(Config)}


def _check_given(name: str, opt: Option, raw: Any) -> None:
    """A value given to ``init()`` that is not text: of the option's type and range, else :class:`ConfigError` naming
    the option (a wrong type once surfaced later as a ``TypeError`` or ``AttributeError`` from deep inside setup, or
    not at all)."""
    parse = opt.parse
    number = isinstance(raw, (int, float)) and not isinstance(raw, bool)
    if parse in (_positive_int, _size):
        if not (number and isinstance(raw, int)):
            raise ConfigError(f"{name}={shown(raw)}: expected a whole number")
        _check_positive(name, raw, raw)
    elif parse is _positive_float:
        if not number:
            raise ConfigError(f"{name}={shown(raw)}: expected a number of seconds")
        _check_positive(name, raw, raw, MAX_SECONDS)
    elif parse in (_bool, _content) and name not in ("redact", "metrics"):  # redact: a callable too; metrics: a
        # MeterProvider too (both checked by setup)
        if not isinstance(raw, bool):
            modes = ", NO_CONTENT, SPAN_ONLY, EVENT_ONLY or SPAN_AND_EVENT" if parse is _content else " or false"
            raise ConfigError(f"{name}={shown(raw)}: expected true{modes}")
    elif parse is _names:
        if not isinstance(raw, (list, tuple, set, frozenset)) or not all(isinstance(n, str) for n in raw):
            raise ConfigError(f"{name}={shown(raw)}: expected all, none, or a list of library names")
    elif name == "output":
        if not isinstance(raw, os.PathLike):
            raise ConfigError(f"{name}={shown(raw)}: expected a directory's path")
    elif parse in (_format, _definitions, _when, _str):
        raise ConfigError(f"{name}={shown(raw)}: expected text")


def load(overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> Config:
    """Resolve every option from ``overrides`` (None = not given), the environment, then defaults."""
    env = os.environ if environ is None else environ
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    unknown = set(given) - set(OPTIONS)
    if unknown:
        raise ConfigError(f"unknown option(s): {', '.join(sorted(unknown))}")
    values: dict[str, Any] = {}
    for name, opt in OPTIONS.items():
        if name in given:
            raw = given[name]
            if not isinstance(raw, str):
                _check_given(name, opt, raw)
            values[name] = opt.parse(name, raw) if isinstance(raw, str) and opt.parse is not _str else raw
            continue
        values[name] = opt.default
        for var in opt.env:
            if var in env:
                values[name] = opt.parse(var, env[var])
                break
    if isinstance(values["capture_content"], bool):
        values["capture_content"] = content_mode(values["capture_content"])
    if not isinstance(values["output"], str):
        values["output"] = os.fspath(values["output"])
    if isinstance(values["instrument"], (list, set, frozenset)):
        values["instrument"] = tuple(values["instrument"])
    if values["prices"] is not None:
        values["prices"] = _prices("prices", values["prices"])
    if values["sample"] is not None:
        values["sample"] = _sample("sample", values["sample"])
    if values["media"] is not None and not isinstance(values["media"], media_option.Media):
        values["media"] = _media("media", values["media"])
    if isinstance(values["rotate_when"], str):
        values["rotate_when"] = _when("rotate_when", values["rotate_when"])
    if (values["keep_files"] or values["keep_days"]) and not (values["rotate_bytes"] or values["rotate_when"]):
        raise ConfigError("keep_files and keep_days apply to rotated trace files: set rotate_bytes or rotate_when")
    return Config(**values)


def capture_content_default(environ: Mapping[str, str] | None = None) -> bool:
    """The content-capture setting for instrumentors used without ``spanfold.init()``."""
    env = os.environ if environ is None else environ
    opt = OPTIONS["capture_content"]
    for var in opt.env:
        if var in env:
            try:
                return bool(opt.parse(var, env[var]) != NO_CONTENT)
            except ConfigError:
                return True
    return True
