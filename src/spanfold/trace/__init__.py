"""The flat trace model and its file formats (no OpenTelemetry imports)."""

from spanfold.trace.model import Message, ToolCall, Trace, TraceMeta, TraceSummary, Usage, parse_arguments

__all__ = ["Message", "ToolCall", "Trace", "TraceMeta", "TraceSummary", "Usage", "parse_arguments"]
