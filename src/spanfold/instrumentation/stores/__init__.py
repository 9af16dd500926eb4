"""Instrumentors of vector databases' Python clients: each search a ``retrieval {database}`` span whose store is the
collection searched (:mod:`spanfold.instrumentation.invocations.retrievals`). Each is patched lazily by
:mod:`spanfold.instrumentation.registry`."""
