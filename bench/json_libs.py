"""stdlib ``json`` against orjson, msgspec and ``spanfold.codecs.jsonio`` on the JSON spanfold encodes and parses.

The payloads are real: spanfold's own instrumentation records a 5-step agent run (``bench/spans.py``: the openai SDK
over the in-process mock transport, four ``get_weather`` tool calls); its last model call's history is 10 messages
with tool calls and tool results.

* calling thread (encode): the 10 history messages one by one (as the history cache converts and encodes each new
  message: ``jsonio.dumps``), and the call's output messages;
* folding worker (decode): that call's ``gen_ai.input.messages`` and ``gen_ai.output.messages`` texts, and every JSON
  attribute of the run (tool definitions, tool arguments, histories of every step);
* writers (encode): a chat span's attribute dict, and the folded trace's three JSONL documents (Invariant events,
  AgentV document, metadata record), with ``default=str`` as ``trace/formats.py`` writes them;
* receiver (decode): the run as one OTLP/JSON export line (``exporter/otlp/json_out``'s), as ``spanfold serve`` and
  ``spanfold fold`` read it (``exporter/otlp/json_in`` parses with the standard library); and its encoding.

Each round times every library on every payload in a shuffled order (CPU time of this thread, ``--repeat`` calls),
and divides by the standard library's time in the same round: the ratios are medians over rounds, steadier than the
times on a shared machine. ``jsonio`` is whichever ``spanfold`` this interpreter imports (``PYTHONPATH=SRC`` to
measure another tree). Each output is checked against the standard library's: the same text, or (``value``) text that
parses to the same value, or ``NO``.

    python bench/json_libs.py [--rounds 15] [--repeat 200]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import msgspec
import orjson
import spans

import spanfold
from spanfold.codecs import jsonio
from spanfold.exporter.fold.folding import fold
from spanfold.exporter.otlp import json_out
from spanfold.trace import formats

STD = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
STD_STR = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)
MSGSPEC_ENC = msgspec.json.Encoder()
MSGSPEC_DEC = msgspec.json.Decoder()
ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME

Variants = dict[str, Callable[[], Any]]


def encoders(values: list[Any], spanfold_encode: Callable[[Any], str]) -> Variants:
    return {
        "json": lambda: [STD_STR.encode(v) for v in values],
        "orjson": lambda: [orjson.dumps(v, default=str, option=ORJSON_OPTIONS).decode() for v in values],
        "msgspec": lambda: [MSGSPEC_ENC.encode(v).decode() for v in values],
        "jsonio": lambda: [spanfold_encode(v) for v in values],
    }


def decoders(texts: list[str] | list[bytes]) -> Variants:
    return {
        "json": lambda: [json.loads(t) for t in texts],
        "orjson": lambda: [orjson.loads(t) for t in texts],
        "msgspec": lambda: [MSGSPEC_DEC.decode(t) for t in texts],
        "jsonio": lambda: [jsonio.loads(t) for t in texts],
    }


def payloads() -> dict[str, tuple[str, Variants]]:
    """``{label: (what it is, {library: one call over the payload})}``."""
    run = spans.record_agent_run(5)
    chat = [r for r in run if r.name.startswith("chat")][-1]
    inputs_text = chat.attributes["gen_ai.input.messages"]
    outputs_text = chat.attributes["gen_ai.output.messages"]
    history, outputs = json.loads(inputs_text), json.loads(outputs_text)
    assert len(history) == 10, len(history)
    texts = [v for r in run for v in r.attributes.values() if isinstance(v, str) and v[:1] in "[{"]
    attributes = {k: list(v) if isinstance(v, tuple) else v for k, v in chat.attributes.items()}
    trace = fold(run, trace_id="bench")
    docs = [trace.to_invariant(), formats.agentv_document(trace), formats.meta_record(trace)]
    otlp_line = json_out.encode_line(run)
    otlp_doc = json.loads(otlp_line)

    def size(items: list[str]) -> str:
        return f"{sum(len(t.encode()) for t in items) / 1e3:,.1f} kB"

    def calling(value: Any) -> str:  # the instrumentation's reading.messages.dumps, whose default is for objects
        return jsonio.dumps(value, str)

    def writer(value: Any) -> str:
        return jsonio.dumps(value, str)

    return {
        "encode: the 10 history messages, one by one": (
            f"calling thread, {size([STD.encode(m) for m in history])}",
            encoders(history, calling),
        ),
        "encode: the output messages": (f"calling thread, {size([STD.encode(outputs)])}", encoders([outputs], calling)),
        "decode: gen_ai.input.messages (10 messages)": (f"worker, {size([inputs_text])}", decoders([inputs_text])),
        "decode: gen_ai.output.messages": (f"worker, {size([outputs_text])}", decoders([outputs_text])),
        f"decode: every JSON attribute of the run ({len(texts)})": (f"worker, {size(texts)}", decoders(texts)),
        "encode: a chat span's attribute dict": (
            f"writers, {size([STD.encode(attributes)])}",
            encoders([attributes], writer),
        ),
        "encode: the trace's 3 JSONL documents": (
            f"writers, {size([STD_STR.encode(d) for d in docs])}",
            encoders(docs, writer),
        ),
        "decode: an OTLP/JSON export line (21 spans)": (
            f"receiver, {size([otlp_line])}",
            decoders([otlp_line.encode()]),
        ),
        "encode: an OTLP/JSON export line (21 spans)": (f"json_out, {size([otlp_line])}", encoders([otlp_doc], writer)),
    }


def same(label: str, out: list[Any], reference: list[Any]) -> str:
    if label.startswith("decode"):
        return "yes" if repr(out) == repr(reference) else "NO"
    texts = [o if isinstance(o, str) else o.decode() for o in out]
    if texts == reference:
        return "yes"
    return "value" if [json.loads(t) for t in texts] == [json.loads(r) for r in reference] else "NO"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=200, help="calls per timing")
    args = parser.parse_args()
    load = "load average {:.2f} {:.2f} {:.2f} (1, 5, 15 min)".format(*os.getloadavg())
    print(f"machine: {load}, {os.cpu_count()} cores; jsonio from {Path(spanfold.__file__).parent.parent}")
    work = payloads()
    checks = {}
    for label, (_, fns) in work.items():
        reference = fns["json"]()
        checks[label] = {lib: same(label, fn(), reference) for lib, fn in fns.items()}
    times: dict[tuple[str, str], list[float]] = {}
    ratios: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for label, (_, fns) in work.items():
            order = list(fns)
            random.shuffle(order)
            now: dict[str, float] = {}
            for lib in order:
                fn = fns[lib]
                start = time.thread_time()
                for _ in range(args.repeat):
                    fn()
                now[lib] = (time.thread_time() - start) / args.repeat
            for lib, seconds in now.items():
                times.setdefault((label, lib), []).append(seconds)
                ratios.setdefault((label, lib), []).append(seconds / now["json"])
    print(f"\nmedians of {args.rounds} rounds of {args.repeat} calls, libraries shuffled in each round\n")
    print("| payload | who | library | CPU µs | vs json | same output |")
    print("|---|---|---|---|---|---|")
    for label, (who, fns) in work.items():
        for lib in fns:
            us = statistics.median(times[label, lib]) * 1e6
            ratio = statistics.median(ratios[label, lib])
            print(f"| {label} | {who} | {lib} | {us:,.1f} | {ratio:.2f}x | {checks[label][lib]} |")
    print("machine: load average {:.2f} {:.2f} {:.2f} (1, 5, 15 min)".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
