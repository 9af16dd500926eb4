"""Any producer's span -> a step the fold understands: the dispatch table and one dialect per foreign producer."""
