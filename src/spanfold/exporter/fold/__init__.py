"""Folding a run's steps into the flat event list, then its metadata: events, history matching, nested tool runs,
metadata."""
