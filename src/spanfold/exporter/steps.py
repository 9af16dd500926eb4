"""The intermediate step model every exporter module shares: what a span stands for once its dialect read it.

* :class:`ModelStep`: one model call (inputs, outputs, model, usage, error ...);
* :class:`ToolStep`: one tool run (name, call id, arguments, result, error);
* :class:`AgentSpan`: an agent run, grouping only (the thread its steps belong to);
* :class:`AsideStep`: an embeddings call, a retrieval, a rerank or a memory operation: a metadata step beside the
  conversation (never an event: retrieved text appears where the application put it in a prompt).

Plain data: :mod:`spanfold.exporter.dialects.dispatch` makes them, :mod:`~spanfold.exporter.runs` (grouping and
stitching) and :mod:`~spanfold.exporter.fold.folding` read them. Messages are semconv messages (``{"role", "parts":
[...]}``), shared between steps that re-send the same history: never mutate them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeAlias

from spanfold.trace.model import StepCost, Usage

SemconvMessage: TypeAlias = dict[str, Any]


@dataclass(slots=True)
class ModelStep:
    """One model call: what it was sent, what it answered, and what it cost."""

    span_id: int
    parent_id: int | None
    start_ns: int
    end_ns: int
    inputs: list[SemconvMessage] = field(default_factory=list)
    outputs: list[SemconvMessage] = field(default_factory=list)
    system_instructions: list[dict[str, Any]] | None = None
    request_model: str | None = None
    response_model: str | None = None
    response_id: str | None = None
    usage: Usage | None = None
    finish_reasons: list[str] = field(default_factory=list)
    error: dict[str, Any] | None = None
    conversation_id: str | None = None
    previous_response_id: str | None = None
    provider: str | None = None
    #: Where the call was sent (``server.address``, ``server.port``): whose prices apply
    #: (:mod:`spanfold.pricing.endpoints`).
    server_address: str | None = None
    server_port: int | None = None
    #: What the span says the call cost (``gen_ai.usage.cost.*``: LiteLLM's ``response_cost``, a gateway's price).
    cost: StepCost | None = None

    @property
    def model(self) -> str | None:
        return self.response_model or self.request_model


@dataclass(slots=True)
class ToolStep:
    """One tool execution. ``result`` is the result text (JSON for structured results)."""

    span_id: int
    parent_id: int | None
    start_ns: int
    end_ns: int
    name: str | None
    call_id: str | None = None
    arguments: dict[str, Any] | str | None = None
    result: str | None = None
    error: dict[str, Any] | None = None
    conversation_id: str | None = None


@dataclass(slots=True)
class AgentSpan:
    """An agent run: groups the steps below it into one conversation thread."""

    span_id: int
    parent_id: int | None
    start_ns: int
    end_ns: int
    name: str | None
    conversation_id: str | None = None
    error: dict[str, Any] | None = None


@dataclass(slots=True)
class AsideStep:
    """A step of a kind of :data:`~spanfold.trace.model.ASIDE_KINDS`: an embeddings call (model, tokens, how many
    inputs), a retrieval or rerank (the store, ``top_k``, the query and the documents as they came, ``[{"id",
    "score", "text"?}]``) or a memory operation (``operation``: the conventions' ``search_memory`` ...). Priced like
    a model call when it reports tokens (:mod:`~spanfold.exporter.fold.cost`)."""

    span_id: int
    parent_id: int | None
    start_ns: int
    end_ns: int
    kind: str
    operation: str | None = None
    request_model: str | None = None
    response_model: str | None = None
    provider: str | None = None
    server_address: str | None = None
    server_port: int | None = None
    usage: Usage | None = None
    cost: StepCost | None = None
    inputs: int | None = None
    dimensions: int | None = None
    store: str | None = None
    top_k: int | None = None
    query: str | None = None
    documents: list[dict[str, Any]] | None = None
    error: dict[str, Any] | None = None

    @property
    def model(self) -> str | None:
        return self.response_model or self.request_model


Step: TypeAlias = "ModelStep | ToolStep | AgentSpan | AsideStep"
#: The steps of a trace's spans by span id (None: a span the fold does not read), parsed once.
Steps: TypeAlias = "dict[int, Step | None]"
