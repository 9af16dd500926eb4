"""The price memo (spanfold.pricing.memo): a process prices the models an earlier one priced without importing
genai-prices, at the same prices to the last digit, and never keeps a price that depends on more than the day.

Each case runs pricing in fresh processes (genai-prices, once imported, answers for the process): the first with no
memo (it imports genai-prices and writes the memo), the next with the memo the first wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from spanfold import counters
from spanfold.pricing import memo as memos

#: What a child prices: (model, provider, call time (UTC), usage: input, output, cache read, cache write, reasoning).
ASKED: list[tuple[str, str | None, str, list[int]]] = [
    ("gpt-4o-mini", "openai", "2026-11-29T12:00:00", [1200, 40, 0, 0, 0]),
    ("gpt-4o-mini", "openai", "2026-11-29T12:00:00", [5000, 700, 1024, 0, 0]),
    ("o3-mini", "openai", "2026-11-29T12:00:00", [900, 600, 0, 0, 512]),
    ("claude-3-5-haiku-latest", "anthropic", "2026-11-29T12:00:00", [4000, 90, 1000, 2000, 0]),
    ("gemini-3-flash-preview", "google", "2025-12-10T12:00:00", [1000, 100, 0, 0, 0]),  # before its price changed
    ("gemini-3-flash-preview", "google", "2026-06-10T12:00:00", [1000, 100, 0, 0, 0]),  # after
    ("claude-sonnet-4-5", "anthropic", "2026-11-29T12:00:00", [300_000, 100, 0, 0, 0]),  # tiered: never kept
    ("deepseek-chat", "deepseek", "2026-11-29T17:00:00", [1000, 100, 0, 0, 0]),  # priced by the time of day: never kept
    ("no-such-model-anywhere", "openai", "2026-11-29T12:00:00", [10, 10, 0, 0, 0]),
]

CHILD = textwrap.dedent(
    """
    import json, sys
    from datetime import datetime, timezone
    from spanfold.pricing import table
    from spanfold.trace.model import Usage
    from spanfold import counters

    table.remember_in(sys.argv[1])
    out = []
    for model, provider, when, usage in json.loads(sys.argv[2]):
        ns = int(datetime.fromisoformat(when).replace(tzinfo=timezone.utc).timestamp() * 1e9)
        price = table.table_price(model, provider, ns)
        parts = None if price is None else table.split(price, Usage(*usage))
        out.append(None if parts is None else {k: str(v) for k, v in sorted(parts.items())})
    endpoint = table.provider_at("https://api.anthropic.com/v1")
    print(json.dumps({"parts": out, "endpoint": endpoint, "imported": "genai_prices" in sys.modules,
                      "faults": {k: v for k, v in counters.snapshot().items() if "fault" in k or "memo" in k}}))
    """
)


def price_in_child(setting: str, asked: list[Any] = ASKED) -> dict[str, Any]:
    """Price ``asked`` in a fresh process whose memo is kept where ``setting`` says."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD, setting, json.dumps(asked)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "SPANFOLD_PRICE_CACHE": setting},
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def kept(folder: Path) -> dict[str, Any]:
    held: dict[str, Any] = json.loads((folder / "prices.json").read_text())
    return held


def test_the_next_process_prices_from_the_memo_without_genai_prices_and_to_the_same_digit(tmp_path: Path) -> None:
    first = price_in_child(str(tmp_path))
    assert first["imported"] is True
    held = kept(tmp_path)
    assert held["format"] == memos.FORMAT and held["table"] == memos.table_version()
    names = {tuple(json.loads(key))[1]: value for key, value in held["models"].items()}
    assert set(names) == {
        "gpt-4o-mini",
        "o3-mini",
        "claude-3-5-haiku-latest",
        "gemini-3-flash-preview",
        "no-such-model-anywhere",
    }
    assert names["no-such-model-anywhere"] is None
    assert held["endpoints"] == {"https://api.anthropic.com/v1": "anthropic"}

    # only what depends on no more than the day was kept (a model's latest price asked: gemini-3-flash-preview after its
    # change); the others make the next process import genai-prices
    known = [a for a in ASKED if a[0] not in ("claude-sonnet-4-5", "deepseek-chat") and a is not ASKED[4]]
    second = price_in_child(str(tmp_path), known)
    assert second["imported"] is False
    assert second["parts"] == [p for a, p in zip(ASKED, first["parts"], strict=True) if a in known]
    assert second["endpoint"] == "anthropic"
    assert first["parts"][-1] is None and first["parts"][0]["input"] and first["parts"][2]["reasoning"]

    third = price_in_child(str(tmp_path))  # a tiered and a time-of-day price: asked of genai-prices again
    assert third["imported"] is True
    assert third["parts"] == first["parts"]
    assert third["faults"] == {}


def test_a_price_that_changed_on_a_day_is_kept_for_the_days_it_held(tmp_path: Path) -> None:
    before, after = ASKED[4], ASKED[5]
    first = price_in_child(str(tmp_path), [before])
    (entry,) = kept(tmp_path)["models"].values()
    assert (entry["from"], entry["until"]) == (None, "2026-01-05")
    assert price_in_child(str(tmp_path), [before]) == {**first, "imported": False}
    # a call after the change is not answered by the rates of before it
    second = price_in_child(str(tmp_path), [after])
    assert second["imported"] is True
    entries = kept(tmp_path)["models"]
    assert [(e["from"], e["until"]) for e in entries.values()] == [("2026-01-05", None)]
    third = price_in_child(str(tmp_path), [after])
    assert third == {**second, "imported": False}


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        json.dumps({"format": memos.FORMAT, "table": "TABLE", "models": {'["model","gpt-4o-mini","openai",""]': 3}}),
        json.dumps(
            {
                "format": memos.FORMAT,
                "table": "TABLE",
                "endpoints": {},
                "models": {
                    '["model","gpt-4o-mini","openai",""]': {
                        "rates": dict.fromkeys(memos.KINDS, "-1"),
                        "from": None,
                        "until": None,
                    }
                },
            }
        ),
        json.dumps({"format": memos.FORMAT, "table": "TABLE", "models": {"gpt-4o-mini": None}, "endpoints": {}}),
    ],
    ids=["not-json", "not-an-entry", "negative-rate", "key-not-a-list"],
)
def test_a_memo_spanfold_did_not_write_is_ignored_counted_and_written_again(tmp_path: Path, text: str) -> None:
    (tmp_path / "prices.json").write_text(text.replace("TABLE", memos.table_version() or ""))
    result = price_in_child(str(tmp_path), ASKED[:1])
    assert result["imported"] is True
    assert result["faults"] == {"price_memo.unusable": 1}  # said once, not spanfold's fault
    assert result["parts"] == price_in_child(str(tmp_path / "fresh"), ASKED[:1])["parts"]
    assert list(kept(tmp_path)["models"]) == ['["model", "gpt-4o-mini", "openai", ""]']


def test_another_tables_memo_is_not_read(tmp_path: Path) -> None:
    price_in_child(str(tmp_path), ASKED[:1])
    held = kept(tmp_path)
    for entry in held["models"].values():
        entry["rates"] = dict.fromkeys(memos.KINDS, "1")  # what an older genai-prices would have said
    (tmp_path / "prices.json").write_text(json.dumps({**held, "table": "1-1"}))
    result = price_in_child(str(tmp_path), ASKED[:1])
    assert result["imported"] is True
    assert kept(tmp_path)["table"] == memos.table_version()


def test_off_keeps_no_memo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert price_in_child("off", ASKED[:1])["imported"] is True
    assert list(tmp_path.iterdir()) == []
    assert memos.directory("off") is None
    assert memos.directory(" ") == tmp_path / "spanfold"
    assert memos.directory("~/x") == tmp_path / "x"


def test_a_memo_that_cannot_be_written_is_counted_once_and_pricing_goes_on(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    result = price_in_child(str(tmp_path / "file" / "below"))
    assert result["faults"] == {"price_memo.unusable": 2}  # read, then written once
    assert result["parts"] == price_in_child(str(tmp_path / "fresh"))["parts"]


def test_the_table_version_names_the_installed_data_module() -> None:
    import genai_prices

    data = Path(genai_prices.__file__).with_name("data.py").stat()
    assert memos.table_version() == f"{data.st_size}-{data.st_mtime_ns}"


def test_no_more_than_max_entries_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memos, "MAX_ENTRIES", 2)
    memo = memos.Memo(tmp_path, "v")
    for n in range(4):
        memo.remember_model(("model", f"m{n}", "", ""), None)
    assert len(kept(tmp_path)["models"]) == 2
    counters.reset()


WRITER = textwrap.dedent(
    """
    import sys
    from spanfold import counters
    from spanfold.pricing import memo as memos
    import time
    memo = memos.Memo(__import__("pathlib").Path(sys.argv[1]), sys.argv[2])
    time.sleep(max(0.0, float(sys.argv[4]) - time.time()))  # all at once
    for n in range(100):
        memo.remember_model(("model", f"{sys.argv[3]}-{n}", "", ""), None)
    print(counters.snapshot().get("price_memo.unusable", 0), memo.writable)
    """
)


def test_processes_writing_one_memo_at_once_leave_a_memo_that_reads(tmp_path: Path) -> None:
    version = memos.table_version() or "v"
    start = time.time() + 2.0
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), version, f"p{k}", str(start)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for k in range(6)
    ]
    # every write of every process went through, and every read of the others' file found a memo
    assert [w.communicate(timeout=60)[0].split() for w in writers] == [["0", "True"]] * 6
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prices.json"]  # no temporary file left behind
    memo = memos.Memo(tmp_path, version)
    assert memo.writable and len(memo) >= 100  # whole: at least the last writer's, each entry as written
    assert all(key[1].split("-")[0] in {f"p{k}" for k in range(6)} for key in memo.models)
    assert counters.snapshot().get("price_memo.unusable", 0) == 0


def test_without_a_home_directory_there_is_no_memo_unless_one_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert memos.directory(None) is None
    monkeypatch.setenv("XDG_CACHE_HOME", "/var/cache/app")
    assert memos.directory(None) == Path("/var/cache/app/spanfold")
