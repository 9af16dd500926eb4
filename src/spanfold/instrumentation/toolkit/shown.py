"""What a backend shows first of a span: its input and output as ``input.value`` / ``output.value`` (with
``input.mime_type`` / ``output.mime_type``), the OpenInference attributes Arize Phoenix fills its trace list and
Input/Output columns from, and Langfuse reads too.

* a model call: its request's messages and its reply's, the very JSON texts of ``gen_ai.input.messages`` /
  ``gen_ai.output.messages`` (no second encoding); a call that starts a trace of its own (a zero-code run's first
  call) shows the question it was asked, as text;
* a tool run: its arguments and its result, the texts of ``gen_ai.tool.call.arguments`` / ``.result``;
* a retrieval (``retrieval {store}``): what Phoenix shows of a retriever, ``openinference.span.kind`` ``RETRIEVER``,
  its query as ``input.value`` and the documents it found as ``retrieval.documents.{N}.document.id|score|content``,
  from ``gen_ai.retrieval.query.text`` / ``gen_ai.retrieval.documents`` (:func:`retrieval_request`,
  :func:`retrieval_result`);
* a run's root (``spanfold.agent``, a LangGraph graph run, an OpenAI Agents SDK run): the run's question (the last
  user message of its first model call) and its final answer (the text of its last model call's reply), as text.

Every value is made from attributes that content capture and redaction already decided: with capture off there is
none, and a redacted message is shown redacted. A root learns its question and answer from the model calls that run
in its context (:func:`open_run` puts a :class:`Shown` there; :class:`~.spans.ModelSpan` tells it each call's
messages); the two texts are parsed once, when the root ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry.trace import Span

from spanfold import counters, semconv
from spanfold.codecs import jsonio

INPUT_VALUE: Final = semconv.OPENINFERENCE_INPUT_VALUE
OUTPUT_VALUE: Final = semconv.OPENINFERENCE_OUTPUT_VALUE
INPUT_MIME_TYPE: Final = semconv.OPENINFERENCE_INPUT_MIME_TYPE
OUTPUT_MIME_TYPE: Final = semconv.OPENINFERENCE_OUTPUT_MIME_TYPE
JSON: Final = semconv.MIME_JSON
TEXT: Final = semconv.MIME_TEXT

SPAN_KIND: Final = semconv.OPENINFERENCE_SPAN_KIND
RETRIEVER: Final = semconv.OPENINFERENCE_KIND_RETRIEVER
DOCUMENTS: Final = semconv.OPENINFERENCE_RETRIEVAL_DOCUMENTS
#: A recorded document's key -> Phoenix's name for it under ``retrieval.documents.{N}.``.
_DOCUMENT_FIELDS: Final = semconv.OPENINFERENCE_DOCUMENT_FIELDS

_RUN_KEY = otel_context.create_key("spanfold.shown_run")


class Shown:
    """One run's first request and latest reply (the JSON texts its model calls recorded), until its root ends."""

    __slots__ = ("first_inputs", "last_outputs")

    def __init__(self) -> None:
        self.first_inputs: str | None = None
        self.last_outputs: str | None = None

    def attributes(self) -> dict[str, Any]:
        """The root's ``input.value`` / ``output.value``: the question and the final answer, where known."""
        out: dict[str, Any] = {}
        question = question_of(self.first_inputs)
        if question is not None:
            out.update({INPUT_VALUE: question, INPUT_MIME_TYPE: TEXT})
        answer = answer_of(self.last_outputs)
        if answer is not None:
            out.update({OUTPUT_VALUE: answer, OUTPUT_MIME_TYPE: TEXT})
        return out


def open_run(context: otel_context.Context) -> tuple[otel_context.Context, Shown]:
    """``context`` with a new run's :class:`Shown` in it: the model calls made in it (or in contexts made from it)
    tell it their messages."""
    shown = Shown()
    return otel_context.set_value(_RUN_KEY, shown, context), shown


def close_run(span: Span, shown: Shown | None) -> None:
    """Set the run's question and answer on its root ``span`` (before it ends)."""
    if shown is None:
        return
    try:
        attributes = shown.attributes()
        if attributes:
            span.set_attributes(attributes)
    except Exception as exc:
        counters.fault("shown.run", exc)


def _run(context: otel_context.Context | None = None) -> Shown | None:
    value = otel_context.get_value(_RUN_KEY, context)
    return value if isinstance(value, Shown) else None


def model_request(attributes: dict[str, Any], context: otel_context.Context | None, root: bool) -> None:
    """Add a model call's ``input.value`` to its request ``attributes`` (in place) and tell the run it belongs to.
    ``root``: the call starts a trace of its own, so it shows the question."""
    inputs = attributes.get(semconv.INPUT_MESSAGES)
    if not isinstance(inputs, str):
        return
    question = question_of(inputs) if root else None
    if question is not None:
        attributes[INPUT_VALUE], attributes[INPUT_MIME_TYPE] = question, TEXT
    else:
        attributes[INPUT_VALUE], attributes[INPUT_MIME_TYPE] = inputs, JSON
    run = _run(context)
    if run is not None and run.first_inputs is None:
        run.first_inputs = inputs


def model_result(attributes: Mapping[str, Any], run: Shown | None) -> dict[str, Any]:
    """A model call's ``output.value`` (empty without output messages); ``run``: the run it belongs to, told its
    latest reply."""
    outputs = attributes.get(semconv.OUTPUT_MESSAGES)
    if not isinstance(outputs, str):
        return {}
    if run is not None:
        run.last_outputs = outputs
    return {OUTPUT_VALUE: outputs, OUTPUT_MIME_TYPE: JSON}


def current_run(context: otel_context.Context | None = None) -> Shown | None:
    """The run whose context this is (None outside every run)."""
    return _run(context)


def tool_input(arguments: str) -> dict[str, Any]:
    """A tool run's ``input.value``: the text of its recorded arguments (JSON)."""
    return {INPUT_VALUE: arguments, INPUT_MIME_TYPE: JSON}


def tool_output(result: Any, is_text: bool) -> dict[str, Any]:
    """A tool run's ``output.value``: the text of its recorded result (``is_text``: the tool returned text, else the
    text is its result as JSON)."""
    return {OUTPUT_VALUE: result, OUTPUT_MIME_TYPE: TEXT if is_text else JSON}


def _messages(text: str | None) -> list[Any]:
    if not text:
        return []
    try:
        value = jsonio.loads(text)
    except Exception:  # not JSON (another producer's text): nothing to show from it
        return []
    return value if isinstance(value, list) else []


def _text(message: Any) -> str | None:
    parts = message.get("parts") if isinstance(message, dict) else None
    texts = [
        str(p["content"])
        for p in parts or ()
        if isinstance(p, dict) and p.get("type") == semconv.PART_TEXT and p.get("content") is not None
    ]
    return "\n".join(texts) if texts else None


def question_of(inputs: str | None) -> str | None:
    """The text of the last user message of a request's messages (JSON), None when there is none."""
    for message in reversed(_messages(inputs)):
        if isinstance(message, dict) and message.get("role") == "user":
            return _text(message)
    return None


def answer_of(outputs: str | None) -> str | None:
    """The text of a reply's first choice (JSON of output messages), None when it has none (only tool calls)."""
    messages = _messages(outputs)
    return _text(messages[0]) if messages else None


def retrieval_request(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """A retrieval's request ``attributes`` with Phoenix's: its span kind, and its query (the text capture and
    redaction decided) as ``input.value``."""
    out = {SPAN_KIND: RETRIEVER, **attributes}  # a rerank's RERANKER kept
    query = attributes.get(semconv.RETRIEVAL_QUERY_TEXT)
    if isinstance(query, str):
        out[INPUT_VALUE], out[INPUT_MIME_TYPE] = query, TEXT
    return out


def retrieval_result(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Phoenix's ``retrieval.documents.{N}.document.id|score|content`` of a retrieval's recorded documents (the JSON
    of ``gen_ai.retrieval.documents``: ids and scores always, the text where capture put it); empty without them."""
    out: dict[str, Any] = {}
    for n, doc in enumerate(_messages(attributes.get(semconv.RETRIEVAL_DOCUMENTS))):
        if not isinstance(doc, dict):
            continue
        prefix = f"{DOCUMENTS}{n}."
        for key, name in _DOCUMENT_FIELDS:
            value = doc.get(key)
            if value is not None:
                out[prefix + name] = value
    return out
