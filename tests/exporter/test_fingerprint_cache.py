"""The stitcher's per-message fingerprint cache: the same fingerprints as converting the message, bounded."""

from __future__ import annotations

from spanfold.exporter.fold.events import FingerprintCache, fingerprint, message_events


def _msg(i: int) -> dict[str, object]:
    return {"role": "user", "parts": [{"type": "text", "content": f"message {i}"}]}


def test_a_message_is_fingerprinted_once_and_matches_its_events() -> None:
    cache = FingerprintCache()
    raw = {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
    }
    first = cache.prints(raw)
    assert first == tuple(fingerprint(e) for e in message_events(raw, {}))
    assert cache.prints(raw) is first  # the same object: not converted again
    assert cache.get(dict(raw)) is None  # an equal message that is another object is not taken for it


def test_the_cache_is_bounded_by_entries_and_by_characters() -> None:
    cache = FingerprintCache(max_entries=3, max_chars=1_000)
    kept = [_msg(i) for i in range(3)]
    for raw in kept:
        cache.prints(raw)
    assert all(cache.get(raw) is not None for raw in kept)
    cache.prints(_msg(3))  # a fourth entry: emptied first
    assert all(cache.get(raw) is None for raw in kept)
    big = {"role": "user", "parts": [{"type": "text", "content": "x" * 2_000}]}
    small = _msg(4)
    cache.prints(small)
    cache.prints(big)  # past the character bound: emptied
    assert cache.get(small) is None and cache.get(big) is not None
