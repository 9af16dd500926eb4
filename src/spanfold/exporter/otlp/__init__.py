"""OTLP codecs: OTLP/JSON and protobuf export requests decoded into span records, and span records encoded as one
OTLP/JSON line per trace (the ``otlp-json`` format)."""
