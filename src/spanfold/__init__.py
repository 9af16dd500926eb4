"""spanfold: OpenTelemetry tracing for AI agents, folded into flat, readable traces."""
