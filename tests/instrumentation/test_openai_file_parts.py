"""OpenAI chat ``file`` content parts: a document sent inline (``file_data``, a data URL) is a blob part with its
media type; one sent by id (``file_id``) a file part. Both keep the model's input, content capture on."""

from __future__ import annotations

from typing import Any

import openai

from spanfold.testing import MockLLMServer, Reply

PDF = "JVBERi0xLjQKJcOkw7zDtsOfCjIgMCBvYmoKPDwvTGVuZ3RoIDMgMCBSPj4Kc3RyZWFtCg=="


def test_file_parts_keep_the_document(spans: Any, mock: MockLLMServer) -> None:
    mock.script(Reply.text("It is an invoice."))
    client = openai.OpenAI(api_key="sk-test", base_url=mock.base_url, max_retries=0)
    content: list[Any] = [
        {"type": "text", "text": "What are these?"},
        {"type": "file", "file": {"filename": "invoice.pdf", "file_data": f"data:application/pdf;base64,{PDF}"}},
        {"type": "file", "file": {"file_id": "file-abc123"}},
    ]
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": content}])
    (message,) = spans.attrs()["gen_ai.input.messages"]
    assert message["parts"] == [
        {"type": "text", "content": "What are these?"},
        {"type": "blob", "modality": "document", "mime_type": "application/pdf", "content": PDF},
        {"type": "file", "modality": "document", "file_id": "file-abc123"},
    ]
