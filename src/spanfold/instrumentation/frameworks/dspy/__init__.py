"""DSPy: its program runs, model calls and tool runs (:mod:`.instrumentor` says what is patched).

:mod:`.runs`: program runs; :mod:`.model`: ``LM`` calls as model steps; :mod:`.react`: ReAct's steps and tool runs;
:mod:`.trajectory`: a ReAct run's state (its trajectory turned back into tool calls and outputs); :mod:`.messages`:
DSPy's messages as typed messages."""
