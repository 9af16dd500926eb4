"""The other providers' SDKs (groq, mistralai, ollama, cohere, google-genai, boto3's Bedrock Runtime, litellm) on an
in-process transport that answers with an :class:`~.conftest.Answer`, and the user-visible outcome of any of their
calls (returned object, every chunk or event, a body's bytes, or the exception), for the differential never-break
suite (:mod:`.test_never_break_providers`).

The httpx-based SDKs get an ``httpx.MockTransport`` (httpx2 for openai, under litellm); botocore gets a
``before-send`` handler that answers with an ``AWSResponse`` over the answer's pieces (a raw body that breaks where
the answer says).
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable, Iterator
from typing import Any

import httpx
from pydantic import BaseModel

from .conftest import Answer, Pieces, Script, openai_client


class _Body(Pieces, httpx.SyncByteStream, httpx.AsyncByteStream):
    pass


class HttpxScript:
    """An httpx transport handler answering every request with the same answer; remembers the request bodies."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.bodies: list[bytes] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(request.read())
        answer = self.answer
        if answer.raise_now is not None:
            raise answer.raise_now
        return httpx.Response(
            answer.status,
            headers={"content-type": answer.content_type, "x-should-retry": "false"},
            stream=_Body(answer.pieces, answer.fail),
            request=request,
        )

    def sync(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self))

    def async_(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self))


# --- clients ---------------------------------------------------------------------------------------------------


def groq_client(script: HttpxScript, is_async: bool) -> Any:
    import groq

    cls = groq.AsyncGroq if is_async else groq.Groq
    http = script.async_() if is_async else script.sync()
    return cls(api_key="gsk-reliability", base_url="http://mock.test", max_retries=0, http_client=http)  # type: ignore[arg-type]


def mistral_client(script: HttpxScript, is_async: bool) -> Any:
    from mistralai.client import Mistral

    return Mistral(
        api_key="mistral-reliability",
        server_url="http://mock.test",
        client=script.sync(),
        async_client=script.async_(),
    )


def ollama_client(script: HttpxScript, is_async: bool) -> Any:
    import ollama

    transport = httpx.MockTransport(script)
    return (ollama.AsyncClient if is_async else ollama.Client)(host="http://mock.test", transport=transport)


def cohere_client(script: HttpxScript, is_async: bool) -> Any:
    import cohere

    options: dict[str, Any] = {"api_key": "co-reliability", "base_url": "http://mock.test", "max_retries": 0}
    if is_async:
        return cohere.AsyncClientV2(**options, httpx_client=script.async_())
    return cohere.ClientV2(**options, httpx_client=script.sync())


def gemini_client(script: HttpxScript, is_async: bool) -> Any:
    from google import genai
    from google.genai import types

    options = types.HttpOptions(
        base_url="http://mock.test", httpx_client=script.sync(), httpx_async_client=script.async_()
    )
    return genai.Client(api_key="gemini-reliability", http_options=options)


class _RawBody:
    """What botocore reads a response from (``urllib3``'s response, as far as botocore uses it)."""

    def __init__(self, pieces: tuple[bytes, ...], fail: BaseException | None) -> None:
        self._data = bytearray(b"".join(pieces))
        self._fail = fail

    def read(self, amt: int | None = None) -> bytes:
        if not self._data and self._fail is not None:
            fail, self._fail = self._fail, None
            raise fail
        size = len(self._data) if amt is None else amt
        chunk = bytes(self._data[:size])
        del self._data[:size]
        return chunk

    def stream(self, amt: int = 1024, decode_content: bool | None = None) -> Iterator[bytes]:
        while chunk := self.read(amt):
            yield chunk

    def close(self) -> None:
        pass


class BedrockScript:
    """A ``before-send`` handler answering every Bedrock Runtime request with the same answer."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.bodies: list[bytes] = []

    def __call__(self, request: Any, **_: Any) -> Any:
        from botocore.awsrequest import AWSResponse

        body = request.body
        self.bodies.append(body if isinstance(body, bytes) else str(body).encode())
        answer = self.answer
        if answer.raise_now is not None:
            raise answer.raise_now
        headers = {"content-type": answer.content_type, "x-amzn-requestid": "req-reliability"}
        if answer.status >= 400:
            headers["x-amzn-errortype"] = "ValidationException"
        raw = _RawBody(answer.pieces, answer.fail)
        return AWSResponse(request.url, answer.status, headers, raw)


def bedrock_client(script: BedrockScript, is_async: bool) -> Any:
    import boto3
    from botocore.config import Config

    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="AKIDRELIABILITY",
        aws_secret_access_key="reliability-secret",
        config=Config(retries={"total_max_attempts": 1}),
    )
    client.meta.events.register("before-send.bedrock-runtime.*", script)
    return client


def litellm_client(script: Script, is_async: bool) -> Any:
    """litellm's keywords routing a call to the openai SDK over the httpx2 transport."""
    return {"client": openai_client(script, is_async), "api_key": "sk-litellm-reliability", "num_retries": 0}


# --- outcomes --------------------------------------------------------------------------------------------------


def _error(exc: BaseException) -> Any:
    return ("raised", type(exc).__qualname__, str(exc))


def _model(value: Any) -> Any:
    return (value.__class__.__qualname__, repr(value))


def _streamy(value: Any) -> bool:
    return not isinstance(value, (BaseModel, dict, list, tuple, str, bytes)) and hasattr(value, "__iter__")


def _closer(value: Any, *names: str) -> Any:
    """The first of ``names`` the SDK's object has, looked up on ``value`` (a proxy of it, or the object itself)."""
    inner = getattr(value, "__wrapped__", value)
    for name in names:
        if callable(getattr(inner, name, None)):
            return getattr(value, name)
    return None


def _close(value: Any) -> None:
    close = _closer(value, "close")
    if close is not None:
        close()


def _is_raw(value: Any) -> bool:
    return hasattr(value, "http_response") and callable(getattr(value, "parse", None))


def describe(result: Any) -> Any:
    """A result in comparable form: a raw response parsed, a dict (Bedrock's) by key, a body read whole, a stream
    read to its end."""
    if _is_raw(result):
        try:
            parsed = result.parse()
        except Exception as exc:
            return ("raw", result.http_response.status_code, _error(exc))
        return ("raw", result.http_response.status_code, describe(parsed))
    if isinstance(result, dict):
        return {key: describe(value) for key, value in result.items()}
    if callable(getattr(result, "read", None)) and hasattr(result, "_raw_stream"):  # botocore's StreamingBody
        try:
            return ("body", result.read())
        except Exception as exc:
            return ("body", _error(exc))
    if _streamy(result):
        items: list[Any] = []
        try:
            for item in result:
                items.append(_model(item))
        except Exception as exc:
            items.append(_error(exc))
        finally:
            _close(result)
        return ("stream", items)
    return _model(result)


async def adescribe(result: Any) -> Any:
    if _is_raw(result):
        try:
            parsed = result.parse()
            if inspect.isawaitable(parsed):
                parsed = await parsed
        except Exception as exc:
            return ("raw", result.http_response.status_code, _error(exc))
        return ("raw", result.http_response.status_code, await adescribe(parsed))
    if hasattr(result, "__aiter__") and not isinstance(result, BaseModel):
        items: list[Any] = []
        try:
            async for item in result:
                items.append(_model(item))
        except Exception as exc:
            items.append(_error(exc))
        finally:
            closer = _closer(result, "aclose", "close")
            if closer is not None:
                done = closer()
                if inspect.isawaitable(done):
                    await done
        return ("stream", items)
    return describe(result)


def outcome(call: Callable[[], Any]) -> tuple[Any, Any]:
    try:
        result = call()
    except Exception as exc:
        return _error(exc), exc
    return describe(result), result


def aoutcome(call: Callable[[], Any]) -> tuple[Any, Any]:
    async def run() -> tuple[Any, Any]:
        try:
            result = call()
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            return _error(exc), exc
        return await adescribe(result), result

    return asyncio.run(run())


_LITELLM_MADE = re.compile(r"chatcmpl-[0-9a-f]{8}-[0-9a-f-]{27}|(?<=created=)[0-9]+|(?<='created': )[0-9]+")


def litellm_normalized(value: Any) -> Any:
    """An outcome without what litellm makes anew for each call (a response id, the time)."""
    if isinstance(value, str):
        return _LITELLM_MADE.sub("*", value)
    if isinstance(value, (tuple, list)):
        return type(value)(litellm_normalized(item) for item in value)
    if isinstance(value, dict):
        return {key: litellm_normalized(item) for key, item in value.items()}
    return value
