"""The instrumentors spanfold knows, and patching each client library when the application imports it.

``init()`` imports no client library: for each one installed it registers a post-import hook (wrapt's), and the
library is patched the moment the application imports it (at once when it already has). A process that only uses
openai pays nothing for the anthropic SDK installed beside it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
import threading
from collections.abc import Collection
from types import ModuleType
from typing import Any

from spanfold import counters
from spanfold.content.runtime import Runtime
from spanfold.instrumentation.toolkit.hooks import ImportHooks

logger = logging.getLogger("spanfold")

#: name -> (the client library's import name, "module:Instrumentor")
INSTRUMENTORS: dict[str, tuple[str, str]] = {
    "openai": ("openai", "spanfold.instrumentation.providers.openai.patches:OpenAIInstrumentor"),
    "anthropic": ("anthropic", "spanfold.instrumentation.providers.anthropic.patches:AnthropicInstrumentor"),
    "gemini": ("google.genai", "spanfold.instrumentation.providers.gemini.patches:GeminiInstrumentor"),
    "bedrock": ("botocore", "spanfold.instrumentation.providers.bedrock.patches:BedrockInstrumentor"),
    "groq": ("groq", "spanfold.instrumentation.providers.groq:GroqInstrumentor"),
    "mistral": ("mistralai.client", "spanfold.instrumentation.providers.mistral:MistralInstrumentor"),
    "ollama": ("ollama", "spanfold.instrumentation.providers.ollama:OllamaInstrumentor"),
    "cohere": ("cohere", "spanfold.instrumentation.providers.cohere:CohereInstrumentor"),
    "litellm": ("litellm", "spanfold.instrumentation.providers.litellm:LiteLLMInstrumentor"),
    "portkey": ("portkey_ai", "spanfold.instrumentation.providers.portkey:PortkeyInstrumentor"),
    "mcp": ("mcp", "spanfold.instrumentation.frameworks.mcp:MCPInstrumentor"),
    "openai_agents": ("agents", "spanfold.instrumentation.frameworks.openai_agents:OpenAIAgentsInstrumentor"),
    "langchain": ("langchain_core", "spanfold.instrumentation.frameworks.langchain:LangChainInstrumentor"),
    "langgraph": ("langgraph.pregel", "spanfold.instrumentation.frameworks.langgraph:LangGraphInstrumentor"),
    "smolagents": ("smolagents", "spanfold.instrumentation.frameworks.smolagents.patches:SmolagentsInstrumentor"),
    "agno": ("agno", "spanfold.instrumentation.frameworks.agno:AgnoInstrumentor"),
    "crewai": ("crewai", "spanfold.instrumentation.frameworks.crewai:CrewAIInstrumentor"),
    "llama_index": ("llama_index.core", "spanfold.instrumentation.frameworks.llama_index:LlamaIndexInstrumentor"),
    "claude_agent_sdk": (
        "claude_agent_sdk",
        "spanfold.instrumentation.frameworks.claude_agent_sdk.patches:ClaudeAgentSDKInstrumentor",
    ),
    "dspy": ("dspy", "spanfold.instrumentation.frameworks.dspy.patches:DSPyInstrumentor"),
    "autogen": ("autogen_agentchat", "spanfold.instrumentation.frameworks.autogen:AutoGenInstrumentor"),
    "agent_framework": (
        "agent_framework",
        "spanfold.instrumentation.frameworks.agent_framework:AgentFrameworkInstrumentor",
    ),
    "semantic_kernel": (
        "semantic_kernel",
        "spanfold.instrumentation.frameworks.semantic_kernel:SemanticKernelInstrumentor",
    ),
    "instructor": ("instructor", "spanfold.instrumentation.frameworks.instructor:InstructorInstrumentor"),
    "qdrant": ("qdrant_client", "spanfold.instrumentation.stores.qdrant:QdrantInstrumentor"),
    "chroma": ("chromadb", "spanfold.instrumentation.stores.chroma:ChromaInstrumentor"),
    "lancedb": ("lancedb", "spanfold.instrumentation.stores.lancedb:LanceDBInstrumentor"),
    "mem0": ("mem0", "spanfold.instrumentation.stores.mem0:Mem0Instrumentor"),
}

_lock = threading.Lock()
#: The hooks of one instrument_all; the next instrument_all or uninstrument_all withdraws them.
_HOOKS = ImportHooks()


def _load(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def available() -> list[str]:
    """Instrumentations whose client library is installed here (found without importing it)."""
    out = []
    for name, (lib, _) in INSTRUMENTORS.items():
        try:
            if importlib.util.find_spec(lib) is not None:
                out.append(name)
        except (ImportError, ValueError):
            continue
    return out


def _on_import(name: str, generation: int, tracer_provider: Any, rt: Runtime, module: ModuleType) -> None:
    """The post-import hook: patch ``name``'s library, unless a later init() or shutdown() made this hook stale."""
    with _lock:
        if not _HOOKS.valid(generation):
            return
        try:
            instrumentor = _load(INSTRUMENTORS[name][1])()
            instrumentor.instrument(tracer_provider=tracer_provider, runtime=rt)
            if instrumentor.is_instrumented_by_opentelemetry:
                counters.incr(f"instrumented.{name}")
        except Exception as exc:
            counters.fault(f"instrument.{name}", exc)


def instrument_all(tracer_provider: Any, rt: Runtime, only: Collection[str] | None = None) -> list[str]:
    """Patch every installed library (or those named in ``only``) when the application imports it; return their
    names."""
    generation = _HOOKS.renew()
    names = [name for name in available() if only is None or name in only]
    for name in names:
        _HOOKS.register(
            INSTRUMENTORS[name][0], generation, functools.partial(_on_import, name, generation, tracer_provider, rt)
        )
    return names


def uninstrument_all() -> None:
    """Restore every library spanfold patched; hooks not yet fired will not patch."""
    _HOOKS.withdraw()
    for name in available():
        if INSTRUMENTORS[name][0] not in _imported():
            continue  # never imported: nothing was patched
        try:
            instrumentor = _load(INSTRUMENTORS[name][1])()
            if instrumentor.is_instrumented_by_opentelemetry:
                instrumentor.uninstrument()
        except Exception as exc:
            counters.fault(f"uninstrument.{name}", exc)


def _imported() -> Collection[str]:
    import sys

    return sys.modules.keys()
