"""Spans in, folded traces out: the per-trace assembler and its background worker, fed by the span processor, the
span exporter, the OTLP receiver (``spanfold serve``) or a span file folded on read."""
