"""Folding one trace's steps into the flat event list: events, history matching, nested tool runs, stitching,
metadata."""
