"""The one error a trace reader raises: what is wrong, in words a person can act on."""

from __future__ import annotations


class TraceError(ValueError):
    """A JSON value that is not a trace of any format spanfold reads (the message says why, naming the event)."""
