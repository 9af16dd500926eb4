"""Where folded traces go: the writers, rotated files, and opening the output directory safely."""
