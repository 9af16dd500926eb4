"""The stitching rule (spanfold.stitching.evidence) on its own: a call joins a live conversation only when the evidence
names exactly one; every split the evidence pointed past is counted by reason."""

from __future__ import annotations

from typing import Any

import pytest

from spanfold import counters
from spanfold.stitching import evidence
from spanfold.stitching.evidence import Index
from spanfold.stitching.pairing import Call


class Conv:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


SYSTEM = [{"type": "text", "content": "Be brief."}]
HI = [text("user", "Hi")]
HELLO = [text("assistant", "Hello!")]


def history(*messages: dict[str, Any]) -> list[int]:
    return evidence.chain(evidence.seed(SYSTEM), evidence.history_prints(messages))


def answered(index: Index[Conv], conv: Conv, inputs: list[dict[str, Any]], outputs: list[dict[str, Any]]) -> None:
    """``conv`` made a call with ``inputs`` that answered ``outputs``: it holds the history past its output."""
    origin = (history(*inputs) or [evidence.seed(SYSTEM)])[-1]
    index.hold(conv, evidence.chain(origin, evidence.history_prints(outputs))[-1], origin)


@pytest.fixture(autouse=True)
def _counters() -> None:
    counters.reset()


def test_a_history_held_by_one_conversation_joins_it() -> None:
    index: Index[Conv] = Index()
    a = Conv("a")
    answered(index, a, HI, HELLO)
    decision = index.find([], history(*HI, *HELLO, text("user", "private A")), here=[a])
    assert decision.conversation is a and decision.split is None


def test_in_the_fold_only_a_distinctive_history_joins() -> None:
    """The fold (``here`` unknown) cannot tell the holder going on from anyone whose history reads alike (a user
    resumed from a stored history): a history past a plain answer is a counted split; past an output whose tool-call
    id no other conversation's model made, it joins."""
    index: Index[Conv] = Index()
    a, b = Conv("a"), Conv("b")
    answered(index, a, HI, HELLO)
    assert index.find([], history(*HI, *HELLO, text("user", "private"))).split == evidence.NO_CONTEXT
    assert counters.snapshot()["stitch_splits.no_context"] == 1
    asked = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "call_b1", "name": "f", "arguments": {}}]}]
    origin = history(*HI)[-1]
    outputs = evidence.history_prints(asked)
    index.hold(b, evidence.made_keys(outputs)[0])
    assert index.distinctive(evidence.made_keys(outputs))
    index.hold(b, evidence.chain(origin, outputs)[-1])  # distinctive: no origin
    result = [{"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_b1", "response": "1"}]}]
    assert index.find([], history(*HI, *asked, *result)).conversation is b


def test_in_the_fold_a_failed_calls_request_sent_again_is_a_counted_split() -> None:
    """The fold holds the history a failed call sent (:func:`evidence.failed_key`): the same request again may be
    its retry or another run's identical opening; it cannot tell, so it keeps it apart and counts the split."""
    index: Index[Conv] = Index()
    a = Conv("a")
    index.hold(a, evidence.failed_key(history(*HI)[-1]))
    assert index.find([], history(*HI)).split == evidence.NO_CONTEXT
    assert index.find([], history(text("user", "Hello"))).split is None  # another request: nothing pointed
    assert counters.snapshot()["stitch_splits"] == 1


def test_a_history_two_conversations_hold_is_a_counted_split() -> None:
    index: Index[Conv] = Index()
    a, b = Conv("a"), Conv("b")
    answered(index, a, HI, HELLO)
    answered(index, b, HI, HELLO)
    decision = index.find([], history(*HI, *HELLO, text("user", "private")))
    assert decision.conversation is None and decision.split == evidence.AMBIGUOUS
    assert counters.snapshot()["stitch_splits"] == 1
    assert counters.snapshot()["stitch_splits.ambiguous"] == 1
    # the request's own list names one of them: that one (a run's loop re-sends its list)
    assert index.find([], history(*HI, *HELLO, text("user", "x")), owner=b).conversation is b
    # once the other closes, the history names one again
    index.release(b, history(*HI, *HELLO)[-1])
    assert index.find([], history(*HI, *HELLO, text("user", "x")), here=[a]).conversation is a


def test_the_longest_history_decides_and_an_ambiguous_one_never_falls_back_to_a_shorter() -> None:
    index: Index[Conv] = Index()
    a, b, c = Conv("a"), Conv("b"), Conv("c")
    answered(index, c, [], HI)  # c holds only a shorter history (the system prompt and "Hi")
    answered(index, a, HI, HELLO)
    answered(index, b, HI, HELLO)
    assert index.find([], history(*HI, *HELLO, text("user", "x"))).split == evidence.AMBIGUOUS


def test_a_twin_call_in_flight_makes_the_history_ambiguous() -> None:
    """B sent the same opening and has not answered yet: once it does, it would hold the same history as A."""
    index: Index[Conv] = Index()
    a = Conv("a")
    answered(index, a, HI, HELLO)
    origin = history(*HI)[-1]
    index.begin(origin, None)  # B's first call, in flight
    assert index.find([], history(*HI, *HELLO, text("user", "x")), here=[a]).split == evidence.IN_FLIGHT
    index.begin(origin, a)  # a call of A's own with the same history is no twin of another run
    index.end(origin, None)
    assert index.find([], history(*HI, *HELLO, text("user", "x")), here=[a]).conversation is a
    index.end(origin, a)
    assert index.find([], history(*HI, *HELLO, text("user", "x")), here=[a]).conversation is a


def test_a_list_of_another_conversation_conflicts_with_the_history() -> None:
    index: Index[Conv] = Index()
    a, b = Conv("a"), Conv("b")
    answered(index, a, HI, HELLO)
    assert index.find([], history(*HI, *HELLO), owner=b).split == evidence.CONFLICT


def test_names_join_the_one_conversation_holding_them() -> None:
    index: Index[Conv] = Index()
    a, b = Conv("a"), Conv("b")
    index.hold(a, ("response", "resp_1"))
    index.hold(b, ("conversation", "c-7"))
    assert index.find([("response", "resp_1")], []).conversation is a
    assert index.find([("conversation", "c-7")], history(*HI)).conversation is b
    assert index.find([("response", "unknown")], []).conversation is None
    assert counters.snapshot().get("stitch_splits", 0) == 0  # nothing pointed anywhere: no split


def test_a_failed_calls_text_is_no_evidence() -> None:
    """Nothing is held for a call that failed: another user's identical request finds nothing (only the source's
    ``retry`` name, the very list re-sent by the same caller, joins a failed call)."""
    index: Index[Conv] = Index()
    a = Conv("a")
    index.hold(a, ("retry", 1, "thread-1", history(*HI)[-1]))
    assert index.find([], history(*HI)).conversation is None
    assert index.find([("retry", 1, "thread-2", history(*HI)[-1])], history(*HI)).conversation is None
    assert index.find([("retry", 1, "thread-1", history(*HI)[-1])], history(*HI)).conversation is a


def test_the_seed_is_the_system_instructions() -> None:
    assert evidence.seed(None) == evidence.seed([]) == 0
    assert evidence.seed(SYSTEM) != evidence.seed([{"type": "text", "content": "Be long."}])


def test_a_response_continued_twice_is_a_fork() -> None:
    """The first continuation of a response joins its holder; a second one while the first stands is a fork (a trace
    of its own, counted); a failed continuation gives its claim back to its retry."""
    index: Index[Conv] = Index()
    primer = Conv("primer")
    index.hold(primer, ("response", "resp_1"))
    first = index.find([("response", "resp_1")], [])
    assert first.conversation is primer and first.claimed == ("response", "resp_1")
    second = index.find([("response", "resp_1")], [])
    assert second.conversation is None and second.split == evidence.FORK
    assert counters.snapshot()["stitch_splits.fork"] == 1
    index.unclaim(first.claimed)  # the first continuation failed: its retry continues the response
    assert index.find([("response", "resp_1")], []).conversation is primer
    assert index.find([("response", "resp_1")], [], claim=False).split == evidence.FORK


def test_a_name_two_conversations_hold_is_a_conflict() -> None:
    """A later holder never takes a name over: an id two live conversations hold names neither."""
    index: Index[Conv] = Index()
    a, b = Conv("a"), Conv("b")
    index.hold(a, ("conversation", "c-1"))
    index.hold(b, ("conversation", "c-1"))
    assert index.find([("conversation", "c-1")], []).split == evidence.CONFLICT
    index.release(a, ("conversation", "c-1"))
    assert index.find([("conversation", "c-1")], []).conversation is b


def test_tool_call_ids_made_twice_make_no_history_distinctive() -> None:
    index: Index[Conv] = Index()
    a, b = Conv("a"), Conv("b")
    made = evidence.made_keys([("c", "call_1", "get_my_balance")])
    assert made == [("made", "call_1")]
    index.hold(a, made[0])
    assert index.distinctive(made)
    index.hold(b, made[0])  # a server that numbers calls per response
    assert not index.distinctive(made) and index.ids_reused
    index.release(b, made[0])
    assert not index.distinctive(made)  # once seen, ids are never taken as unique again here
    assert counters.snapshot()["stitch_ids_reused"] == 1


def test_a_history_anyone_could_give_joins_only_from_its_own_context() -> None:
    """At the source, which knows where a call is made: a history past a plain greeting joins its holder only when the
    call comes from the holder's execution context; elsewhere it is a counted split."""
    index: Index[Conv] = Index()
    a = Conv("a")
    answered(index, a, HI, HELLO)
    later = history(*HI, *HELLO, text("user", "private"))
    assert index.find([], later, here=[a]).conversation is a
    assert index.find([], later, here=[]).split == evidence.NO_CONTEXT
    assert index.find([], later).split == evidence.NO_CONTEXT  # the fold, which cannot know: no evidence there


def test_a_runs_own_list_from_its_own_context_joins_it_when_nothing_else_does() -> None:
    index: Index[Conv] = Index()
    a = Conv("a")
    assert index.find([], history(text("user", "trimmed")), owner=a, changed=True).conversation is a
    assert index.find([], history(text("user", "trimmed")), owner=a).conversation is None  # re-sent unchanged
    assert index.find([], history(text("user", "trimmed"))).conversation is None


def _calls(*owners_and_ids: tuple[Conv, str | None]) -> list[Call[Conv]]:
    return [Call(owner, call_id, "get_my_balance", {}) for owner, call_id in owners_and_ids]


def test_a_tool_run_joins_by_an_id_one_conversation_holds_else_by_its_context() -> None:
    a, b = Conv("a"), Conv("b")
    one = _calls((a, "call_1"))
    assert evidence.tool_call(one, by_id=True, here=None) is one[0]
    two = _calls((a, "call_1"), (b, "call_1"))  # numbered ids: B's call_1 does not take A's over
    assert evidence.tool_call(two, by_id=True, here=None) is None
    assert counters.snapshot()["stitch_splits.conflict"] == 1
    assert evidence.tool_call(two, by_id=True, here=[b]) is two[1]
    no_ids = _calls((b, None), (a, None))  # no id: never "the oldest waiting call"
    assert evidence.tool_call(no_ids, by_id=False, here=None) is None
    assert counters.snapshot()["stitch_splits.no_context"] == 1
    assert evidence.tool_call(no_ids, by_id=False, here=[a]) is no_ids[1]
    assert evidence.tool_call(no_ids, by_id=False, here=[a, b]) is None  # two runs wait here: ambiguous
    assert counters.snapshot()["stitch_splits.ambiguous"] == 1
    assert evidence.tool_call([], by_id=False, here=[a]) is None  # nothing waits: no split
    assert counters.snapshot()["stitch_splits"] == 3
