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
    assert set(spanfold.__all__) == {
        "Handle",
        "Media",
        "Sample",
        "__version__",
        "agent",
        "context",
        "flush",
        "init",
        "score",
        "shutdown",
        "stats",
        "tool",
    }
    for name in ("init", "flush", "shutdown", "stats", "tool", "agent", "context", "score"):
        assert (getattr(spanfold, name).__doc__ or "").strip(), name
    context_keywords = ("user_id", "session_id", "tags", "metadata", "prompt")
    for parameter in ("name", "conversation_id", "traceparent", *context_keywords):
        assert f"``{parameter}``" in (spanfold.agent.__doc__ or ""), parameter
    for parameter in context_keywords:
        assert f"``{parameter}``" in (spanfold.context.__doc__ or ""), parameter
    # spanfold.agent takes every keyword spanfold.context does
    import inspect

    assert set(inspect.signature(spanfold.context).parameters) <= set(inspect.signature(spanfold.agent).parameters)


def test_the_package_says_which_of_its_modules_are_public_and_which_internal() -> None:
    """``help(spanfold)`` lists every module of the package: its docstring says of each whether users may rely on it."""
    import importlib
    import pkgutil
    import re

    doc = spanfold.__doc__ or ""
    public, _, internal = doc.partition("Internal,")
    named_public = set(re.findall(r"``spanfold\.(\w+)", public))
    named_internal = set(re.findall(r"``(\w+)``", internal))
    modules = {m.name for m in pkgutil.iter_modules(spanfold.__path__)} - {"__main__"}
    assert modules == named_public | named_internal and not named_public & named_internal
    for name in named_public:
        importlib.import_module(f"spanfold.{name}")
    from spanfold.exporter.pipeline.processor import FoldingSpanProcessor  # noqa: F401
    from spanfold.exporter.pipeline.span_exporter import FoldingSpanExporter  # noqa: F401
