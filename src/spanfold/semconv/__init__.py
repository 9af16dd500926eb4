"""The contract between instrumentation/ and exporter/, at the ground floor: both halves import it, neither defines
a name or a rule of its own.

* :mod:`.names`: every attribute name either half writes or reads (GenAI semantic conventions, vendor ones too);
  re-exported here, so ``semconv.REQUEST_MODEL`` reads as the conventions do.
* :mod:`.parts`: the typed message parts and the only builders that make them (content capture and redaction applied
  inside, from a :class:`~spanfold.content.runtime.Runtime`).
* :mod:`.shapes`: shared shape rules (tool-response split, first choice, finish-reason tables).

Nothing here imports OpenTelemetry.
"""

from spanfold.semconv.names import *  # noqa: F403
from spanfold.semconv.names import span_name

__all__ = ["span_name"]
