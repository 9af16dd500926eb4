"""``spanfold.score``: a real run folded by ``spanfold.init()`` (the openai SDK over HTTP to the mock server), then
scored: the sidecar line, the checks on what is given, appends from many processes at once, a planted symbolic link,
the ``gen_ai.evaluation.result`` event through a real LoggerProvider in the run's trace, and the readers:
``spanfold summary`` (its SCORES column and ``--json``), ``show``, ``check --where``, and a second process scoring
while a reader is open."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from click.testing import CliRunner
from opentelemetry import _logs
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

import spanfold
from spanfold import counters
from spanfold.cli import main
from spanfold.testing import MockLLMServer
from spanfold.trace.read import Record, read_records
from spanfold.trace.scores import SCORES_FILE, ScoreIndex

from ..conftest import traced_into

MODEL = "gpt-4o-mini"


def one_run(directory: Path, user: str | None = None, **options: Any) -> str:
    """A run written by spanfold.init() into ``directory``; its trace id."""
    with traced_into(directory, **options) as traced, MockLLMServer() as server:
        client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
        scope = spanfold.context(user_id=user) if user else spanfold.context()
        with spanfold.agent("support"), scope:
            client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}])
        assert spanfold.flush(timeout=30)
        metas = traced.metas()
    return str(metas[-1]["metadata"]["trace_id"])


@pytest.fixture
def runs(tmp_path: Path, _global_provider: Any) -> Iterator[tuple[Path, list[str]]]:
    directory = tmp_path / "traces"
    ids = [one_run(directory, user) for user in ("u-1", "u-2", "u-1")]
    yield directory, ids


def lines(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (directory / SCORES_FILE).read_text().splitlines() if line.strip()]


def test_a_score_is_one_line_of_the_trace_directory_s_sidecar(runs: tuple[Path, list[str]]) -> None:
    directory, ids = runs
    assert spanfold.score(ids[0], "helpful", True, comment="spot on", directory=directory)
    assert spanfold.score(int(ids[1], 16), "faithfulness", 0.25, source="llm", directory=directory)
    assert spanfold.score(ids[2], "tone", "rude", source="code", directory=directory)
    got = lines(directory)
    assert [{k: v for k, v in line.items() if k != "time"} for line in got] == [
        {"trace_id": ids[0], "name": "helpful", "value": True, "comment": "spot on", "source": "human"},
        {"trace_id": ids[1], "name": "faithfulness", "value": 0.25, "source": "llm"},
        {"trace_id": ids[2], "name": "tone", "value": "rude", "source": "code"},
    ]
    assert all(line["time"].endswith("Z") for line in got)
    assert (os.stat(directory / SCORES_FILE).st_mode & 0o777) == 0o600


def test_the_running_init_s_output_is_the_default_directory(tmp_path: Path, _global_provider: Any) -> None:
    with traced_into(tmp_path / "out"):
        assert spanfold.score("abc", "n", 1)
    assert lines(tmp_path / "out")[0]["name"] == "n"


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "says"),
    [
        (("t", "", 1), {}, ValueError, "name is empty"),
        (("t", 5, 1), {}, TypeError, "name must be a string"),
        (("t", "n", [1]), {}, TypeError, "value must be a number, a bool or a short string"),
        (("t", "n", None), {}, TypeError, "value must be"),
        (("t", "n", float("nan")), {}, ValueError, "finite number"),
        (("t", "n", "x" * 257), {}, ValueError, "value is 257 characters long; at most 256"),
        (("t", "n", 1), {"source": "bot"}, ValueError, "source must be one of human, code, llm"),
        (("t", "n", 1), {"comment": 3}, TypeError, "comment must be a string"),
        (("", "n", 1), {}, ValueError, "trace_id is empty"),
        ((0, "n", 1), {}, ValueError, "trace_id"),
    ],
)
def test_what_is_given_is_checked_with_an_error_naming_it(
    tmp_path: Path, args: tuple[Any, ...], kwargs: dict[str, Any], error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=f"^spanfold.score: .*{says}"):
        spanfold.score(*args, directory=tmp_path, **kwargs)
    assert not (tmp_path / SCORES_FILE).exists()


def test_with_content_capture_off_the_comment_is_written_nowhere(tmp_path: Path, _global_provider: Any) -> None:
    with traced_into(tmp_path / "t", capture_content=False):
        spanfold.score("abc", "helpful", False, comment="the user's own words")
    assert "comment" not in lines(tmp_path / "t")[0]


_WRITER = """
import sys
import spanfold
directory, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(n):
    assert spanfold.score(f"trace-{who}", "grade", i, comment="x" * (i % 50) * 40, directory=directory)
"""


def test_processes_appending_at_once_never_interleave(tmp_path: Path) -> None:
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), str(w), "150"], stderr=subprocess.PIPE)
        for w in range(4)
    ]
    for proc in writers:
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    got = lines(tmp_path)  # every line whole JSON
    assert len(got) == 600
    for w in range(4):  # each writer's lines in its own order
        assert [line["value"] for line in got if line["trace_id"] == f"trace-{w}"] == list(range(150))


def test_a_planted_symbolic_link_is_refused_and_counted(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("")
    directory = tmp_path / "traces"
    directory.mkdir(mode=0o700)
    (directory / SCORES_FILE).symlink_to(target)
    before = counters.snapshot().get("score.unsafe_path", 0)
    assert spanfold.score("abc", "n", 1, directory=directory) is False  # never raised
    assert target.read_text() == ""
    assert counters.snapshot()["score.unsafe_path"] == before + 1


def test_a_torn_last_line_stays_a_line_of_its_own(tmp_path: Path) -> None:
    (tmp_path / SCORES_FILE).write_bytes(b'{"trace_id": "a", "na')  # a writer killed mid-line
    os.chmod(tmp_path / SCORES_FILE, 0o600)
    spanfold.score("b", "n", 2, directory=tmp_path)
    index = ScoreIndex(tmp_path / SCORES_FILE)
    assert [s.value for s in index.of("b")] == [2]
    assert [(p.line, p.text.split(":")[0]) for p in index.take_problems()] == [(1, "not valid JSON")]


def test_the_event_goes_to_the_application_s_logger_provider_in_the_run_s_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    monkeypatch.setattr(_logs, "get_logger_provider", lambda: provider)
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    spanfold.score(trace_id, "helpful", True, comment="spot on", directory=tmp_path)
    spanfold.score(trace_id, "faithfulness", 0.5, source="llm", directory=tmp_path)
    spanfold.score(trace_id, "tone", "rude", directory=tmp_path)
    records = [r.log_record for r in exporter.get_finished_logs()]
    assert [r.event_name for r in records] == ["gen_ai.evaluation.result"] * 3
    assert [format(r.trace_id, "032x") for r in records] == [trace_id] * 3
    assert [dict(r.attributes or {}) for r in records] == [
        {
            "gen_ai.evaluation.name": "helpful",
            "gen_ai.evaluation.score.value": 1.0,
            "gen_ai.evaluation.score.label": "true",
            "gen_ai.evaluation.explanation": "spot on",
        },
        {"gen_ai.evaluation.name": "faithfulness", "gen_ai.evaluation.score.value": 0.5},
        {"gen_ai.evaluation.name": "tone", "gen_ai.evaluation.score.label": "rude"},
    ]
    from spanfold.semconv import registry, written

    for r in records:
        assert set(r.attributes or {}) <= set(written.EVENT_ATTRIBUTES) & registry.GENAI_ATTRIBUTES
    assert records[0].timestamp and records[0].timestamp > 0


def test_without_a_logger_provider_no_event_and_no_fault(tmp_path: Path) -> None:
    before = counters.snapshot().get("faults", 0)
    assert spanfold.score("4bf92f3577b34da6a3ce929d0e0e4736", "n", 1, directory=tmp_path)
    assert counters.snapshot().get("faults", 0) == before


# --- the readers --------------------------------------------------------------------------------------------------


def test_summary_shows_each_run_s_latest_scores(runs: tuple[Path, list[str]]) -> None:
    directory, ids = runs
    spanfold.score(ids[0], "helpful", False, directory=directory)
    spanfold.score(ids[0], "helpful", True, directory=directory)  # the latest counts
    spanfold.score(ids[0], "grade", 0.75, source="llm", directory=directory)
    spanfold.score(ids[2], "tone", "rude", directory=directory)
    out = CliRunner().invoke(main, ["summary", str(directory)], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    rows = out.output.splitlines()
    assert "SCORES" in rows[0].split()
    assert "helpful=true grade=0.75" in rows[1]
    assert " - " in rows[2][rows[0].index("SCORES") - 2 :]
    assert "tone=rude" in rows[3]
    as_json = CliRunner().invoke(main, ["summary", "--json", str(directory)])
    got = [json.loads(line).get("scores") for line in as_json.output.splitlines()]
    assert got == [{"helpful": True, "grade": 0.75}, None, {"tone": "rude"}]
    grouped = CliRunner().invoke(main, ["summary", "--by", "user", str(directory)])
    assert grouped.exit_code == 0 and "SCORES" not in grouped.output  # --by untouched


def test_summary_without_scores_has_no_scores_column(runs: tuple[Path, list[str]]) -> None:
    out = CliRunner().invoke(main, ["summary", str(runs[0])], env={"COLUMNS": "200"})
    assert out.exit_code == 0 and "SCORES" not in out.output
    assert not (runs[0] / SCORES_FILE).exists()


def test_a_narrow_terminal_puts_scores_under_the_row(runs: tuple[Path, list[str]]) -> None:
    directory, ids = runs
    spanfold.score(ids[1], "helpful", True, directory=directory)
    out = CliRunner().invoke(main, ["summary", str(directory)], env={"COLUMNS": "70"})
    assert out.exit_code == 0
    assert "  scores: helpful=true" in out.output.splitlines()


def test_show_prints_them(runs: tuple[Path, list[str]]) -> None:
    directory, ids = runs
    spanfold.score(ids[1], "helpful", True, comment="spot on", directory=directory)
    out = CliRunner().invoke(main, ["show", "--trace", "2", "--no-color", str(directory)])
    assert out.exit_code == 0, out.output
    score_line = [line for line in out.output.splitlines() if line.startswith("score ")]
    assert len(score_line) == 1 and score_line[0].startswith("score helpful = true  (human, ")
    assert score_line[0].endswith(") spot on")


SPEC = "checks:\n  - name: one-call\n    type: execution-metrics\n    max_llm_calls: 5\n"


def test_check_selects_runs_by_their_scores_and_context(runs: tuple[Path, list[str]], tmp_path: Path) -> None:
    directory, ids = runs
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    spanfold.score(ids[0], "grade", 0.2, directory=directory)
    spanfold.score(ids[1], "grade", 0.9, directory=directory)
    spanfold.score(ids[2], "thumbs", False, directory=directory)

    def checked(*where: str) -> tuple[int, list[str]]:
        args = ["check", str(directory), "--spec", str(spec)] + [a for w in where for a in ("--where", w)]
        out = CliRunner().invoke(main, args)
        return out.exit_code, [
            line.split()[0].rsplit(":", 1)[1] for line in out.output.splitlines() if "one-call" in line
        ]

    assert checked("score.grade<0.5") == (0, ["1"])
    assert checked("score.grade >= 0.5") == (0, ["2"])
    assert checked("score.thumbs=false") == (0, ["3"])
    assert checked("score.thumbs<1") == (0, ["3"])
    assert checked("score.grade!=0.2") == (0, ["2"])  # a run without the score matches no expression
    assert checked("user=u-1") == (0, ["1", "3"])
    assert checked("user=u-1", "score.grade<0.5") == (0, ["1"])
    assert checked("score.missing>0") == (0, [])


@pytest.mark.parametrize(
    ("where", "says"),
    [
        ("score.grade<good", "< compares with a number, not 'good'"),
        ("colour=red", "unknown field 'colour'"),
        ("user<3", "user takes = or !=, not <"),
        ("helpful", "expected FIELD OP VALUE"),
    ],
)
def test_a_bad_where_says_what_is_wrong(runs: tuple[Path, list[str]], tmp_path: Path, where: str, says: str) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    out = CliRunner().invoke(main, ["check", str(runs[0]), "--spec", str(spec), "--where", where])
    assert out.exit_code == 2 and says in out.output and "Traceback" not in out.output


def test_a_bad_sidecar_line_is_named_and_the_rest_read(runs: tuple[Path, list[str]]) -> None:
    directory, ids = runs
    spanfold.score(ids[0], "grade", 0.5, directory=directory)
    with open(directory / SCORES_FILE, "a") as sidecar:
        sidecar.write('{"trace_id": "x", "name": "n", "value": [1]}\nnot json\n')
    spanfold.score(ids[2], "grade", 0.7, directory=directory)
    out = CliRunner().invoke(main, ["summary", str(directory)], env={"COLUMNS": "200"})
    assert out.exit_code == 2
    sidecar_path = directory / SCORES_FILE
    assert f"{sidecar_path}:2: not a score: value must be a number, a bool or a short string, not a list" in out.output
    assert f"{sidecar_path}:3: not valid JSON" in out.output
    assert "grade=0.7" in out.output and "Traceback" not in out.output


_LATE_SCORER = """
import sys
import spanfold
assert spanfold.score(sys.argv[2], "late", 0.5, source="llm", directory=sys.argv[1])
"""


def test_scores_another_process_writes_while_a_reader_is_open_are_seen(runs: tuple[Path, list[str]]) -> None:
    directory, ids = runs
    spanfold.score("another-run", "early", 1, directory=directory)  # the sidecar exists before the readers open
    index = ScoreIndex(directory / SCORES_FILE)
    assert index.of(ids[0]) == []
    reading = read_records(directory / "traces.jsonl")
    first = next(r for r in reading if isinstance(r, Record))
    assert first.trace is not None and first.trace.meta.scores == []
    for trace_id in ids[1:]:  # another process scores the runs not yet read, and the one read
        subprocess.run([sys.executable, "-c", _LATE_SCORER, str(directory), trace_id], check=True, timeout=60)
    subprocess.run([sys.executable, "-c", _LATE_SCORER, str(directory), ids[0]], check=True, timeout=60)
    rest = [r for r in reading if isinstance(r, Record)]
    assert [[s.name for s in r.trace.meta.scores] for r in rest if r.trace is not None] == [["late"], ["late"]]
    assert [(s.name, s.value, s.source) for s in index.of(ids[0])] == [("late", 0.5, "llm")]
