"""Semantic Kernel (``semantic-kernel``): one trace per agent invocation, named after the agent.

Semantic Kernel traces each kernel function it runs for the model (``execute_tool {plugin}-{function}`` with the
model's call id) whatever its settings, and, with its diagnostics on
(``SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS`` or its ``_SENSITIVE`` twin), each agent invocation
(``invoke_agent {name}``) and each model call of its connectors (``chat {model}``); spanfold folds those as they are,
the client's model calls it traces (the openai SDK under the OpenAI and Azure connectors) one step with Semantic
Kernel's. What its diagnostics off leaves out is the run: spanfold opens ``invoke_agent {name}`` around a
``ChatCompletionAgent``'s ``get_response`` (a coroutine), ``invoke`` and ``invoke_stream`` (async generators), unless
Semantic Kernel's own agent span is on. Supported: ``semantic-kernel`` >= 1.45, < 2.
"""

from __future__ import annotations

import sys
from typing import Final

from spanfold.instrumentation.invocations.agent_runs import AgentRuns
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor

SUPPORTED: Final = "semantic-kernel >= 1.45, < 2"
AGENT: Final = "semantic_kernel.agents.chat_completion.chat_completion_agent"
DIAGNOSTICS: Final = "semantic_kernel.utils.telemetry.agent_diagnostics.decorators"


def own_spans() -> bool:
    """Whether Semantic Kernel's diagnostics are on (it then traces its agents' invocations itself)."""
    decorators = sys.modules.get(DIAGNOSTICS)
    enabled = getattr(decorators, "are_model_diagnostics_enabled", None)
    return bool(enabled()) if callable(enabled) else False


#: A ``ChatCompletionAgent``'s invocation, named after the agent.
RUNS: Final = AgentRuns("semantic_kernel", own_spans=own_spans)

METHODS: Final = ("get_response", "invoke", "invoke_stream")
PATCHES: Final = tuple(Patch(AGENT, f"ChatCompletionAgent.{method}", RUNS.patch()) for method in METHODS)


class SemanticKernelInstrumentor(TableInstrumentor, library="semantic_kernel", supported=SUPPORTED, table=PATCHES):
    """Semantic Kernel's agent invocations, while its own diagnostics are off."""
