"""One shape map per provider API (a folder for a provider with several APIs), over the toolkit."""
