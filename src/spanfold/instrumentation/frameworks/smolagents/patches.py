"""smolagents (Hugging Face): an agent run is one trace, rooted at ``invoke_agent {agent name}``, with its model steps
and tool runs.

Supported: ``smolagents`` >= 1.26, < 2 (tested with 1.26). Patched, once on the base classes:

* ``MultiStepAgent._run_stream``, the generator every run goes through (``run()``, ``run(stream=True)``, a managed
  agent called by its manager): the run's ``invoke_agent`` span, named after the agent (``name=``, else its class),
  current while each step runs and ended when the generator is exhausted, fails, is closed or is collected. A
  managed agent's run is its own ``invoke_agent`` span inside the manager's tool run of it: one trace, each agent's
  steps under its own name. A run inside ``spanfold.agent`` (any ``invoke_agent`` span that is current) opens none.
* The model classes' ``generate`` and ``generate_stream``: each call one model step, read from smolagents' objects
  (:mod:`~spanfold.instrumentation.frameworks.smolagents.model`: smolagents re-sends earlier tool calls and outputs
  as text, which the step's inputs turn back into tool calls and outputs).
* ``ToolCallingAgent.process_tool_calls`` (the calls the model asked for, with their ids, and what each run
  observed) and ``ToolCallingAgent.execute_tool_call``: each tool run (``final_answer`` and managed agents too) an
  ``execute_tool {name}`` span with the model's call id, the arguments, the output the agent sends the model, or the
  error (re-raised unchanged: smolagents shows it to the model and goes on).

* ``CodeAgent._step_stream``: a ``CodeAgent``'s action is Python code the model writes, which smolagents parses from
  the text and runs as a ``python_interpreter`` tool call (id ``call_<n>``): the step's output holds that call
  (``{"code": ...}``) after the model's text, and the code's run is its ``execute_tool python_interpreter`` span
  (the observation smolagents sends the model, or the error).
"""

from __future__ import annotations

from collections.abc import Sequence

from spanfold.content.runtime import Runtime
from spanfold.instrumentation.frameworks.smolagents import agents, code, model
from spanfold.instrumentation.toolkit.patching import Patch, TableInstrumentor

SUPPORTED = "smolagents >= 1.26, < 2"
AGENTS = "smolagents.agents"
MODELS = "smolagents.models"
#: The model classes whose ``generate`` / ``generate_stream`` are patched (subclasses inherit them).
MODEL_CLASSES = (
    "OpenAIModel",
    "LiteLLMModel",
    "InferenceClientModel",
    "TransformersModel",
    "VLLMModel",
    "MLXModel",
    "AmazonBedrockModel",
)


_GENERATE, _GENERATE_STREAM = model.wrappers(agents.observations, code.holder)

PATCHES = (
    Patch(AGENTS, "MultiStepAgent._run_stream", agents.RUNS.patch()),
    Patch(AGENTS, "ToolCallingAgent.process_tool_calls", agents.process_wrapper),
    Patch(AGENTS, "ToolCallingAgent.execute_tool_call", agents.execute_wrapper),
    Patch(AGENTS, "CodeAgent._step_stream", code.code_step_wrapper),
    *(Patch(MODELS, f"{cls}.generate", _GENERATE) for cls in MODEL_CLASSES),
    *(Patch(MODELS, f"{cls}.generate_stream", _GENERATE_STREAM) for cls in MODEL_CLASSES),
)


class SmolagentsInstrumentor(TableInstrumentor):
    """smolagents runs, model steps and tool runs."""

    library = "smolagents"

    dependencies = (SUPPORTED,)

    def patches(self, rt: Runtime) -> Sequence[Patch]:
        return PATCHES
