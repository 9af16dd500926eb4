"""The ``media`` option on real SDK calls (openai, anthropic) over real HTTP to the mock server: a 5 MiB image sent as
base64 leaves the span (a uri part of a few hundred bytes), the flat trace's part is that uri, the file is on disk
once with the exact bytes, and the request the SDK sent is the one it would have sent. Blobs under the threshold stay
inline; with content capture off nothing is stored; an fsspec ``memory://`` URL stores them there; a store that
fails keeps the blob inline and counts the fault, the call untouched."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import anthropic
import fsspec
import openai
import pytest
from fsspec.implementations.memory import MemoryFileSystem

import spanfold
from spanfold import counters
from spanfold.testing import MockLLMServer
from spanfold.testing.agents import PROVIDERS

from ..conftest import traced_into
from .conftest import BIG_PNG, BIG_PNG_B64, WAV, b64, files, name_of

QUESTION = "what is in this picture?"


def openai_messages(image_b64: str, audio: bytes | None = None) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = [
        {"type": "text", "text": QUESTION},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{image_b64}"}},
    ]
    if audio is not None:
        content.append({"type": "input_audio", "input_audio": {"data": b64(audio), "format": "wav"}})
    return [{"role": "user", "content": content}]


def ask_openai(server: MockLLMServer, messages: list[dict[str, Any]]) -> str:
    """One chat call; what the model answered. The request the SDK sent must be the messages as given."""
    sent = copy.deepcopy(messages)
    client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
    reply = client.chat.completions.create(model="gpt-4o", messages=messages)  # type: ignore[arg-type]
    assert server.last_request.body["messages"] == sent
    return str(reply.choices[0].message.content)


def model_spans(spans: Any) -> list[Any]:
    return [s for s in spans.get_finished_spans() if s.name.startswith("chat ")]


def input_attribute(spans: Any) -> str:
    (span,) = model_spans(spans)
    return str(span.attributes["gen_ai.input.messages"])


def test_an_openai_image_and_audio_leave_the_span_for_the_media_directory(
    traces_dir: Path, global_spans: Any, _global_provider: Any
) -> None:
    with traced_into(traces_dir, media=True) as traced, MockLLMServer() as server:
        answer = ask_openai(server, openai_messages(BIG_PNG_B64, WAV))
        events = traced.traces()
    assert answer == f"You said: {QUESTION}"
    image, audio = traces_dir / "media" / name_of(BIG_PNG, "png"), traces_dir / "media" / name_of(WAV, "wav")
    assert files(traces_dir / "media") == sorted([image.name, audio.name])  # nothing else: no temporary file left
    assert image.read_bytes() == BIG_PNG and audio.read_bytes() == WAV
    assert oct(image.stat().st_mode & 0o777) == "0o600" and oct(image.parent.stat().st_mode & 0o777) == "0o700"

    attribute = input_attribute(global_spans)
    assert len(attribute) < 600, len(attribute)  # two uri parts (each ~190 bytes) in place of 6.7 MiB of base64
    assert json.loads(attribute) == [
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": QUESTION},
                {"type": "uri", "modality": "image", "mime_type": "image/png", "uri": image.as_uri()},
                {"type": "uri", "modality": "audio", "mime_type": "audio/wav", "uri": audio.as_uri()},
            ],
        }
    ]
    assert image.as_uri().startswith("file:///")
    (trace,) = events
    assert trace[0] == {
        "role": "user",
        "content": [
            {"type": "text", "text": QUESTION},
            {"type": "image", "image_url": image.as_uri()},
            {"type": "audio", "url": audio.as_uri()},
        ],
    }
    assert (traces_dir / "traces.jsonl").stat().st_size < 2000
    assert counters.snapshot().get("media.stored") == 2


def test_the_same_image_sent_again_is_written_once(traces_dir: Path, _global_provider: Any) -> None:
    with traced_into(traces_dir, media=True) as traced, MockLLMServer() as server:
        ask_openai(server, openai_messages(BIG_PNG_B64))
        image = traces_dir / "media" / name_of(BIG_PNG, "png")
        written = image.stat()
        ask_openai(server, openai_messages(BIG_PNG_B64))  # new message objects: converted and looked up again
        events = [e for trace in traced.traces() for e in trace if e["role"] == "user"]
    assert files(traces_dir / "media") == [image.name]
    again = image.stat()
    assert (again.st_ino, again.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)
    assert {e["content"][1]["image_url"] for e in events} == {image.as_uri()}
    stats = counters.snapshot()
    assert (stats.get("media.stored"), stats.get("media.reused")) == (1, 1)


def test_an_anthropic_base64_image_block_leaves_the_span(
    traces_dir: Path, global_spans: Any, _global_provider: Any
) -> None:
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": BIG_PNG_B64}},
                {"type": "text", "text": QUESTION},
            ],
        }
    ]
    sent = copy.deepcopy(messages)
    with traced_into(traces_dir, media=True) as traced, MockLLMServer() as server:
        client = anthropic.Anthropic(api_key="sk-ant-test", base_url=server.anthropic_base_url, max_retries=0)
        reply = client.messages.create(
            model=PROVIDERS["anthropic"].model,
            max_tokens=64,
            messages=messages,  # type: ignore[arg-type]
        )
        assert server.last_request.body["messages"] == sent
        (trace,) = traced.traces()
    assert reply.content[0].type == "text"
    image = traces_dir / "media" / name_of(BIG_PNG, "png")
    assert files(traces_dir / "media") == [image.name] and image.read_bytes() == BIG_PNG
    attribute = input_attribute(global_spans)
    assert len(attribute) < 500, len(attribute)
    assert json.loads(attribute)[0]["parts"][0] == {
        "type": "uri",
        "modality": "image",
        "mime_type": "image/png",
        "uri": image.as_uri(),
    }
    assert trace[0]["content"] == [{"type": "image", "image_url": image.as_uri()}, {"type": "text", "text": QUESTION}]


def test_blobs_under_the_threshold_stay_inline(
    traces_dir: Path, global_spans: Any, _global_provider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = BIG_PNG[: 12 * 1024]  # under the default 16 KiB
    with traced_into(traces_dir, media=True) as traced, MockLLMServer() as server:
        ask_openai(server, openai_messages(b64(small)))
        (trace,) = traced.traces()
    assert files(traces_dir / "media") == []
    assert json.loads(input_attribute(global_spans))[0]["parts"][1] == {
        "type": "blob",
        "modality": "image",
        "mime_type": "image/png",
        "content": b64(small),
    }
    assert trace[0]["content"][1] == {"type": "image", "image_url": f"data:image/png;base64,{b64(small)}"}
    global_spans.clear()

    monkeypatch.setenv("SPANFOLD_MEDIA", "min_bytes=8KiB")  # the same blob over a lower threshold: stored
    with traced_into(traces_dir, capture_content=True) as traced, MockLLMServer() as server:
        ask_openai(server, openai_messages(b64(small)))
        traced.traces()
    assert files(traces_dir / "media") == [name_of(small, "png")]
    assert json.loads(input_attribute(global_spans))[0]["parts"][1]["type"] == "uri"


def test_with_content_capture_off_nothing_is_stored(traces_dir: Path, global_spans: Any, _global_provider: Any) -> None:
    with traced_into(traces_dir, capture_content=False, media=True) as traced, MockLLMServer() as server:
        ask_openai(server, openai_messages(BIG_PNG_B64))
        (trace,) = traced.traces()
    assert not (traces_dir / "media").exists()
    parts = json.loads(input_attribute(global_spans))[0]["parts"]
    assert parts == [{"type": "text"}, {"type": "blob", "modality": "image", "mime_type": "image/png"}]
    assert trace[0]["content"] is None
    assert not [k for k in counters.snapshot() if k.startswith("media.")]


def test_an_fsspec_memory_url_stores_the_blob_there(traces_dir: Path, global_spans: Any, _global_provider: Any) -> None:
    url = f"memory://spanfold-media-{uuid.uuid4().hex}/blobs"
    memory = fsspec.filesystem("memory")
    try:
        with traced_into(traces_dir, media=url) as traced, MockLLMServer() as server:
            ask_openai(server, openai_messages(BIG_PNG_B64))
            (trace,) = traced.traces()
        uri = f"{url}/{name_of(BIG_PNG, 'png')}"
        with fsspec.open(uri, "rb") as stored:  # the uri recorded is one a reader opens
            assert stored.read() == BIG_PNG
        assert len(memory.ls(url)) == 1
        assert json.loads(input_attribute(global_spans))[0]["parts"][1]["uri"] == uri
        assert trace[0]["content"][1] == {"type": "image", "image_url": uri}
        assert not (traces_dir / "media").exists()
    finally:
        memory.rm(url.removeprefix("memory://").split("/")[0], recursive=True)


class RefusingFileSystem(MemoryFileSystem):
    """A filesystem that lists nothing and refuses every write (a bucket the credentials may not write to)."""

    protocol = "spanfold-refusing"

    def pipe_file(self, path: str, value: bytes, *args: Any, **kwargs: Any) -> None:
        raise PermissionError(f"{path}: write refused")


@pytest.mark.parametrize("where", ["fsspec", "local"])
def test_a_store_that_fails_keeps_the_blob_inline_and_counts_the_fault(
    traces_dir: Path, global_spans: Any, _global_provider: Any, where: str
) -> None:
    if where == "fsspec":
        fsspec.register_implementation(RefusingFileSystem.protocol, RefusingFileSystem, clobber=True)
        option: Any = f"{RefusingFileSystem.protocol}://bucket/prefix"
    else:  # a file where the media directory would be: not even root makes a directory through it
        traces_dir.mkdir()
        (traces_dir / "media").write_text("not a directory")
        option = True
    with traced_into(traces_dir, media=option) as traced, MockLLMServer() as server:
        answer = ask_openai(server, openai_messages(BIG_PNG_B64))
        ask_openai(server, openai_messages(BIG_PNG_B64))  # the store rests: inline at once, no second attempt
        traces = traced.traces()
    assert answer == f"You said: {QUESTION}"
    for span in model_spans(global_spans):
        part = json.loads(span.attributes["gen_ai.input.messages"])[0]["parts"][1]
        assert part == {"type": "blob", "modality": "image", "mime_type": "image/png", "content": BIG_PNG_B64}
    images = [e["content"][1]["image_url"] for t in traces for e in t if e["role"] == "user"]
    assert images and set(images) == {f"data:image/png;base64,{BIG_PNG_B64}"}
    stats = counters.snapshot()
    assert stats.get("fault.media.upload") == 1
    assert stats.get("media.inline_resting", 0) >= 1
    assert "media.stored" not in stats
    assert spanfold.stats().get("traces_written", 0) >= 1
