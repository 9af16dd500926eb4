"""Zero-code as typed, on every installed SDK major (the SDK matrix runs this in fresh venvs holding ``spanfold[auto]``
and the SDK pair only):

* ``spanfold run -- python app.py``: nothing to configure; each run of the app is one trace file line AND one OTel
  trace id (stitched at the source), ``TRACEPARENT`` parents the run;
* the README's ``OTEL_TRACES_EXPORTER=spanfold SPANFOLD_OUTPUT=traces opentelemetry-instrument python app.py``, with
  no other variable set: no "otlp_proto_grpc not found" (metrics and logs exporters default to off), and other
  instrumentations of the same libraries turned off in one line (one span per call, no repeated steps).

The app (``agents.py`` run as a script) never imports spanfold's tracing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import spanfold

from . import agents

BIN = Path(sys.executable).parent
SPANFOLD = shutil.which("spanfold", path=str(BIN)) or shutil.which("spanfold")
INSTRUMENT = shutil.which("opentelemetry-instrument", path=str(BIN)) or shutil.which("opentelemetry-instrument")
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment without any OTEL_* / SPANFOLD_* setting: a fresh shell's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "SPANFOLD_", "TRACEPARENT"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return {**env, **extra}


def run(args: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def written(out: Path) -> tuple[list[Any], list[dict[str, Any]]]:
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text(encoding="utf-8").splitlines()]
    metas = [json.loads(line)["metadata"] for line in (out / "traces.meta.jsonl").read_text().splitlines()]
    return traces, metas


def scenarios() -> list[str]:
    return [name for name in agents.available() if not name.startswith("anthropic")][:3]


def test_spanfold_run_python_app(tmp_path: Path) -> None:
    assert SPANFOLD is not None
    names = scenarios()
    done = run([SPANFOLD, "run", "--", "python", agents.__file__, *names], clean_env(), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert "Traceback" not in done.stderr and "not found" not in done.stderr, done.stderr
    traces, metas = written(tmp_path / "traces")  # spanfold's default directory
    assert len(traces) == len(names)
    by_question = {next(e["content"] for e in t if e["role"] == "user"): t for t in traces}
    for name in names:
        assert by_question[agents.question(name)] == agents.expected(name), name
    assert all(len(m["otel_trace_ids"]) == 1 and m["status"] == "complete" for m in metas), metas


def test_spanfold_run_with_traceparent_and_capture_off(tmp_path: Path) -> None:
    assert SPANFOLD is not None
    name = scenarios()[0]
    args = [SPANFOLD, "run", "--no-capture-content", "-o", str(tmp_path / "out"), "--", "python", agents.__file__, name]
    done = run(args, clean_env(TRACEPARENT=TRACEPARENT))
    assert done.returncode == 0, done.stderr
    traces, metas = written(tmp_path / "out")
    # the run in the caller's trace, named by its first span (every run of the process shares the caller's trace id)
    assert [m["trace_id"].split("-")[0] for m in metas] == ["4bf92f3577b34da6a3ce929d0e0e4736"]
    assert [m["otel_trace_ids"] for m in metas] == [["4bf92f3577b34da6a3ce929d0e0e4736"]]
    assert [e["role"] for e in traces[0]] == [e["role"] for e in agents.expected(name)]
    assert agents.question(name) not in json.dumps(traces)


def test_spanfold_run_names_a_missing_command(tmp_path: Path) -> None:
    assert SPANFOLD is not None
    done = run([SPANFOLD, "run", "--", "no-such-program-here"], clean_env())
    assert done.returncode == 127
    assert done.stderr.strip() == "spanfold run: command not found: no-such-program-here"


def test_readme_opentelemetry_instrument_line_as_typed(tmp_path: Path) -> None:
    """Exactly the README's variables, nothing else: works in a venv with only ``spanfold[auto]`` and the SDK, and in
    one with other OpenAI instrumentations installed beside it (this CI venv has three)."""
    assert INSTRUMENT is not None
    names = scenarios()
    env = clean_env(OTEL_TRACES_EXPORTER="spanfold", SPANFOLD_OUTPUT="traces")  # the README's line, exactly
    done = run([INSTRUMENT, "python", agents.__file__, *names], env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert "Traceback" not in done.stderr and "not found" not in done.stderr, done.stderr
    others = [line for line in done.stderr.splitlines() if "turned off other instrumentations" in line]
    assert len(others) <= 1, done.stderr
    traces, metas = written(tmp_path / "traces")
    by_question = {next(e["content"] for e in t if e["role"] == "user"): t for t in traces}
    assert len(traces) == len(names) == len(by_question)
    for name in names:
        assert by_question[agents.question(name)] == agents.expected(name), name
    assert all(len(m.get("otel_trace_ids", [m["trace_id"]])) == 1 for m in metas), metas


#: What the child Pythons run: one line of their own on each stream.
CHILD = "import sys; sys.stdout.write('child out\\n'); sys.stderr.write('child err\\n')"
#: The traced parent: runs each interpreter named on its command line and prints what each child wrote.
PARENT = """
import json, subprocess, sys
out = {}
for python in sys.argv[1:]:
    done = subprocess.run([python, "-c", CHILD], capture_output=True, text=True, timeout=60)
    out[python] = [done.returncode, done.stdout, done.stderr]
print(json.dumps(out))
"""


def other_pythons(tmp_path: Path) -> list[str]:
    """Pythons that cannot import spanfold: a fresh ``python -m venv`` venv (with a ``sitecustomize`` of its own,
    which must still run), the system Python, and any other version installed beside (pyenv's, Python 2 too)."""
    venv = tmp_path / "plain-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (site,) = venv.glob("lib/python*/site-packages")
    (site / "sitecustomize.py").write_text("import sys; sys.stdout.write('venv sitecustomize\\n')\n")
    found = [
        str(venv / "bin" / "python"),
        "/usr/bin/python3",
        *sorted(map(str, Path.home().glob(".pyenv/versions/*/bin/python"))),
    ]
    plain = clean_env()
    return [
        python
        for python in found
        if os.access(python, os.X_OK)
        and subprocess.run([python, "-c", "import spanfold"], env=plain, capture_output=True, timeout=60).returncode
    ]


@pytest.mark.parametrize("source_on_path", [False, True], ids=["plain", "spanfold-source-on-PYTHONPATH"])
def test_spanfold_run_leaves_other_pythons_stderr_alone(tmp_path: Path, source_on_path: bool) -> None:
    """Under ``spanfold run``, a child that runs a Python without spanfold inherits the bootstrap on its
    ``PYTHONPATH``: that Python starts silently (nothing on stderr, whatever its version), and a ``sitecustomize``
    of its own still runs. Also when spanfold's own source is on ``PYTHONPATH`` too (a checkout): an older Python
    finds the package and cannot read it, a Python without spanfold's dependencies cannot import it."""
    assert SPANFOLD is not None
    pythons = other_pythons(tmp_path)
    assert str(tmp_path / "plain-venv" / "bin" / "python") in pythons
    parent = tmp_path / "parent.py"
    parent.write_text(f"CHILD = {CHILD!r}\n{PARENT}")
    env = clean_env(PYTHONPATH=str(Path(spanfold.__file__).parents[1])) if source_on_path else clean_env()
    done = run([SPANFOLD, "run", "-o", str(tmp_path / "out"), "--", "python", str(parent), *pythons], env)
    assert done.returncode == 0, done.stderr
    assert "spanfold.init() failed" not in done.stderr and "sitecustomize" not in done.stderr, done.stderr
    children = json.loads(done.stdout)
    for python, (status, out, err) in children.items():
        assert (status, err) == (0, "child err\n"), python
        expected = "venv sitecustomize\nchild out\n" if "plain-venv" in python else "child out\n"
        assert out == expected, python
    # In the Python spanfold runs in, a failing init() is still said, in one line:
    env = clean_env(SPANFOLD_FORMAT="bogus")
    done = run([SPANFOLD, "run", "-o", str(tmp_path / "out"), "--", "python", "-c", CHILD], env)
    assert done.returncode == 0 and done.stdout == "child out\n"
    said = [line for line in done.stderr.splitlines() if line.startswith("spanfold run: tracing is off")]
    assert len(said) == 1 and "SPANFOLD_FORMAT" in said[0], done.stderr
    assert done.stderr.endswith("child err\n")


def test_spanfold_run_says_where_the_traces_went_on_a_terminal(tmp_path: Path) -> None:
    """On a terminal, one line at the end: how many traces were written where (the program's own child Pythons say
    nothing); into a pipe, nothing (test_spanfold_run_python_app's stderr holds no such line)."""
    import pty
    import select

    assert SPANFOLD is not None
    app = tmp_path / "app.py"
    app.write_text(
        "import subprocess, sys\n"
        f"sys.path.insert(0, {str(Path(agents.__file__).parent)!r})\n"
        "import agents\n"
        "agents.run('chat')\n"
        "subprocess.run([sys.executable, '-c', 'pass'], check=True)\n"  # a child Python: it says nothing
    )
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [SPANFOLD, "run", "-o", str(tmp_path / "out"), "--", "python", str(app)],
        env=clean_env(),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=slave,
    )
    os.close(slave)
    text = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 120)
            if not ready:
                break
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            text += chunk
    finally:
        os.close(master)
        assert proc.wait(timeout=60) == 0
    said = [line for line in text.decode().splitlines() if line.startswith("spanfold run:") and "written" in line]
    out = tmp_path / "out"
    assert said == [f"spanfold run: 1 trace written to {out}/ (spanfold show {out} --trace -1)"]


def test_the_end_of_run_line_names_lost_traces() -> None:
    from spanfold.run_report import line

    assert line({"traces_written": 2, "writer.dropped_traces": 1}, "out") == (
        "spanfold run: 2 traces written to out/; 1 lost (the line above says why)"
    )
    assert line({}, "out") == "spanfold run: no trace written to out/ (the program made no call spanfold traces)"
