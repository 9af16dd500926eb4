"""What every provider and framework is built from: one wrapper for every model method (``calls``), stream proxies,
request and history readers, span helpers, patch tables, ``@tool`` and agent spans, and the conversation a zero-code
run's calls belong to (``conversations``)."""
