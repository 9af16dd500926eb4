"""``tool_call_id=None`` (an API whose tool calls have no ids: ollama) never reaches a tool that does not declare it."""

from __future__ import annotations

from typing import Any

import spanfold


def test_a_none_call_id_is_not_passed_to_the_function(traced: Any) -> None:
    @spanfold.tool
    def get_weather(city: str) -> str:
        return f"{city}: sunny"

    assert get_weather(city="Paris", tool_call_id=None) == "Paris: sunny"
    assert spanfold.stats().get("faults", 0) == 0
