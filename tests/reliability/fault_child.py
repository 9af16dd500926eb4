"""A child process for the exporter-fault tests: ``python fault_child.py BASE``.

Writes traces into ``BASE/traces`` through ``spanfold.init()`` while the output breaks in three ways, and prints one
JSON report. Run as root it first drops to ``nobody`` (after its imports), since root ignores file permissions.

Phases (each: break the path, run 3 traces, flush, record what waits, repair the path, run 1 trace, flush):
* ``deleted``: the output directory deleted and a plain file put in its place (so it cannot be re-created);
* ``disk_full``: RLIMIT_FSIZE just above the file's size (SIGXFSZ ignored, so ``write`` fails with EFBIG);
* ``permission``: the trace file made read-only.
"""

from __future__ import annotations

import concurrent.futures.thread  # noqa: F401  (the OTel SDK's Resource.create() imports it when init() runs)
import json
import multiprocessing.util  # noqa: F401  (spanfold.init() imports it: before dropping privileges)
import os
import resource
import shutil
import signal
import sys

import spanfold
import spanfold.exporter.dialects.dispatch  # the fold loads with the first trace: imported before dropping
import spanfold.exporter.fold.folding  # privileges, as ``nobody`` may not read this interpreter's standard library
import spanfold.exporter.runs.grouping
import spanfold.exporter.runs.stitch
import spanfold.setup

PAYLOAD = 20_000


@spanfold.tool
def store(who: str, payload: str) -> str:
    return f"{who}|{payload}"


def run(who: str) -> None:
    with spanfold.agent(f"crash-child {who}"):
        store(who, "x" * PAYLOAD)


def pending() -> int:
    handle = spanfold.setup.current()
    assert handle is not None and handle.processor is not None
    return sum(getattr(w, "pending", 0) for w in handle.processor.writers)


def main(base: str) -> None:
    if os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    out = os.path.join(base, "traces")
    events = os.path.join(out, "traces.jsonl")
    spanfold.init(output=out, instrument="none")  # the writer is under test, not the SDKs
    report: dict[str, object] = {}
    run("base:0")
    spanfold.flush(timeout=30)

    def phase(name: str, brake: object, repair: object) -> None:
        brake()  # type: ignore[operator]
        for k in range(3):
            run(f"{name}:{k}")
        report[f"{name}.flushed"] = spanfold.flush(timeout=30)
        report[f"{name}.pending"] = pending()
        repair()  # type: ignore[operator]
        run(f"{name}:3")
        report[f"{name}.flushed_after"] = spanfold.flush(timeout=30)
        report[f"{name}.pending_after"] = pending()

    def delete() -> None:
        shutil.rmtree(out)
        with open(out, "w") as f:
            f.write("not a directory")

    phase("deleted", delete, lambda: os.unlink(out))
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    phase(
        "disk_full",
        lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(events) + 1000, hard)),
        lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard)),
    )
    phase("permission", lambda: os.chmod(events, 0o400), lambda: os.chmod(events, 0o600))

    report["stats"] = spanfold.stats()
    report["modes"] = {name: oct(os.stat(os.path.join(out, name)).st_mode & 0o777) for name in os.listdir(out)}
    report["dir_mode"] = oct(os.stat(out).st_mode & 0o777)
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
