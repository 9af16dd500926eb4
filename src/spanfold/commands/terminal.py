"""Where output goes: the terminal's width (for tables and wrapping) and whether to colour (``NO_COLOR``,
``FORCE_COLOR``, ``--color/--no-color``)."""

from __future__ import annotations

import os
import shutil
import sys


def terminal_width() -> int | None:
    """Columns to fit: ``COLUMNS`` when set, else the terminal's width when stdout is one; None when piped (lines
    are then never cut or wrapped, so they stay whole for grep and friends)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if sys.stdout.isatty():
            return shutil.get_terminal_size().columns
    except (AttributeError, ValueError, OSError):
        pass
    return None


def color_choice(flag: bool | None = None) -> bool | None:
    """``--color``/``--no-color`` when given, else ``NO_COLOR`` (https://no-color.org: off when set and not empty),
    else ``FORCE_COLOR`` (on), else None: colour when stdout is a terminal (click's default)."""
    if flag is not None:
        return flag
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return None
