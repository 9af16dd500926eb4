"""What init() says: one line of what it traces, a warning when there is nothing to trace, and a warning (once) when a
second init() asks for other options than the one in force."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

import spanfold
from spanfold.instrumentation import registry


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    spanfold.shutdown()


def test_one_line_names_what_is_traced(fresh: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="spanfold"):
        spanfold.init(output=str(fresh))
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("spanfold: tracing")]
    installed = registry.available()
    assert {"openai", "anthropic"} <= set(installed)
    missing = [name for name in registry.INSTRUMENTORS if name not in installed]
    tail = f"; not installed: {', '.join(missing)}" if missing else ""
    assert lines == [f"spanfold: tracing {', '.join(installed)} (each patched when your program imports it){tail}"]


def test_nothing_installed_is_a_warning(
    fresh: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "available", lambda: [])
    with caplog.at_level(logging.INFO, logger="spanfold"):
        spanfold.init(output=str(fresh))
    (record,) = [r for r in caplog.records if "none of the client libraries" in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert ", ".join(registry.INSTRUMENTORS) in record.getMessage()


def test_a_second_init_with_other_options_warns_once(fresh: Path, caplog: pytest.LogCaptureFixture) -> None:
    from spanfold import setup

    setup._warned_different = False
    first = spanfold.init(output=str(fresh / "a"))
    with caplog.at_level(logging.WARNING, logger="spanfold"):
        assert spanfold.init(output=str(fresh / "a")) is first  # the same options: nothing to say
        assert spanfold.init(output=str(fresh / "b"), capture_content=False) is first
        spanfold.init(output=str(fresh / "c"))
    warnings = [r.getMessage() for r in caplog.records if "already ran" in r.getMessage()]
    assert len(warnings) == 1
    assert f"output={str(fresh / 'b')!r}" in warnings[0]
    assert "capture_content='no_content' (in force: 'span_only')" in warnings[0]
