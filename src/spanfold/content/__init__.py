"""What content a span may carry: the Runtime (capture and redaction) and the redaction engine."""
