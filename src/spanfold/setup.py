"""Wire a TracerProvider, the instrumentors and the folding processor from the config.

The one place that knows both halves: ``instrumentation`` (span producers) and ``exporter`` (the fold).
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

from spanfold import config as config_module
from spanfold import counters
from spanfold.api import baggage
from spanfold.config import Config
from spanfold.content import media, runtime
from spanfold.content.redaction import from_option
from spanfold.exporter.files.writers import MemoryWriter, report_unwritten, writers_for
from spanfold.exporter.pipeline.cost_counter import CostCounter
from spanfold.exporter.pipeline.processor import FoldingSpanProcessor
from spanfold.instrumentation import registry
from spanfold.instrumentation.toolkit import metrics
from spanfold.instrumentation.toolkit.metrics import ModelMetrics
from spanfold.sampling.decision import Sampler
from spanfold.sampling.option import Sample
from spanfold.stitching import asked, conversations
from spanfold.version import __version__

if TYPE_CHECKING:  # the trace model loads with the fold, not at init()
    from spanfold.trace.model import Trace

logger = logging.getLogger("spanfold")

#: Wait used by ``flush(timeout=None)``: "until everything is on disk", bounded so a wedged disk can't hang exit.
FLUSH_FOREVER_S = 3600.0


@dataclass
class Handle:
    """What ``spanfold.init()`` set up. ``enabled`` is False when ``SPANFOLD_DISABLED`` made init a no-op."""

    config: Config
    enabled: bool
    provider: TracerProvider | None = None
    processor: FoldingSpanProcessor | None = None
    instrumented: list[str] = field(default_factory=list)
    owns_provider: bool = False
    otlp_processor: SpanProcessor | None = None  # raw spans also exported over OTLP/HTTP
    #: Whether this init() turned on opentelemetry-instrumentation-threading (``threads``); shutdown() turns it off.
    threads: bool = False
    #: The MeterProvider spanfold made for ``metrics=True`` (exporting over OTLP), flushed and shut down with it.
    meter_provider: Any = None

    @property
    def otlp(self) -> bool:
        """Whether the raw spans also go out over OTLP/HTTP."""
        return self.otlp_processor is not None

    @property
    def output(self) -> str:
        return self.config.output

    def flush(self, timeout: float | None = None) -> bool:
        """Block until every finished trace is written; False if ``timeout`` seconds passed first."""
        if self.processor is None:
            return True
        seconds = FLUSH_FOREVER_S if timeout is None else max(timeout, 0.0)
        written = bool(self.processor.force_flush(int(seconds * 1000)))
        if self.otlp_processor is not None:
            self.otlp_processor.force_flush(int(seconds * 1000))
        if self.meter_provider is not None:
            self.meter_provider.force_flush(int(seconds * 1000))
        return written

    def stop(self, reason: str, timeout: float) -> bool:
        """The process is ending now (``reason``: the signal, or ``exit``): end the spans still running (each says
        what stopped it), write every run held, finished or not (``incomplete``: the final flush, as at shutdown; a
        trace whose root never ended too), in every format and to the OTLP exporter, within ``timeout`` seconds
        (the OTLP export's own wait aside: a signal bounds the whole, :func:`_within`). False when it did not
        finish in time."""
        if self.processor is None:
            return True
        deadline = time.monotonic() + max(timeout, 0.0)
        self.processor.end_running(reason)
        written = self.processor.close(_millis_to(deadline))  # what finished, and what stopping ended, to the files
        if self.otlp_processor is not None:
            self.otlp_processor.force_flush(_millis_to(deadline))
        if self.meter_provider is not None:
            self.meter_provider.force_flush(_millis_to(deadline))
        return written

    def shutdown(self) -> None:
        """Flush, stop the worker and the OTLP export, restore the patched libraries. (The provider keeps the
        processors, shut: it has no way to remove one; a later ``init()`` adds fresh ones.)"""
        registry.uninstrument_all()
        if self.threads:
            _threads_off()
            self.threads = False
        if self.processor is not None:
            self.processor.shutdown()
        if self.otlp_processor is not None:
            self.otlp_processor.shutdown()
        if self.meter_provider is not None:
            self.meter_provider.shutdown()


def _millis_to(deadline: float) -> int:
    return int(max(deadline - time.monotonic(), 0.0) * 1000)


_lock = threading.RLock()
_handle: Handle | None = None
_atexit_registered = False


def current() -> Handle | None:
    """The active handle, if ``init()`` ran (and ``shutdown()`` did not)."""
    return _handle


_installed: list[TracerProvider] = []  # the global provider spanfold installed (OTel allows setting it once)


def _provider() -> tuple[TracerProvider, bool]:
    """The SDK TracerProvider the user already set, else a new global one (second item: spanfold made it, in this
    ``init()`` or an earlier one)."""
    existing = otel_trace.get_tracer_provider()
    if isinstance(existing, TracerProvider):
        return existing, existing in _installed
    provider = TracerProvider()
    otel_trace.set_tracer_provider(provider)
    _installed.append(provider)
    if otel_trace.get_tracer_provider() is not provider:  # someone else won a race to set it
        current_provider = otel_trace.get_tracer_provider()
        if isinstance(current_provider, TracerProvider):
            return current_provider, False
        raise RuntimeError("a non-SDK TracerProvider is already installed; spanfold cannot attach to it")
    return provider, True


_events_listened: set[int] = set()  # ids of the LoggerProviders spanfold's event processor is on (never removed)


def _listen_to_genai_events() -> None:
    """Per-message GenAI log events (older instrumentations emit messages as logs, not span attributes) fold too:
    put the event buffer's log processor on the user's SDK ``LoggerProvider``, when there is one."""
    if "opentelemetry.sdk._logs" not in sys.modules:  # no SDK LoggerProvider exists: nothing to listen to (and
        return  # its import, with the event buffer's, is not paid at start-up)
    try:
        from opentelemetry._logs import get_logger_provider
        from opentelemetry.sdk._logs import LoggerProvider

        from spanfold.exporter.dialects.genai_event_logs import GenAIEventLogProcessor

        logs = get_logger_provider()
        if isinstance(logs, LoggerProvider) and id(logs) not in _events_listened:
            logs.add_log_record_processor(GenAIEventLogProcessor())
            _events_listened.add(id(logs))
    except Exception as exc:  # an SDK without logs support: message events are not folded, spans still are
        counters.fault("setup.log_events", exc)


def _media_available(cfg: Config) -> Config:
    """``cfg``, its ``media`` option off when it names an fsspec URL and fsspec is not installed (said once, counted
    ``media_unavailable``: blobs stay inline, as the OTLP export does without its extra)."""
    if cfg.media is None:
        return cfg
    missing = media.available(cfg.media)
    if missing is None:
        return cfg
    logger.warning("spanfold: media asked for but not installed: %s", missing)
    counters.incr("media_unavailable")
    return dataclasses.replace(cfg, media=None)


def _runtime(cfg: Config) -> runtime.Runtime:
    """The Runtime of the options: content captured unless NO_CONTENT; a model call's details event with EVENT_ONLY
    (the call's content there only; tool runs, retrievals and errors, which have no event, keep theirs on their spans)
    and SPAN_AND_EVENT; blobs stored with ``media`` (shared with the folding worker, which stores other producers')."""
    mode = cfg.capture_content
    spans = runtime.Runtime(
        capture_content=mode != config_module.NO_CONTENT,
        redaction=from_option(cfg.redact),
        full_tool_definitions=cfg.tool_definitions == "full",
        stream_usage=cfg.stream_usage,
        media=media.for_config(cfg),
    )
    if mode not in (config_module.EVENT_ONLY, config_module.SPAN_AND_EVENT):
        return spans
    try:
        logger = _details_logger()
    except Exception as exc:  # no logs SDK: the content stays on the spans, so the flat trace keeps it
        counters.fault("setup.details_events", exc)
        return spans
    return dataclasses.replace(spans, events=runtime.Events(logger, only=mode == config_module.EVENT_ONLY))


def _details_logger() -> Any:
    """Where model calls' details events go: the application's SDK ``LoggerProvider`` (whose exporters it chose;
    :func:`_listen_to_genai_events` puts the fold's processor on it), else spanfold's own, set nowhere globally,
    whose one processor hands them to the fold."""
    from opentelemetry._logs import get_logger_provider
    from opentelemetry.sdk._logs import LoggerProvider

    from spanfold.exporter.dialects.genai_event_logs import GenAIEventLogProcessor

    logs = get_logger_provider()
    if not isinstance(logs, LoggerProvider):
        logs = LoggerProvider()
        logs.add_log_record_processor(GenAIEventLogProcessor())
    return logs.get_logger("spanfold", __version__)


_context_on: set[int] = set()  # ids of the TracerProviders the context processor is on (never removed)


def _add_context_processor(provider: TracerProvider) -> None:
    """``spanfold.context``'s values on every span the provider starts (:mod:`spanfold.api.processor`): once per
    provider (a provider keeps its processors for good; a later ``init()`` on it adds none)."""
    if id(provider) in _context_on:
        return
    from spanfold.api.processor import ContextSpanProcessor

    provider.add_span_processor(ContextSpanProcessor())
    _context_on.add(id(provider))


def _threads_on(cfg: Config) -> bool:
    """Carry the OpenTelemetry context into threads and thread pools (``threads``,
    :mod:`spanfold.instrumentation.threads`), unless it is carried already (``opentelemetry-instrument`` turned
    OpenTelemetry's threading instrumentation on). True when this call turned it on."""
    if not cfg.threads:
        return False
    from spanfold.instrumentation import threads

    try:
        return threads.carry()
    except Exception as exc:  # a Python whose threads cannot be patched: they start with an empty context
        counters.fault("setup.threads", exc)
        return False


def _threads_off() -> None:
    from spanfold.instrumentation import threads

    try:
        threads.stop()
    except Exception as exc:
        counters.fault("setup.threads", exc)


_OTLP_ENV = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def _otlp_endpoint(cfg: Config, owns_provider: bool) -> str | None:
    """Where raw spans go over OTLP/HTTP: ``otlp=`` / ``SPANFOLD_OTLP``, else the standard OTEL_* variables —
    those only when spanfold installed the provider (a provider the user set up has the exporters they chose).
    ``""`` means "from the OTEL_* variables"."""
    if cfg.otlp is not None:
        return cfg.otlp if cfg.otlp.lower() not in ("0", "false", "off", "none") else None
    if owns_provider and any(os.environ.get(var) for var in _OTLP_ENV):
        return ""
    return None


def _add_otlp(provider: TracerProvider | None, endpoint: str) -> SpanProcessor | None:
    """A standard BatchSpanProcessor + OTLPSpanExporter (extra ``spanfold[otlp]``); None when not installed. On the
    provider, or (``provider`` None: runs are sampled) fed by the fold, a kept run's spans together once decided."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        logger.warning("spanfold: OTLP export asked for but not installed: pip install 'spanfold[otlp]'")
        counters.incr("otlp_unavailable")
        return None
    if endpoint and not endpoint.rstrip("/").endswith("/v1/traces"):
        endpoint = endpoint.rstrip("/") + "/v1/traces"
    processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint or None))
    if provider is not None:
        provider.add_span_processor(processor)
    return processor


_METRICS_ENV = ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def _meter_provider(cfg: Config) -> tuple[Any, bool]:
    """The MeterProvider the metrics go to (None: metrics off), and whether spanfold made it: the one given to
    ``init(metrics=...)``; else the application's (set before ``init()``); else, with ``metrics=True``, a new one
    exporting over OTLP/HTTP (``otlp``, or the OTEL_* endpoint variables; extra ``spanfold[otlp]``)."""
    choice = cfg.metrics
    if choice is False:
        return None, False
    from opentelemetry import metrics as otel_metrics
    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.metrics._internal import _ProxyMeterProvider

    if choice is not None and choice is not True:
        if not isinstance(choice, otel_metrics.MeterProvider):
            raise config_module.ConfigError(
                f"metrics={config_module.shown(choice)}: expected true, false or a MeterProvider"
            )
        return choice, False
    application = otel_metrics.get_meter_provider()
    if not isinstance(application, (NoOpMeterProvider, _ProxyMeterProvider)):
        return application, False
    if choice is None:
        return None, False
    endpoint = cfg.otlp if cfg.otlp and cfg.otlp.lower() not in ("0", "false", "off", "none") else None
    if endpoint is None and not any(os.environ.get(var) for var in _METRICS_ENV):
        raise config_module.ConfigError(
            "metrics=true: no MeterProvider is set and no OTLP endpoint is given (otlp=, SPANFOLD_OTLP or "
            "OTEL_EXPORTER_OTLP_ENDPOINT)"
        )
    try:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    except ImportError:
        logger.warning("spanfold: metrics over OTLP asked for but not installed: pip install 'spanfold[otlp]'")
        counters.incr("otlp_unavailable")
        return None, False
    if endpoint and not endpoint.rstrip("/").endswith("/v1/metrics"):
        endpoint = endpoint.rstrip("/").removesuffix("/v1/traces") + "/v1/metrics"
    reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=endpoint or None))
    return MeterProvider(metric_readers=[reader]), True


def _load_spec(path: str) -> Any:
    """A spec file's checks for the ``sample`` option's ``failing`` (one set of checks: an AgentV eval file of several
    tests grades traces by their position, which a sampled run has none of)."""
    from spanfold.checks.errors import SpecError
    from spanfold.checks.spec import load_spec

    try:
        spec = load_spec(path)
    except SpecError as exc:
        raise config_module.ConfigError(f"sample: failing: {exc}") from None
    if spec.by_position:
        raise config_module.ConfigError(
            f"sample: failing: {path}: an eval file of several tests grades traces by their position; give one test"
        )
    return spec


def sampler_for(sample: Sample | None) -> Sampler | None:
    """The ``sample`` option ready to decide, its spec files loaded (``spanfold.init()`` and ``spanfold serve``)."""
    return None if sample is None else Sampler(sample, load=_load_spec)


def start(overrides: dict[str, Any], *, to_files: bool = True) -> Handle:
    """``init()``'s body: idempotent; returns the active handle when there is one."""
    global _handle, _atexit_registered
    with _lock:
        if _handle is not None:
            _warn_if_different(_handle.config, overrides)
            return _handle
        cfg = config_module.load(overrides)
        if cfg.disabled:
            return Handle(config=cfg, enabled=False)
        cfg = _media_available(cfg)
        unknown = sorted(set(cfg.instrument or ()) - set(registry.INSTRUMENTORS))
        if unknown:
            known = ", ".join(registry.INSTRUMENTORS)
            raise config_module.ConfigError(f"instrument: unknown {', '.join(unknown)}; expected all, none or {known}")
        sampler = sampler_for(cfg.sample)  # its spec files checked before anything is set up
        meters, owns_meters = _meter_provider(cfg)
        rt = _runtime(cfg)
        runtime.activate(rt)
        baggage.activate(cfg.baggage)
        conversations.activate(conversations.from_environment(cfg=cfg))
        provider, owns = _provider()
        _add_context_processor(provider)
        endpoint = _otlp_endpoint(cfg, owns)
        # Sampled, spanfold's OTLP export is fed by the fold (a kept run's spans together); else by the provider.
        otlp = _add_otlp(provider if sampler is None else None, endpoint) if endpoint is not None else None
        forward = otlp if sampler is not None else None
        cost = CostCounter.of(meters) if meters is not None else None
        processor = FoldingSpanProcessor(
            writers_for(cfg) if to_files else [], cfg, sampler=sampler, forward=forward, folded=cost
        )
        provider.add_span_processor(processor)
        handle = Handle(config=cfg, enabled=True, provider=provider, processor=processor, owns_provider=owns)
        handle.meter_provider = meters if owns_meters else None
        # recorded on the folding worker: the calling thread only queues each ended model span
        metrics.activate(ModelMetrics.of(meters, defer=processor.call) if meters is not None else None)
        handle.threads = _threads_on(cfg)
        handle.otlp_processor = otlp
        _listen_to_genai_events()
        handle.instrumented = registry.instrument_all(provider, rt, cfg.instrument)
        _say_what_is_instrumented(handle.instrumented, cfg.instrument)
        _handle = handle
        if not _atexit_registered:
            atexit.register(_at_exit)
            _install_sigterm()
            _flush_in_multiprocessing_children()
            _atexit_registered = True
        return handle


_warned_different = False


def _warn_if_different(active: Config, overrides: dict[str, Any]) -> None:
    """A second ``init()`` returns the first one's handle; say so, once, when it asked for something else."""
    global _warned_different
    if _warned_different:
        return
    try:
        asked = config_module.load(overrides)
    except (config_module.ConfigError, TypeError, ValueError):
        return
    given = [name for name, value in overrides.items() if value is not None]
    differs = [
        f"{name}={getattr(asked, name)!r} (in force: {getattr(active, name)!r})"
        for name in given
        if getattr(asked, name) != getattr(active, name)
    ]
    if differs:
        _warned_different = True
        logger.warning(
            "spanfold: init() already ran; this call's options are ignored: %s (call spanfold.shutdown() first "
            "to change them)",
            ", ".join(differs),
        )


def _say_what_is_instrumented(names: list[str], only: tuple[str, ...] | None) -> None:
    """One line: what is patched (when imported), what is not installed. Nothing at all: a warning (stderr)."""
    known = list(registry.INSTRUMENTORS)
    wanted = known if only is None else [n for n in known if n in only]
    missing = [n for n in wanted if n not in names]
    if names:
        logger.info(
            "spanfold: tracing %s (each patched when your program imports it)%s",
            ", ".join(names),
            f"; not installed: {', '.join(missing)}" if missing else "",
        )
    elif only == () or not wanted:
        logger.info("spanfold: instrument=none: no client library is patched; spans other instrumentations make fold")
    else:
        logger.warning(
            "spanfold: none of the client libraries spanfold traces is installed (%s): no model call will be traced; "
            "spans made by other OpenTelemetry instrumentations are still folded",
            ", ".join(wanted),
        )


def stop() -> None:
    """``shutdown()``'s body."""
    global _handle
    with _lock:
        handle, _handle = _handle, None
    if handle is not None:
        handle.shutdown()
        runtime.activate(None)  # init()'s choice ends with it
        media.forget()
        baggage.activate(False)
        metrics.activate(None)
        conversations.activate(None)
        asked.clear()


def _at_exit(timeout: float = 10.0, reason: str = "exit") -> None:
    """The process ends: every run it holds written (:meth:`Handle.stop`: spans still running, a daemon thread's call
    or a span never ended, end as ``reason``), and what could not be written said."""
    handle = _handle
    if handle is not None:
        try:
            handle.stop(reason, timeout)
            report_unwritten(handle.processor.writers if handle.processor is not None else ())
        except Exception as exc:  # never make the user's exit noisy
            counters.fault("atexit.flush", exc)


def _flush_done(timeout: float) -> None:
    """Write what is finished now (an application's own signal handler decides whether the process ends)."""
    handle = _handle
    if handle is not None:
        try:
            handle.flush(timeout=timeout)
        except Exception as exc:
            counters.fault("signal.flush", exc)


def _flush_in_multiprocessing_children() -> None:
    """A ``multiprocessing`` child (fork start method) ends with ``os._exit``, skipping atexit: flush from its exit
    finalizers instead, registered in each child after the fork (``multiprocessing`` clears them at the fork)."""
    try:
        from multiprocessing import util

        util.register_after_fork(_at_exit, _register_child_flush)
    except Exception as exc:
        counters.fault("multiprocessing.hook", exc)


def _register_child_flush(_: object) -> None:
    from multiprocessing import util

    util.Finalize(None, _at_exit, exitpriority=100)


#: The signals whose action ends the process without atexit: spanfold writes the runs first. A signal whose Python
#: handler raises KeyboardInterrupt (SIGINT's, unless the application set it otherwise) is left alone: the program
#: unwinds, its spans end with that error and atexit writes the runs; SIGINT set to the default action is not.
STOP_SIGNALS = ("SIGTERM", "SIGHUP", "SIGINT")


def _install_sigterm() -> None:
    """Write the runs on SIGTERM, SIGHUP (and SIGINT set to its default action) too, then do what the signal did
    before: the previous Python handler, else the default action (the exit status is the signal's, as without
    spanfold). Left alone when a signal is ignored, handled in C or raises KeyboardInterrupt, and outside the main
    thread (where handlers cannot be set). A handler the application installs later replaces spanfold's."""
    if threading.current_thread() is not threading.main_thread():
        return
    for name in STOP_SIGNALS:
        signum = getattr(signal, name, None)
        if signum is None:  # a platform without it
            continue
        try:
            previous = signal.getsignal(signum)
            if previous is signal.default_int_handler:  # KeyboardInterrupt: the program unwinds, atexit writes
                continue
            if previous is signal.SIG_DFL or callable(previous):
                signal.signal(signum, functools.partial(_on_signal, previous))
        except (ValueError, OSError) as exc:
            counters.fault("signal.install", exc)


#: The longest a stopping signal waits for the runs to be written (a wedged disk or an OTLP endpoint that does not
#: answer must not eat a container's grace period; writing takes milliseconds).
SIGTERM_FLUSH_S = 3.0

_stopping = False  # a stopping signal is being handled (a second one leaves it to the first)


def _within(seconds: float, work: Callable[[], object]) -> bool:
    """Run ``work`` on a thread of its own and wait for it ``seconds`` at most; False when it did not finish. A
    signal handler runs between two bytecodes of the main thread, which may hold a lock the work needs (a span's, an
    exporter's): waiting there could wait forever, and an export may hang on the network."""
    try:
        worker = threading.Thread(target=work, name="spanfold-stop", daemon=True)
        worker.start()
        worker.join(seconds)
    except Exception as exc:
        counters.fault("signal.stop", exc)
        return False
    if worker.is_alive():
        counters.incr("signal.stop_timeout")
        return False
    return True


def _on_signal(previous: Any, signum: int, frame: Any) -> None:
    global _stopping
    if callable(previous):  # the application's handler decides: what is finished is written; atexit does the rest
        _within(SIGTERM_FLUSH_S, functools.partial(_flush_done, SIGTERM_FLUSH_S))
        previous(signum, frame)
        return
    if _stopping:  # the handling of the first stopping signal ends the process
        return
    _stopping = True
    try:  # the process ends now: every run it holds, then the signal's default action
        _within(SIGTERM_FLUSH_S, functools.partial(_at_exit, SIGTERM_FLUSH_S, signal.Signals(signum).name))
    except BaseException as exc:  # another signal's KeyboardInterrupt or SystemExit: this one ends the process
        counters.fault("signal.stop", exc)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


@contextmanager
def capture_traces() -> Iterator[list[Trace]]:
    """Collect, in memory, every trace completed while the block runs (pytest fixture, users' tests).

    Starts spanfold (in memory only, no files) when ``init()`` has not run, and stops it again at the end.
    The list fills as traces complete; call ``spanfold.flush()`` to force pending ones out.
    """
    started_here = _handle is None
    handle = start({}, to_files=False)
    if handle.processor is None:
        raise RuntimeError("spanfold is disabled (SPANFOLD_DISABLED): no traces can be captured")
    writer = MemoryWriter()
    handle.processor.add_writer(writer)
    try:
        yield writer.traces
    finally:
        handle.flush(timeout=30.0)
        handle.processor.remove_writer(writer)
        if started_here:
            stop()
