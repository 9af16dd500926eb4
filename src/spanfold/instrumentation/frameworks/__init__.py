"""Instrumentors of agent frameworks: the tool runs, agent runs and handoffs they execute themselves (their model
calls are recorded by the provider patches). Each is patched lazily by :mod:`spanfold.instrumentation.registry`."""
