"""How long ``spanfold ui`` takes to open one large run (issue 34, item 5), before and after: a real headless browser
(Debian's chromium through Playwright) against the real command, the same run for both.

    python bench/ui_open_large.py [--mb 50] [--before REV] [--timeout 180]

The run: one long coding agent's trace of about ``--mb`` MB on one Invariant line (a system prompt, then model steps
each with a text and a tool call, every output about 60 kB of text and two of them 4 MB; ``edit_file`` calls carry
6 kB arguments), with its ``.meta.jsonl`` sibling listing every step's time. ``--before`` names the revision to
compare with (default: the last one that sent a run whole); its ``src`` is taken with ``git archive`` into a
temporary directory and served from there, the current checkout's ``src`` after it.

Timed, each from the click (or the navigation) to the next frame painted after the page shows it:

* open: the run's permalink loaded until its conversation is on the page;
* timeline: the Timeline tab, until the waterfall's rows are there;
* raw: the Raw tab, until the raw record's first characters are there;
* expand: the biggest tool output opened (before: its fold, 4 MB at once; after: its fold, then one "show more": the
  next 200,000 characters).

A step that does not finish within ``--timeout`` seconds is printed as more than that. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: The last revision whose page fetched a run whole (events, raw record and spec in one answer).
BEFORE = "fc3a0d0"
CHROMIUM = os.environ.get("SPANFOLD_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
TRACE_ID = f"{0xB16:032x}"
BIG = 4_000_000
WORDS = ("the", "of", "and", "a", "to", "in", "is", "you", "that", "it", "he", "was", "for", "on", "are", "with")


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds % 1 * 1e6):06d}Z"


def generate(directory: Path, megabytes: float) -> int:
    """The run's files in ``directory``; the size of its line in bytes."""
    rnd = random.Random(7)

    def text(chars: int) -> str:
        return " ".join(rnd.choice(WORDS) for _ in range(chars // 4))

    events: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. " + text(2000)},
        {"role": "user", "content": "Fix the failing tests in the repository."},
    ]
    steps: list[dict[str, Any]] = []
    clock, size, k = 1_760_000_000.0, 0, 0
    while size < megabytes * 1_000_000:
        k += 1
        tool = ("read_file", "run_tests", "edit_file", "grep")[k % 4]
        args: dict[str, Any] = {"path": f"src/module_{k}.py"}
        if tool == "edit_file":
            args["content"] = text(6000)
        call = {"id": f"call_{k}", "type": "function", "function": {"name": tool, "arguments": args}}
        events.append({"role": "assistant", "content": f"Step {k}: " + text(600), "tool_calls": [call]})
        usage = {"input_tokens": 20_000 + 40 * k, "output_tokens": 300}
        steps.append({"kind": "model", "start": _iso(clock), "duration_ms": 1500.0, "model": "gpt-4o", "usage": usage})
        steps[-1]["event"] = len(events) - 1
        clock += 1.5
        output = text(BIG if k in (50, 300) else 60_000)
        events.append({"role": "tool", "tool_call_id": f"call_{k}", "content": output})
        steps.append({"kind": "tool", "start": _iso(clock), "duration_ms": 400.0, "name": tool, "call_id": f"call_{k}"})
        steps[-1]["event"] = len(events) - 1
        clock += 0.5
        size += len(json.dumps(events[-2])) + len(json.dumps(events[-1]))
    events.append({"role": "assistant", "content": "All tests pass now."})
    steps.append({"kind": "model", "start": _iso(clock), "duration_ms": 900.0, "model": "gpt-4o"})
    steps[-1]["event"] = len(events) - 1
    meta = {
        "trace_id": TRACE_ID,
        "name": "long-coder",
        "service": "bench",
        "models": ["gpt-4o"],
        "usage": {"input_tokens": sum(s.get("usage", {}).get("input_tokens", 0) for s in steps), "output_tokens": 0},
        "start": _iso(1_760_000_000.0),
        "duration_ms": (clock - 1_760_000_000.0) * 1000 + 900,
        "status": "complete",
        "steps": steps,
    }
    line = json.dumps(events, ensure_ascii=False) + "\n"
    (directory / "runs.jsonl").write_text(line, encoding="utf-8")
    (directory / "runs.meta.jsonl").write_text(json.dumps({"metadata": meta}) + "\n", encoding="utf-8")
    return len(line.encode())


class Server:
    """``spanfold ui DIR --port 0`` from the ``src`` given (PYTHONPATH), until :meth:`stop`."""

    def __init__(self, src: Path, directory: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(src)}
        command = [sys.executable, "-m", "spanfold", "ui", str(directory), "--port", "0"]
        self.proc = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        if "spanfold ui: http://" not in line:
            raise SystemExit(f"spanfold ui did not start: {line}")
        self.url = line.split("spanfold ui: ", 1)[1].split("?")[0].strip()

    def json(self, path: str) -> Any:
        with urllib.request.urlopen(self.url.rstrip("/") + path, timeout=60) as response:
            return json.loads(response.read())

    def run_id(self) -> str:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            runs = self.json("/api/runs")["runs"]
            if runs:
                return str(runs[0]["id"])
            time.sleep(0.2)
        raise SystemExit("the run was never indexed")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


PAINTED = "() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))"
#: A click the page handles after this call returns (a page busy for minutes would hold a direct click).
CLICK = "selector => setTimeout(() => document.querySelector(selector).click(), 0)"


def _timed(page: Any, action: Any, ready: str, timeout: float) -> float | None:
    """Seconds from ``action()`` until ``ready`` (a JS predicate) holds and a frame is painted (None: not within
    ``timeout``)."""
    began = time.perf_counter()
    action()
    try:
        page.wait_for_function(ready, timeout=timeout * 1000, polling=50)
        page.evaluate(PAINTED)
    except Exception as exc:  # Playwright's TimeoutError (or the page crashed): more than the timeout
        print(f"    ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})")
        return None
    took = time.perf_counter() - began
    print(f"    {took:.2f} s", flush=True)
    return took


BIGGEST_FOLD = """() => { const s = [...document.querySelectorAll('summary')]
  .find(x => /\\((\\d{1,3},)?\\d{1,3},\\d{3},\\d{3} chars\\)/.test(x.textContent));
  if (s) setTimeout(() => s.click(), 0); return !!s; }"""
FOLD_SHOWN = """() => { const d = [...document.querySelectorAll('details[open]')]
  .find(x => /\\d,\\d{3},\\d{3} chars/.test(x.querySelector('summary').textContent));
  return !!d && d.querySelector('pre').textContent.length > 100000; }"""
MORE_CLICK = """() => { const d = [...document.querySelectorAll('details[open]')]
  .find(x => x.querySelector('button.more')); if (d) d.querySelector('button.more').click(); return !!d; }"""
SLICE_SHOWN = """() => [...document.querySelectorAll('details[open] pre')].some(p => p.textContent.length > 100000)"""


def measure(server: Server, page: Any, timeout: float, after: bool) -> dict[str, float | None]:
    run_id = server.run_id()
    page.goto(server.url)
    page.wait_for_selector("#runs tr.run")
    out: dict[str, float | None] = {}
    permalink = f"{server.url}#/run/{run_id}"
    out["open"] = _timed(
        page, lambda: page.goto(permalink), "() => document.querySelectorAll('#run-body .msg').length > 2", timeout
    )
    if out["open"] is None:
        return out
    out["timeline"] = _timed(
        page,
        lambda: page.evaluate(CLICK, "button[data-tab=timeline]"),
        "() => document.querySelectorAll('.timeline .bar-row').length > 100",
        timeout,
    )
    page.goto(permalink)
    page.wait_for_selector("#run-body .msg")
    out["raw"] = _timed(
        page,
        lambda: page.evaluate(CLICK, "button[data-tab=raw]"),
        "() => (document.querySelector('#raw') || {textContent: ''}).textContent.length > 1000",
        timeout,
    )
    page.goto(permalink)
    page.wait_for_selector("#run-body .msg")
    if after:  # the biggest output is event 102 (step 50's): far down, fetched when scrolled to
        page.goto(f"{server.url}#/run/{run_id}/conversation/102")
        page.wait_for_selector("#event-102")

        def expand() -> None:
            page.evaluate(BIGGEST_FOLD)
            page.wait_for_function("() => document.querySelector('details[open] button.more')")
            page.evaluate(MORE_CLICK)

        out["expand"] = _timed(page, expand, SLICE_SHOWN, timeout)
    else:
        out["expand"] = _timed(page, lambda: page.evaluate(BIGGEST_FOLD), FOLD_SHOWN, timeout)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=50.0, help="size of the run (MB)")
    parser.add_argument("--before", default=BEFORE, help="revision to compare with (git)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds before a step counts as not done")
    parser.add_argument("--only", choices=("before", "after"), help="measure one side only")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "before").mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.before, "src"], check=True, capture_output=True
        )
        subprocess.run(["tar", "-x", "-C", str(base / "before")], input=archive.stdout, check=True)
        runs = base / "runs"
        runs.mkdir()
        size = generate(runs, args.mb)
        print(f"one run of {size / 1e6:.1f} MB ({runs}); before = {args.before}, after = this checkout")
        results: dict[str, dict[str, float | None]] = {}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            for label, src in (("before", base / "before" / "src"), ("after", ROOT / "src")):
                if args.only not in (None, label):
                    continue
                server = Server(src, runs)
                try:
                    context = browser.new_context(viewport={"width": 1280, "height": 800})
                    page = context.new_page()
                    print(f"  {label} ...", flush=True)
                    results[label] = measure(server, page, args.timeout, label == "after")
                    context.close()
                finally:
                    server.stop()
            browser.close()

    def cell(value: float | None) -> str:
        return f"> {args.timeout:.0f} s" if value is None else f"{value:.2f} s"

    sides = list(results)
    print(
        f"\n{'step':<10}"
        + "".join(f"{side:>10}" for side in sides)
        + (f"{'before / after':>16}" if len(sides) == 2 else "")
    )
    for step in ("open", "timeline", "raw", "expand"):
        values = [results[side].get(step) for side in sides]
        line = f"{step:<10}" + "".join(f"{cell(v):>10}" for v in values)
        if len(sides) == 2:
            before, after = values
            if before and after:
                line += f"{before / after:>15.1f}x"
            elif after:
                line += f"{'> ' + format(args.timeout / after, '.0f'):>15}x"
        print(line)


if __name__ == "__main__":
    main()
