"""openai: Chat Completions and Responses."""
