"""The first fold's one-time loading waits for a quiet moment of the application (issue 53, item 4).

The folding worker loads the fold's later stages (its modules, msgspec, genai-prices' price table: ~150 ms of CPU
holding the GIL) with the first spans of an application's process; while the application keeps starting and ending
spans it waits, and loads them once no span started or ended for a moment (a model call waiting on its provider), or
when a flush asks for the fold; the price table is genai-prices' only when the price memo of the last process
(spanfold.pricing.memo) does not hold the lookups. Each case runs in a fresh interpreter: what is loaded is read from
``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

CHILD = textwrap.dedent(
    """
    import json, sys, time
    import spanfold
    from opentelemetry import trace
    from spanfold.exporter.pipeline import worker

    # quiet means no span for 0.5 s here (20 ms by default): a loaded machine's scheduler (CI builds venvs beside the
    # tests) can pause this loop for 20 ms, and has paused it for 0.2 s
    worker.QUIET_S = 0.5
    spanfold.init(output=sys.argv[1], capture_content=True)
    tracer = trace.get_tracer("app")
    STAGES = ("spanfold.exporter.fold.folding", "spanfold.pricing.table", "genai_prices.data", "msgspec")

    def loaded():
        return {name: name in sys.modules for name in STAGES}

    seen = {}
    end = time.monotonic() + 0.6
    while time.monotonic() < end:  # busy: a span every 2 ms, none of the stages loaded meanwhile
        with tracer.start_as_current_span("chat gpt-4o-mini") as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.provider.name", "openai")
            span.set_attribute("gen_ai.request.model", "gpt-4o-mini")
            span.set_attribute("gen_ai.usage.input_tokens", 12)
            span.set_attribute("gen_ai.usage.output_tokens", 3)
        time.sleep(0.002)
        for name, is_loaded in loaded().items():
            seen[name] = seen.get(name, False) or is_loaded
    busy = dict(seen)
    # quiet: the worker loads them now, a step per quiet moment (0.5 s each here; longer on a loaded machine), the
    # price table last (genai-prices' only when the memo does not hold the lookups: give it a moment to appear)
    def waited(names, seconds):
        end = time.monotonic() + seconds
        while not all(name in sys.modules for name in names) and time.monotonic() < end:
            time.sleep(0.05)

    waited([name for name in STAGES if name != "genai_prices.data"], 15)
    waited(["genai_prices.data"], 3)
    quiet = loaded()
    spanfold.flush()
    print(json.dumps({"busy": busy, "quiet": quiet, "exit": sorted(m for m in sys.modules if "genai" in m)}))
    """
)


def _run(tmp_path: Path, memo: Path, traces: str = "traces") -> dict[str, dict[str, bool]]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / traces)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "SPANFOLD_PRICE_CACHE": str(memo)},
    )
    out: dict[str, dict[str, bool]] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def _costs(traces: Path) -> set[float]:
    lines = (traces / "traces.meta.jsonl").read_text().splitlines()
    return {json.loads(line)["metadata"]["cost"]["total"] for line in lines}


def test_the_first_fold_loads_its_stages_when_the_application_is_quiet(tmp_path: Path) -> None:
    got = _run(tmp_path, tmp_path / "memo")
    assert set(got["busy"].values()) == {False}, got["busy"]  # nothing, not even the pricing modules (~7 ms)
    assert set(got["quiet"].values()) == {True}, got["quiet"]


def test_with_the_last_processs_prices_kept_genai_prices_is_not_loaded_and_the_runs_cost_the_same(
    tmp_path: Path,
) -> None:
    first = _run(tmp_path, tmp_path / "memo", "first")
    assert first["quiet"]["genai_prices.data"] is True
    second = _run(tmp_path, tmp_path / "memo", "second")
    assert second["quiet"] == {
        "spanfold.exporter.fold.folding": True,
        "spanfold.pricing.table": True,
        "genai_prices.data": False,
        "msgspec": True,
    }
    assert "genai_prices" not in second["exit"]
    assert _costs(tmp_path / "second") == _costs(tmp_path / "first") == {3.6e-6}  # 12 x $0.15 + 3 x $0.60 per million


def test_a_flush_loads_them_at_once_and_writes_every_run(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            import spanfold
            from opentelemetry import trace

            spanfold.init(output=sys.argv[1], capture_content=True)
            tracer = trace.get_tracer("app")
            for _ in range(3):
                with tracer.start_as_current_span("invoke_agent bot") as span:
                    span.set_attribute("gen_ai.operation.name", "invoke_agent")
            spanfold.flush()  # no quiet moment waited for
            print("folding" if "spanfold.exporter.fold.folding" in sys.modules else "not loaded")
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "traces")], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "folding"
    metas = (tmp_path / "traces" / "traces.meta.jsonl").read_text().splitlines()
    assert len(metas) == 3
