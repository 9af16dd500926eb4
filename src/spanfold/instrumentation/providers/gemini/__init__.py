"""google-genai: generate_content, streamed or not."""
