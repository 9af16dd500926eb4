"""Test modules tested in venvs of their own (``.ci/frameworks``: their library's pins conflict with the main test
environment) are collected only where that library is installed: a conftest's ``collect_ignore``."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a parent package is missing
        return False


def not_installed(separate: Mapping[str, str]) -> list[str]:
    """The test modules of ``separate`` (test module -> the module its library provides) whose library is missing."""
    return [test for test, module in separate.items() if not _installed(module)]
