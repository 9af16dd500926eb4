"""What a run cost, on the command line (issue 33): ``spanfold summary`` per run and in total (``--json``: the cost
record), ``spanfold show`` in the heading and per model call; a run whose metadata leaves calls unpriced says so.
The traces are the real runs of tests/cli/conftest.py (openai SDK, mock server, ``spanfold.init()``), priced by the
exporter; every figure checked here is the one its metadata records."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from click.testing import Result

from spanfold.trace.render import format_cost

from .conftest import Recorded

Cli = Callable[..., Result]


def metas(traces: Recorded) -> list[dict[str, Any]]:
    return [json.loads(line)["metadata"] for line in traces.meta.read_text().splitlines()]


def test_summary_shows_each_runs_cost_and_the_total(cli: Cli, traces: Recorded) -> None:
    weather, failing = metas(traces)
    assert weather["cost_usd"] > 0 and failing["cost_usd"] > 0  # the refused call reported no tokens: nothing to price
    table = cli("summary", traces.invariant)
    assert table.exit_code == 0
    head, first, second, _, total = table.stdout.splitlines()
    column = head.index("COST")
    assert first[: column + 4].split()[-1] == format_cost(weather["cost"]["total"])
    assert second[: column + 4].split()[-1] == format_cost(failing["cost"]["total"])
    assert total.endswith(f", cost {format_cost(weather['cost']['total'] + failing['cost']['total'])}")
    rows = [json.loads(x) for x in cli("summary", "--json", traces.invariant).stdout.splitlines()]
    assert [r["cost"] for r in rows] == [weather["cost"], failing["cost"]]
    assert rows[0]["cost"]["by_model"] == {"gpt-4o-mini": weather["cost_usd"]}


def test_a_run_not_fully_priced_says_so(cli: Cli, traces: Recorded) -> None:
    """A run one of whose calls no price covered (its metadata counts it): its cost ends in +, the totals say how many
    runs are not fully priced; a run with no cost at all shows -."""
    metas_lines = [json.loads(line) for line in traces.meta.read_text().splitlines()]
    metas_lines[0]["metadata"]["cost"]["unpriced_steps"] = 1
    del metas_lines[0]["metadata"]["cost_usd"]
    del metas_lines[1]["metadata"]["cost"], metas_lines[1]["metadata"]["cost_usd"]
    traces.meta.write_text("".join(json.dumps(m) + "\n" for m in metas_lines))
    table = cli("summary", traces.invariant).stdout.splitlines()
    column = table[0].index("COST")
    partial = format_cost(metas_lines[0]["metadata"]["cost"]["total"]) + "+"
    assert table[1][: column + 4].split()[-1] == partial
    assert table[2][: column + 4].split()[-1] == "-"
    assert table[-1].endswith(f"cost {partial[:-1]} (2 traces not fully priced)")
    heading = cli("show", traces.invariant, "--trace", "1").stdout.splitlines()[2]
    assert f"cost {partial[:-1]} + 1 call unpriced" in heading


def test_show_gives_each_model_calls_cost_and_the_runs(cli: Cli, traces: Recorded) -> None:
    weather = metas(traces)[0]
    out = cli("show", traces.invariant, "--trace", "1").stdout
    assert f" · cost {format_cost(weather['cost']['total'])} · " in out.splitlines()[2]
    costs = [format_cost(s["cost"]["amount"]) for s in weather["steps"] if s["kind"] == "model"]
    shown = re.findall(r"\(gpt-4o-mini, \d+ in / \d+ out tokens, (\$[\d.]+), [\d.]+ ms\)", out)
    assert shown == costs and len(costs) == 3


def test_a_narrow_terminal_puts_the_cost_under_the_row(traces: Recorded) -> None:
    from click.testing import CliRunner

    from spanfold.cli import main

    weather = metas(traces)[0]
    result = CliRunner(env={"COLUMNS": "70"}).invoke(main, ["summary", str(traces.invariant)])
    lines = result.stdout.splitlines()
    assert "COST" not in lines[0] and all(len(line) <= 70 for line in lines)
    assert f"  cost: {format_cost(weather['cost']['total'])}" in lines
