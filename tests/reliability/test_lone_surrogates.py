"""A lone surrogate (half of a pair: a provider cutting an emoji, a file name decoded with ``surrogateescape``) in a
prompt, a reply, a tool result or the agent's name keeps its trace: every file (JSONL events and metadata in both
formats, the per-trace JSON, ``spanfold convert``'s output) is valid UTF-8 and valid JSON, the surrogate written as its
JSON escape, and reading the file back gives the very text the program saw."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest
from click.testing import CliRunner

import spanfold
from spanfold.cli import main as cli
from spanfold.testing import MockLLMServer, Reply

PROMPT = "look at \udc00 this"  # the SDK itself cannot send it (UnicodeEncodeError), with or without spanfold
REPLY = "half \ud800 of a pair"
RESULT = "report-\udcff.txt"  # os.listdir() of a name that is not UTF-8
AGENT = "files-bot \udcfe"


def _reply_body(text: str) -> str:
    """A chat completion whose text holds ``text`` (the wire carries a lone surrogate as a JSON escape)."""
    body = {
        "id": "chatcmpl-surrogate",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
    }
    return json.dumps(body)  # ASCII: "\ud800"


def _read(path: Path) -> Any:
    """The file as strict UTF-8, then JSON (one document, or a list of lines for JSONL)."""
    text = path.read_bytes().decode("utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines()]
    return json.loads(text)


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


def _run(out: Path, server: MockLLMServer, fmt: str) -> None:
    @spanfold.tool(name="list_files")
    def list_files(directory: str) -> str:
        return RESULT

    spanfold.init(output=str(out), format=fmt, file_per_trace=True)
    try:
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        with spanfold.agent(AGENT):
            with pytest.raises(UnicodeEncodeError):
                client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": PROMPT}])
            server.script(Reply.raw(200, _reply_body(REPLY)))
            reply = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "list"}])
            assert reply.choices[0].message.content == REPLY
            list_files("/srv")
        assert spanfold.flush(timeout=30)
    finally:
        spanfold.shutdown()


@pytest.mark.parametrize("fmt", ["invariant", "agentv"])
def test_a_lone_surrogate_keeps_the_trace_in_every_file(
    tmp_path: Path, server: MockLLMServer, fmt: str, _global_provider: Any
) -> None:
    out = tmp_path / "traces"
    _run(out, server, fmt)
    stats = spanfold.stats()
    assert stats.get("faults", 0) == 0, stats
    assert stats["traces_written"] == 1
    files = sorted(out.iterdir())
    assert len(files) == (3 if fmt == "invariant" else 2)  # events (+ metadata) JSONL and one <trace_id>.json
    for path in files:
        raw = path.read_bytes()
        assert b"\\ud800" in raw or path.name == "traces.meta.jsonl"  # the escape, not dropped nor replaced
        texts = "\n".join(_texts(_read(path)))
        if path.name != "traces.jsonl":  # the metadata (beside an Invariant event list, inside the others)
            assert AGENT in texts, path.name
        if path.name != "traces.meta.jsonl":
            assert all(t in texts for t in (PROMPT, REPLY, RESULT)), path.name


#: An Invariant trace file holding lone surrogates (as JSON escapes: the file itself is ASCII).
RECORDED = [
    {"role": "user", "content": PROMPT},
    {"role": "assistant", "content": REPLY, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "list_files", "arguments": {"directory": "/srv"}}}
    ]},
    {"role": "tool", "tool_call_id": "c1", "content": RESULT},
]  # fmt: skip


@pytest.mark.parametrize("to", ["invariant", "agentv", "compact", "agentv-cli"])
@pytest.mark.parametrize("yaml", [False, True])
def test_convert_writes_a_lone_surrogate_as_its_escape(tmp_path: Path, to: str, yaml: bool) -> None:
    source = tmp_path / "recorded.jsonl"
    source.write_text(json.dumps(RECORDED) + "\n", encoding="ascii")
    target = tmp_path / f"converted.{'yaml' if yaml else 'jsonl'}"
    result = CliRunner().invoke(cli, ["convert", str(source), "--to", to, "-o", str(target)])
    assert result.exit_code == 0, result.output
    text = target.read_bytes().decode("utf-8")
    if yaml:
        import yaml as pyyaml

        value = pyyaml.safe_load(text)
    else:
        (value,) = [json.loads(line) for line in text.splitlines()]
    texts = "\n".join(_texts(value))
    assert all(t in texts for t in (PROMPT, REPLY, RESULT)), texts
