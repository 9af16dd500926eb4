"""pytest plugin (entry point ``pytest11``): fixtures and assertion helpers for agent traces."""
