"""Steps -> runs: each done trace's spans read through their dialects, then grouped into what the fold folds: a trace
of its own, or a zero-code run's traces stitched into one conversation."""
