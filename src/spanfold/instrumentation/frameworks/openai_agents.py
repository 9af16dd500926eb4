"""The OpenAI Agents SDK (``openai-agents``, module ``agents``): a tracing processor added to the SDK's own, turning
its agent, function-tool, handoff and guardrail spans into OTel GenAI spans
(:mod:`~spanfold.instrumentation.frameworks.openai_agents_processor`). A ``Runner.run`` becomes one OTel trace, rooted
in ``invoke_agent {starting agent}``, whose model calls are the openai patch's spans (the SDK's generation and
response spans are not turned into model spans: that would record each call twice).

The processor is added with ``agents.add_trace_processor`` when the application imports the SDK (the registry's
post-import hook), once per process; the SDK's default processor (its upload to OpenAI's tracing backend) is left as
the user set it. ``uninstrument()`` makes spanfold's processor inert (the SDK has no call to remove one). A user who
replaces the processors (``agents.set_trace_processors``) removes spanfold's too.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from opentelemetry.trace import get_tracer

from spanfold.content import runtime
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.frameworks.openai_agents_processor import AgentsTracing
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor
from spanfold.version import __version__

SUPPORTED = "openai-agents >= 0.24, < 0.25"

#: The processor registered with the SDK (one per process: the SDK keeps every processor it is given).
_processor: AgentsTracing | None = None


def processor() -> AgentsTracing:
    """spanfold's processor, registered with the SDK on first use (imports ``agents``)."""
    global _processor
    if _processor is None:
        from agents.tracing import TracingProcessor, add_trace_processor

        cls: Any = type("SpanfoldTracingProcessor", (AgentsTracing, TracingProcessor), {})
        made = cls()
        add_trace_processor(made)
        _processor = made
    return _processor


class OpenAIAgentsInstrumentor(TableInstrumentor):
    """Traces OpenAI Agents SDK runs: agents, tool runs, handoffs and guardrails."""

    library = "agents"

    dependencies = (SUPPORTED,)

    def patches(self, rt: Runtime) -> Sequence[Patch]:
        return ()

    def _instrument(self, **kwargs: Any) -> None:
        imported = sys.modules.get("agents")
        if imported is not None and not hasattr(imported, "add_trace_processor"):
            return  # the application's own module named ``agents``, not the SDK: nothing to do, nothing to say
        super()._instrument(**kwargs)
        tracer = get_tracer(__name__, __version__, kwargs.get("tracer_provider"))
        processor().enable(tracer, kwargs.get("runtime") or runtime.active())

    def _uninstrument(self, **kwargs: Any) -> None:
        super()._uninstrument(**kwargs)
        if _processor is not None:
            _processor.disable()
