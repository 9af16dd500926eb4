"""Reading SDK shapes into typed invocations: fields of dicts and SDK objects (messages), request parameters (params),
streamed blocks by index (blocks), request lists converted per item and remembered (history)."""
