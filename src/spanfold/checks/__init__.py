"""Trajectory and expected-message checks over flat traces."""
