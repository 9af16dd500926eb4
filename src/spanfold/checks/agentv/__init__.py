"""AgentV 4.42's graders, scored as AgentV scores them, so one eval file gives one verdict in both tools.

* :mod:`.trajectory`: ``tool-trajectory`` (modes ``any_order`` with ``minimums``, ``in_order``, ``exact``,
  ``subset``, ``superset``; ``args_match`` ``exact`` (AgentV's default), ``superset``, ``subset``, ``ignore`` or a
  list of fields; ``args: any``; ``max_duration_ms`` per expected call).
* :mod:`.metrics`: ``execution-metrics`` budgets (``max_tool_calls``, ``max_llm_calls``, ``max_tokens``,
  ``max_cost_usd``, ``max_duration_ms``, ``target_exploration_ratio``).
* :mod:`.eval_file`: AgentV eval files (``tests:`` each with ``assertions:``): a test's graders combined as AgentV
  combines them (weights, ``required``, ``min_score``, ``negate``, the test's threshold).
* :mod:`.graders`: what they share (the grader result, AgentV's equality, the common keys).

Each grader reads the trace as AgentV does (:mod:`spanfold.trace.agentv`): the calls of its messages, the LLM calls
as its assistant messages, the run's tokens, cost and duration.
"""
