"""An OpenAI chat completion that answers with audio (``modalities=["text", "audio"]``): the answer's text is its
``transcript``, whole in the message and in pieces in stream deltas (``delta.audio``), as the API sends them."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from spanfold.testing import MockLLMServer, Reply

from ..conftest import Traced

TRANSCRIPT = "Yes, golden retrievers are known to be very friendly."
AUDIO = {"voice": "alloy", "format": "wav"}
MESSAGES = [{"role": "user", "content": "Are golden retrievers good family dogs?"}]


def completion() -> str:
    return json.dumps(
        {
            "id": "chatcmpl-audio-1",
            "object": "chat.completion",
            "created": 1729018500,
            "model": "gpt-4o-audio-preview-2024-10-01",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "refusal": None,
                        "audio": {
                            "id": "audio_6710a5",
                            "data": "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=",
                            "expires_at": 1729022105,
                            "transcript": TRANSCRIPT,
                        },
                    },
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 17, "completion_tokens": 173, "total_tokens": 190},
        }
    )


def stream() -> str:
    """The chunks as the API streams an audio answer: the audio's id, transcript pieces, audio data, then the end."""
    deltas: list[dict[str, Any]] = [
        {"role": "assistant", "content": None},
        {"audio": {"id": "audio_6710a5", "transcript": "Yes, golden retrievers "}},
        {"audio": {"transcript": "are known to be very friendly."}},
        {"audio": {"data": "UklGRiQAAABXQVZF", "expires_at": 1729022105}},
    ]
    chunks = [
        {
            "id": "chatcmpl-audio-2",
            "object": "chat.completion.chunk",
            "created": 1729018500,
            "model": "gpt-4o-audio-preview-2024-10-01",
            "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
        }
        for delta in deltas
    ]
    chunks.append({**chunks[0], "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


def _transcript(message: Any) -> str:
    """A message's transcript, or a delta's piece of it: a typed field in newer SDKs, a pydantic extra in older."""
    audio = getattr(message, "audio", None) or (message.model_extra or {}).get("audio")
    piece = audio.get("transcript") if isinstance(audio, dict) else getattr(audio, "transcript", None)
    return piece or ""


@pytest.mark.parametrize("streamed", [False, True])
def test_an_audio_answer_is_its_transcript(traced: Traced, streamed: bool) -> None:
    with MockLLMServer() as server:
        if streamed:
            server.script(Reply.raw(200, stream(), "text/event-stream"))
        else:
            server.script(Reply.raw(200, completion()))
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        request: dict[str, Any] = {  # the audio options as extra_body: SDKs before 1.52 do not declare them
            "model": "gpt-4o-audio-preview",
            "messages": MESSAGES,
            "extra_body": {"modalities": ["text", "audio"], "audio": AUDIO},
        }
        if streamed:
            got = "".join(
                _transcript(c.choices[0].delta) for c in client.chat.completions.create(**request, stream=True)
            )
        else:
            got = _transcript(client.chat.completions.create(**request).choices[0].message)
    assert got == TRANSCRIPT
    (events,) = traced.traces()
    assert events == [{"role": "user", "content": MESSAGES[0]["content"]}, {"role": "assistant", "content": TRANSCRIPT}]
