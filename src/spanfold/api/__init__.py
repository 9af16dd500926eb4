"""spanfold's public API, one module per part (re-exported by ``spanfold``).

* :mod:`.context`: ``spanfold.context(user_id=, session_id=, tags=, metadata=, prompt=)``, who a run is for and what it
  belongs to, on every span started inside and in each run's metadata;
* :mod:`.tool`: ``@spanfold.tool``, every call of a tool function an ``execute_tool`` span;
* :mod:`.agent`: ``spanfold.agent(name, ...)``, one ``invoke_agent`` span around a run;
* :mod:`.processor`: the span processor that writes those values on every span (``init()`` installs it; add it to a
  TracerProvider of your own with ``provider.add_span_processor(ContextSpanProcessor())``).

``context`` and ``processor`` sit at the ground floor (they import neither half: ``spanfold.agent`` opens a context);
``tool`` and ``agent`` sit above the instrumentation, whose tool spans they make.
The package re-exports nothing (``spanfold.api.context`` stays the module): ``spanfold`` itself is the one-line surface.
"""
