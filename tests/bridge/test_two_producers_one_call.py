"""One API call recorded by two producers (OpenLLMetry's anthropic span and the anthropic SDK's own span) folds to
one model step: the same flat trace and token totals as with one producer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from spanfold import counters

from .producers import Harness, run_openllmetry


@pytest.fixture
def harness(_global_provider: Any, _global_exporter: Any) -> Iterator[Harness]:
    yield Harness(_global_provider, _global_exporter)


def test_sdk_native_span_beside_a_peers_span_is_one_step(harness: Harness) -> None:
    alone = run_openllmetry(harness, api="anthropic")
    both = run_openllmetry(harness, api="anthropic", native_spans=True)
    native = [s for s in both.spans if s.name == "anthropic.messages.create"]
    assert len(native) == 3  # the SDK did record each of the three calls itself
    counters.reset()
    trace = both.fold()
    assert counters.snapshot().get("fold.duplicate_model_steps") == 3
    assert trace.to_invariant() == alone.fold().to_invariant()
    assert trace.meta.usage == alone.fold().meta.usage
