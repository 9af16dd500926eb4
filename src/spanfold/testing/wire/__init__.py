"""Each provider's wire format, as the mock server renders it: one renderer per API, with the SSE and AWS
event-stream framings they share."""
