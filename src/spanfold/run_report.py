"""What ``spanfold run`` says when the program it traced ends, on a terminal: how many traces were written where, or
lost. Said once per command, by its first Python process (the program's own child Pythons say nothing); into a pipe
or a file, nothing. The program's exit status stays its own: ``spanfold run`` runs it in its place."""

from __future__ import annotations

import atexit
import os
import sys

#: ``SPANFOLD_RUN`` as ``spanfold run`` sets it, and once a process has taken the job of saying.
_ARMED = "1"
_SAID = "said"


def arm() -> None:
    """Say it at exit (registered before ``spanfold.init()``: exit handlers run last first, so after its flush)."""
    if os.environ.get("SPANFOLD_RUN") != _ARMED or not sys.stderr.isatty():
        return
    os.environ["SPANFOLD_RUN"] = _SAID
    atexit.register(say)


def line(stats: dict[str, int], output: str) -> str:
    written = stats.get("traces_written", 0)
    lost = stats.get("writer.dropped_traces", 0)
    where = f"{written} trace{'' if written == 1 else 's'} written to {output}/"
    if lost:
        return f"spanfold run: {where}; {lost} lost (the line above says why)"
    if not written:
        return f"spanfold run: no trace written to {output}/ (the program made no call spanfold traces)"
    return f"spanfold run: {where} (spanfold show {output} --trace -1)"


def say() -> None:
    from spanfold import config, counters

    try:
        output = config.load({}, os.environ).output
    except config.ConfigError:
        return
    sys.stderr.write(line(counters.snapshot(), str(output)) + "\n")
    sys.stderr.flush()
