"""DSPy: its program runs, model calls and tool runs (:mod:`.patches` says what is patched).

:mod:`.runs`: program runs; :mod:`.model`: ``LM`` calls as model steps; :mod:`.react`: ReAct's steps and tool runs;
:mod:`.trajectory`: a ReAct run's state (its trajectory turned back into tool calls and outputs); :mod:`.lm_messages`:
DSPy's messages as typed messages."""
