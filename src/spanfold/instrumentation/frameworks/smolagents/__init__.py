"""smolagents (Hugging Face): its runs, model steps and tool runs (:mod:`.patches` says what is patched).

:mod:`.agents`: agent runs and ``ToolCallingAgent`` tool runs; :mod:`.code`: ``CodeAgent`` steps; :mod:`.model`:
model calls as model steps; :mod:`.text_protocol`: smolagents' text protocol turned back into tool calls and outputs."""
