"""The public surface documents itself: every option of ``spanfold.init()`` in its docstring, with its variable."""

from __future__ import annotations

import spanfold
from spanfold import config


def test_init_names_every_option_and_its_environment_variable() -> None:
    doc = spanfold.init.__doc__ or ""
    missing = [name for name in config.OPTIONS if f"``{name}``" not in doc]
    assert missing == [], f"spanfold.init's docstring does not name {missing}"
    for name, option in config.OPTIONS.items():
        first = option.env[0]
        assert f"``{first}``" in doc or name.startswith("max_") or name == "trace_timeout", (name, first)


def test_the_public_names_are_the_documented_ones() -> None:
    assert set(spanfold.__all__) == {"Handle", "__version__", "agent", "flush", "init", "shutdown", "stats", "tool"}
    for name in ("init", "flush", "shutdown", "stats", "tool", "agent"):
        assert (getattr(spanfold, name).__doc__ or "").strip(), name
