"""The mock server's embeddings and rerank routes of the providers other than OpenAI (OpenAI's, which the
OpenAI-compatible servers share, is :mod:`spanfold.testing.wire.embeddings`), each in its provider's wire format."""
