"""spanfold: OpenTelemetry tracing for AI agents, folded into flat, readable traces.

import spanfold
spanfold.init()                      # patch the installed LLM clients; traces go to ./traces/*.jsonl

@spanfold.tool                       # optional: an execute_tool span per call
def get_weather(city: str) -> str: ...

with spanfold.agent("weather-bot"):  # optional: one trace for the whole run
    ...

with spanfold.context(user_id="u-42", session_id="chat-7", tags=["beta"]):  # optional: who and what it belongs to
    ...

The public surface is this module's ``__all__`` and these packages:

* ``spanfold.sampling``: ``Sample``, the ``sample`` option's value (also among the names above); ``Media``, the
  ``media`` option's value, is among them too (defined in the internal ``content`` package);
* ``spanfold.api``: the public API's home (``context``, and the span processor that writes its values on every span);
* ``spanfold.testing``: MockLLMServer (every provider's wire format, no network), scenarios and ``run_agent``;
* ``spanfold.checks``: trajectory and expected-message checks, and the pytest plugin (``spanfold_traces``);
* ``spanfold.trace``: reading, validating and rendering trace files (``trace.read``, ``trace.model``);
* ``spanfold.exporter``: ``pipeline.processor.FoldingSpanProcessor`` and ``pipeline.span_exporter.FoldingSpanExporter``,
  for a TracerProvider of your own;
* ``spanfold.instrumentation.providers`` and ``.frameworks``: one OpenTelemetry instrumentor per library
  (``opentelemetry-instrument`` finds them by their entry points).

Internal, their names free to change in any release: ``bootstrap``, ``cli``, ``codecs``, ``commands``, ``config``,
``content``, ``counters``, ``demo``, ``host_check``, ``pricing``, ``run_report``, ``semconv``, ``setup``,
``stitching``, ``text``, ``ui``, ``version``, ``zero_code``, and the modules of the public packages not named above.
"""

from __future__ import annotations

from os import PathLike
from typing import TYPE_CHECKING, Any

from spanfold import counters as _counters
from spanfold.api.agent import agent
from spanfold.api.context import context
from spanfold.api.tool import tool
from spanfold.version import __version__

if TYPE_CHECKING:  # the SDK-side modules load on first init(), not on import
    from spanfold.content.media import Media
    from spanfold.sampling.option import Sample
    from spanfold.setup import Handle

__all__ = [
    "Handle",
    "Media",
    "Sample",
    "__version__",
    "agent",
    "context",
    "flush",
    "init",
    "score",
    "shutdown",
    "stats",
    "tool",
]


def __getattr__(name: str) -> Any:
    if name == "Handle":
        from spanfold.setup import Handle

        return Handle
    if name == "Media":
        from spanfold.content.media import Media

        return Media
    if name == "Sample":
        from spanfold.sampling.option import Sample

        return Sample
    raise AttributeError(f"module 'spanfold' has no attribute {name!r}")


def init(
    output: str | PathLike[str] | None = None,
    format: str | None = None,
    capture_content: bool | str | None = None,
    **options: Any,
) -> Handle:
    """Patch the installed LLM client libraries and write every agent run as a flat trace.

    Options (an argument wins over its environment variable, which wins over the default):

    * ``output`` (``SPANFOLD_OUTPUT``, default ``traces``): the directory the trace files are written to.
    * ``format`` (``SPANFOLD_FORMAT``, default ``invariant``): ``invariant`` (``traces.jsonl`` + ``traces.meta.jsonl``),
      ``agentv`` (``traces.agentv.jsonl``), ``agentv-transcript`` (AgentV's transcript rows, what ``agentv eval run
      --transcript`` grades) or ``otlp-json`` (each trace's spans as one OTLP/JSON line in
      ``traces.otlp.jsonl``, the Collector file exporter's layout).
    * ``capture_content`` (``SPANFOLD_CAPTURE_CONTENT``, else ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``;
      default on): record prompts, completions and tool arguments and results. Off, a trace still folds: roles, tool
      names, ids, timings and errors. Or a capture mode of the conventions: ``"SPAN_ONLY"`` (on), ``"NO_CONTENT"``
      (off), ``"EVENT_ONLY"`` (a model call's content in its ``gen_ai.client.inference.operation.details`` log event,
      none on spans) or ``"SPAN_AND_EVENT"``; the flat trace is the same in every mode that captures content.
    * ``tool_definitions`` (``SPANFOLD_TOOL_DEFINITIONS``, default ``required``): what ``gen_ai.tool.definitions``
      holds: each tool's type and name (the conventions' required fields), or with ``full`` its description and
      parameter schema too.
    * ``stream_usage`` (``SPANFOLD_STREAM_USAGE``, default off): ask OpenAI Chat Completions streams the application
      sent without ``stream_options.include_usage`` for their token usage, the one change spanfold makes to a
      request; the usage-only last chunk this adds is kept from the application, which gets the chunks it would have
      got. Off, such a stream has no token counts (unknown, never 0).
    * ``redact`` (``SPANFOLD_REDACT``, default off): ``True`` for the built-in patterns (emails, API keys, tokens,
      card numbers), or a callable (text -> text, run after them), or a ``spanfold.content.redaction.Redaction``.
    * ``stitch`` (``SPANFOLD_STITCH``, default on): give the calls and tool runs of one run that opens no agent span
      one trace, when the evidence names one run only (never two users' runs); ``stitch_idle``
      (``SPANFOLD_STITCH_IDLE``, 30 s): how long such a run stays open without a call (ten times as long while it
      waits on tools).
    * ``threads`` (``SPANFOLD_THREADS``, default on): carry the OpenTelemetry context (the current span, and
      ``spanfold.context``'s values) into threads and thread pools, as OpenTelemetry's
      ``opentelemetry-instrumentation-threading`` does (built in: nothing to install), so a run whose tools run in a
      ``ThreadPoolExecutor`` stays one trace. (Left to OpenTelemetry's when ``opentelemetry-instrument`` already
      turned it on.)
    * ``baggage`` (``SPANFOLD_BAGGAGE``, default off): W3C baggage between services: a ``spanfold.context``'s user and
      session travel as the baggage entries ``user.id`` and ``session.id`` on every request the application's HTTP
      instrumentation propagates context on, and an incoming request's baggage ``user.id`` / ``session.id`` become
      the run's where no ``spanfold.context`` names them (a front end's user reaches the agent service). Turn it on
      only where the callers are your own: the baggage goes to every service called, a model provider's included.
    * ``instrument`` (``SPANFOLD_INSTRUMENT``): the client libraries to patch: all installed (default), ``none``, or
      a list such as ``"openai,anthropic"``.
    * ``prices`` (``SPANFOLD_PRICES``): your own prices, over the table's (a model on your own hardware, a negotiated
      rate): a YAML or JSON file, or the list itself, of entries such as ``{"model": "llama3.2", "provider":
      "ollama", "input_mtok": 0, "output_mtok": 0}`` (US dollars per million tokens; ``cache_read_mtok``,
      ``cache_write_mtok``, ``output_reasoning_mtok`` too). Each model call's cost is priced on the worker from
      genai-prices' bundled table (``pip install 'spanfold[cost]'``, never fetched) and written to the metadata.
    * ``price_cache`` (``SPANFOLD_PRICE_CACHE``): where the prices of the models a process priced are kept for the
      next one (default: the user's cache directory, ``~/.cache/spanfold``; ``"off"``: not kept), so that a process
      pricing the same models does not import genai-prices (150-400 ms of CPU beside its first calls).
    * ``otlp`` (``SPANFOLD_OTLP``): also export the raw spans over OTLP/HTTP to this endpoint (by default when
      spanfold installs the provider and ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``..._TRACES_ENDPOINT`` is set).
    * ``metrics`` (``SPANFOLD_METRICS``): the GenAI client metrics, through the OpenTelemetry metrics API:
      ``gen_ai.client.operation.duration`` and ``gen_ai.client.token.usage`` histograms,
      ``gen_ai.client.inference.time_to_first_chunk`` for streams, and the ``spanfold.gen_ai.client.cost`` counter
      (added on the worker). By default recorded when the application set a MeterProvider before ``init()``;
      ``True`` also without one (a MeterProvider exporting over OTLP/HTTP to ``otlp`` or the ``OTEL_*`` endpoint);
      ``False`` never; or pass the ``MeterProvider`` to record to.
    * ``sample`` (``SPANFOLD_SAMPLE``, default off: every run kept): keep whole runs, decided once each is folded:
      every run that errored, ran longer than ``slower_than`` seconds, cost more than ``costlier_than`` US dollars
      or failed one of the ``failing`` checks (callables over the folded trace, spanfold checks, spec files), and
      of the rest the fraction ``rate``, chosen by trace id (every process and shard keeps the same runs):
      ``spanfold.Sample(rate=0.1, slower_than=30, costlier_than=0.5, failing=[check])``, a rate alone, or text
      (``"rate=0.1,slower_than=30s,costlier_than=0.5,failing=spec.yaml"``). The files and spanfold's own OTLP
      export alike (a kept run's spans leave together once it is decided); counted in ``stats()``.
    * ``media`` (``SPANFOLD_MEDIA``, default off): images, audio and documents sent as base64 leave the spans: each
      blob of at least ``min_bytes`` (16 KiB decoded, by default) is stored once, named by the sha256 of its bytes,
      and a ``uri`` part (type, modality, mime_type, uri) is recorded in its place, in the spans and the trace files
      alike (other producers' spans too, as they are folded). ``True`` (``"on"``) stores them in ``<output>/media/``
      (an absolute ``file://`` uri; ``spanfold ui`` shows them); a directory's path; any fsspec URL such as
      ``"s3://bucket/prefix"`` (``pip install 'spanfold[media]'`` and the URL's driver); or
      ``spanfold.Media(url="s3://bucket/prefix", min_bytes=64 * 1024)`` (text: ``"url=s3://bucket/prefix,
      min_bytes=64KiB"``). A blob that cannot be stored stays inline (counted); with content capture off nothing is
      stored.
    * ``file_per_trace`` (``SPANFOLD_FILE_PER_TRACE``): also write each trace to its own ``<trace_id>.json``.
    * Rotation, for a service that runs for months: ``rotate_bytes`` (``SPANFOLD_ROTATE_BYTES``, such as ``100MiB``)
      and/or ``rotate_when`` (``SPANFOLD_ROTATE_WHEN``, ``midnight``) write numbered files
      (``traces.2025-06-01.000003.jsonl`` and its ``.meta.jsonl``) instead of one ``traces.jsonl``, a new one started
      before the newest would grow past ``rotate_bytes`` or on a new day; ``keep_files`` (``SPANFOLD_KEEP_FILES``)
      and ``keep_days`` (``SPANFOLD_KEEP_DAYS``) delete the oldest when a new one starts.
    * ``disabled`` (``SPANFOLD_DISABLED``): make ``init()`` a no-op.
    * Bounds: ``max_queue_size``, ``max_traces_in_flight``, ``max_spans_per_trace``,
      ``max_attribute_bytes_per_trace``, ``max_buffered_bytes``, ``trace_timeout`` (each ``SPANFOLD_`` + its
      name in capitals). ``spanfold.config.OPTIONS`` is the table all of these come from.

    Idempotent: a second call returns the first call's handle. Reuses an SDK ``TracerProvider`` already set,
    else installs one. A bad value raises ``spanfold.config.ConfigError`` naming the option.
    """
    from spanfold import setup

    overrides = dict(options)
    overrides.update(output=output, format=format, capture_content=capture_content)
    return setup.start(overrides)


def flush(timeout: float | None = None) -> bool:
    """Block until every finished trace is on disk (at most ``timeout`` seconds); True when all were written."""
    from spanfold import setup

    handle = setup.current()
    return True if handle is None else handle.flush(timeout)


def score(
    trace_id: str | int,
    name: str,
    value: float | int | bool | str,
    comment: str | None = None,
    source: str = "human",
    *,
    directory: str | PathLike[str] | None = None,
) -> bool:
    """Score a run after it ended: a user's thumbs-up (``source="human"``), a test's verdict (``"code"``), an LLM
    judge's grade (``"llm"``).

    * ``trace_id``: the run's (its metadata's ``trace_id``; an OpenTelemetry trace id may be given as an integer);
    * ``name``: what is scored (non-empty text, at most 128 characters);
    * ``value``: a finite number, a bool, or a short label (at most 256 characters);
    * ``comment``: why (content: written only with content capture on, redacted when redaction is on);
    * ``directory``: the trace directory (default: the running ``init()``'s ``output``, else ``SPANFOLD_OUTPUT`` or
      ``traces``).

    Appended as one whole line to ``traces.scores.jsonl`` in the trace directory (safe from many processes at once),
    where ``spanfold summary``, ``show`` and ``check --where score.NAME<0.5`` read it, and emitted as a
    ``gen_ai.evaluation.result`` event in the run's trace when the application has a LoggerProvider. A bad argument
    raises ``TypeError`` or ``ValueError`` naming it; a file that cannot be written is counted in ``stats()``, never
    raised: returns whether the line was written.
    """
    from spanfold.api.score import score as record

    return record(trace_id, name, value, comment, source, directory=directory)


def shutdown() -> None:
    """Flush, stop spanfold's worker and restore the patched libraries. ``init()`` may be called again."""
    from spanfold import setup

    setup.stop()


def stats() -> dict[str, Any]:
    """What spanfold did and what went wrong inside it, as counters (only those that happened are present).

    * ``spans_received``, ``traces_written``, ``traces_skipped`` (no GenAI span), ``traces_incomplete`` (cut before
      their root ended), ``traces_truncated`` (past a bound), ``traces_shed``, ``dropped_spans``, ``duplicate_spans``;
    * ``queue_depth``, ``traces_in_flight``, ``conversations_open``: now, approximately;
    * ``stitch_splits`` and ``stitch_splits.<reason>``: calls whose evidence pointed at more than one live run and
      that started a trace of their own (``ambiguous``, ``in_flight``, ``conflict``);
    * ``writer.dropped_traces``, ``writer.io_errors``, ``writer.unsafe_path``, ``writer.torn_lines_cut``,
      ``writer.meta_lines_restored``, ``writer.rotations``, ``writer.files_removed``;
    * ``cost.unknown_model``, ``cost.bad_usage``, ``cost.no_table``: model calls that reported tokens and got no cost
      (a model no price knows; tokens that do not add up; genai-prices not installed);
    * ``sampling.kept`` and ``sampling.kept.<reason>`` (``error``, ``slow``, ``costly``, ``failing``,
      ``check_error``: a check that raised, ``rate``), ``sampling.dropped`` and ``sampling.dropped.rate``: runs
      the ``sample`` option kept and dropped;
    * ``dropped_calls``: model calls whose metric points the full queue could not take (``metrics``);
    * ``media.stored`` and ``media.reused`` (blobs the ``media`` option wrote, and found already stored),
      ``media.inline_resting`` (kept inline while a store that failed rests), ``media.not_base64``,
      ``media_unavailable`` (an fsspec URL without fsspec: blobs inline);
    * ``faults`` and ``fault.<kind>``: spanfold's own faults (each logged once per kind; your program is never
      affected); ``instrument.unsupported_version``: a library left unpatched.
    """
    from spanfold import setup

    out = _counters.snapshot()
    handle = setup.current()
    if handle is not None and handle.processor is not None:
        out.update(handle.processor.stats())
    return out
