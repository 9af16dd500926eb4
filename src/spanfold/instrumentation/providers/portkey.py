"""Portkey (``portkey-ai``): its calls traced as the provider they reach.

The Portkey SDK ships its own copy of the openai SDK (``portkey_ai._vendor.openai``), which the openai patch never
sees; ``Portkey(...).chat.completions.create`` and ``.responses.create`` call that copy (``with_raw_response`` for a
complete reply), its client pointed at the Portkey gateway with ``x-portkey-*`` headers. Its requests and replies are
OpenAI's shapes, so this is the openai instrumentation's own table over the vendored package, with two differences:
the vendored package's types classify the results, and the span's ``gen_ai.provider.name`` is the provider the
gateway routes the call to (the client's ``provider``: its ``x-portkey-provider`` header; else a model named
``@provider/model``), priced as that provider; a call whose provider only a config or a virtual key knows is
``portkey``. Supported: ``portkey-ai`` >= 2.3, < 3.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from spanfold import semconv
from spanfold.instrumentation.providers.openai import patches as openai
from spanfold.instrumentation.toolkit.calls import base_url_server, stainless_result
from spanfold.instrumentation.toolkit.invocation import Endpoint
from spanfold.instrumentation.toolkit.patching import TableInstrumentor

SUPPORTED: Final = "portkey-ai >= 2.3, < 3"
VENDORED: Final = "portkey_ai._vendor.openai"
#: Where the gateway is told the provider (the client's ``provider``).
PROVIDER_HEADER: Final = "x-portkey-provider"
#: ``gen_ai.provider.name`` of a call whose provider the client does not say.
PORTKEY: Final = "portkey"

#: Portkey's provider slugs -> ``gen_ai.provider.name`` (others: the slug as it is).
PROVIDERS: Final = {
    "openai": semconv.PROVIDER_OPENAI,
    "azure-openai": "azure.ai.openai",
    "anthropic": semconv.PROVIDER_ANTHROPIC,
    "google": semconv.PROVIDER_GCP_GEMINI,
    "vertex-ai": semconv.PROVIDER_GCP_VERTEX_AI,
    "bedrock": semconv.PROVIDER_AWS_BEDROCK,
    "groq": semconv.PROVIDER_GROQ,
    "mistral-ai": semconv.PROVIDER_MISTRAL,
    "cohere": semconv.PROVIDER_COHERE,
    "ollama": semconv.PROVIDER_OLLAMA,
    "deepseek": "deepseek",
    "x-ai": "x_ai",
    "perplexity-ai": "perplexity",
    "together-ai": "together",
    "fireworks-ai": "fireworks",
    "openrouter": "openrouter",
}


def provider_of(slug: Any) -> str | None:
    """The provider a Portkey slug names (``openai``, ``@openai``); None for none."""
    if not isinstance(slug, str) or not slug.strip("@"):
        return None
    name = slug.strip().lstrip("@").lower()
    return PROVIDERS.get(name, name)


def server(instance: Any) -> Endpoint | None:
    """Where the vendored client sends (the gateway), and the provider its ``x-portkey-provider`` names."""
    endpoint = base_url_server(instance)
    headers = getattr(instance._client, "_custom_headers", None)
    provider = provider_of(headers.get(PROVIDER_HEADER)) if isinstance(headers, Mapping) else None
    if endpoint is None:
        return Endpoint(provider=provider) if provider is not None else None
    return Endpoint(endpoint.address, endpoint.port, provider)


def _by_model(request: Any) -> Any:
    """The openai request reader; the provider a model named ``@provider/model`` names, else ``portkey`` (the
    client's ``x-portkey-provider``, read with the server, wins over both)."""

    def read(kwargs: dict[str, Any]) -> Any:
        invocation = request(kwargs)
        model = kwargs.get("model")
        named = model.split("/", 1)[0] if isinstance(model, str) and model.startswith("@") and "/" in model else None
        invocation.provider = provider_of(named) or PORTKEY
        return invocation

    return read


CLASSIFY: Final = stainless_result(VENDORED, streamed_raw=True)
CHAT: Final = dataclasses.replace(
    openai.CHAT, kind="portkey.chat", classify=CLASSIFY, server=server, request=_by_model(openai.CHAT.request)
)
RESPONSES: Final = dataclasses.replace(
    openai.RESPONSES,
    kind="portkey.responses",
    classify=CLASSIFY,
    server=server,
    request=_by_model(openai.RESPONSES.request),
)

PATCHES: Final = openai.table(VENDORED, CHAT, RESPONSES)


class PortkeyInstrumentor(TableInstrumentor, library="portkey_ai", supported=SUPPORTED, table=PATCHES):
    """Portkey's calls through its vendored openai SDK, as the provider the gateway reaches."""
