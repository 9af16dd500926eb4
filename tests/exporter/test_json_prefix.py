"""ArrayPrefixCache: an array that extends one parsed before parses exactly as json.loads, sharing the old elements."""

from __future__ import annotations

import json

import pytest

from spanfold.codecs.json_prefix import ArrayPrefixCache


def history(n: int) -> list[dict[str, object]]:
    return [
        {"role": "user" if i % 2 else "assistant", "parts": [{"type": "text", "content": f"message {i} " * 3}]}
        for i in range(n)
    ]


def text(messages: list[dict[str, object]], **dump: object) -> str:
    return json.dumps(messages, **dump)  # type: ignore[arg-type]


def test_extension_parses_only_the_tail_and_shares_the_prefix() -> None:
    cache = ArrayPrefixCache()
    first = cache.loads(text(history(4)))
    second = cache.loads(text(history(7)))
    assert second == history(7)
    assert all(a is b for a, b in zip(first, second[:4], strict=False))  # the old elements, by identity
    assert cache.hits == 1
    third = cache.loads(text(history(9)))  # extends the second (which replaced the first)
    assert third == history(9) and third[5] is second[5] and cache.hits == 2


def test_same_text_is_a_hit_and_returns_a_new_list() -> None:
    cache = ArrayPrefixCache()
    a = cache.loads(text(history(5)))
    b = cache.loads(text(history(5)))
    assert a == b and a is not b and cache.hits == 1


@pytest.mark.parametrize(
    "new",
    [
        text([*history(3), {"role": "user", "parts": []}, *history(2)]),  # a different history, same opening
        text(history(4))[:-1] + ' , {"role": "user"}]',  # whitespace before the comma: parsed whole
        text(history(6), indent=1),  # another serialisation of the same messages
    ],
)
def test_anything_else_is_parsed_whole(new: str) -> None:
    cache = ArrayPrefixCache()
    cache.loads(text(history(4)))
    assert cache.loads(new) == json.loads(new)


def test_a_value_continued_past_the_old_end_is_not_an_extension() -> None:
    cache = ArrayPrefixCache()
    numbers = list(range(40))
    cache.loads(json.dumps(numbers))
    longer = json.dumps(numbers)[:-1] + "1]"  # ... 39] -> ... 391]
    assert cache.loads(longer) == [*numbers[:-1], 391] and cache.hits == 0


def test_invalid_tail_raises_like_json_loads() -> None:
    cache = ArrayPrefixCache()
    cache.loads(text(history(4)))
    bad = text(history(4))[:-1] + ', {"role": ]'
    with pytest.raises(ValueError):
        cache.loads(bad)


def test_non_arrays_and_short_texts_pass_through() -> None:
    cache = ArrayPrefixCache()
    assert cache.loads('{"a": 1}') == {"a": 1}
    assert cache.loads("[1, 2]") == [1, 2]
    assert cache.loads("[1, 2]") == [1, 2] and cache.hits == 0


def test_bounded_by_characters() -> None:
    cache = ArrayPrefixCache(max_chars=2000)
    for i in range(50):
        cache.loads(text([{"run": i}, *history(5)]))
    assert cache._chars <= 2000


def test_parallel_runs_with_one_opening_each_find_their_own_prefix() -> None:
    cache = ArrayPrefixCache()
    runs = [[*history(2), {"role": "user", "parts": [{"type": "text", "content": f"run {r}"}]}] for r in range(4)]
    for step in range(3):
        for r, base in enumerate(runs):
            runs[r] = [*base, {"role": "assistant", "parts": [{"type": "text", "content": f"{r}.{step}"}]}]
            assert cache.loads(text(runs[r])) == runs[r]
    assert cache.hits == 8


def test_element_runs_once_per_element_and_can_drop() -> None:
    seen: list[object] = []

    def element(value: object) -> object:
        seen.append(value)
        return None if value == {"drop": True} else value

    cache = ArrayPrefixCache(element)
    first = [*history(3), {"drop": True}]
    assert cache.loads(text(first)) == history(3)
    assert cache.loads(text([*first, *history(2)])) == [*history(3), *history(2)]
    assert len(seen) == 6  # the four of the first text, then only the two new ones
