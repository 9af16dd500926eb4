"""spanfold's public API, one module per part (re-exported by ``spanfold``; ``@spanfold.tool`` and ``spanfold.agent``
still live in :mod:`spanfold.instrumentation.toolkit.tools`).

* :mod:`.context`: ``spanfold.context(user_id=, session_id=, tags=, metadata=, prompt=)``, who a run is for and what it
  belongs to, on every span started inside and in each run's metadata;
* :mod:`.processor`: the span processor that writes those values on every span (``init()`` installs it; add it to a
  TracerProvider of your own with ``provider.add_span_processor(ContextSpanProcessor())``).

Both sit at the ground floor (they import neither half): the instrumentation's ``spanfold.agent`` opens a context.
The package re-exports nothing (``spanfold.api.context`` stays the module): ``spanfold`` itself is the one-line surface.
"""
