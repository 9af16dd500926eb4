"""anthropic: Messages."""
