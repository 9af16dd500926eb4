"""What a run cost (issue 33): each model call priced on the worker from genai-prices' table, on its span where
spanfold writes spans and in the metadata (each step's, the run's by kind of token and by model); cached tokens priced
as cache reads (OpenAI's and Anthropic's ways of counting them), reasoning tokens; a model no price knows counted,
never guessed; the user's prices; a cost the span states kept; content capture off.

Every run is real: a provider's client library over HTTP to the mock server, the weather agent of
``spanfold.testing`` (or one reply shaped as the API sends it), traced by ``spanfold.init()``. Every expected amount
is genai-prices' own (``calc_price``), never a price written here, except the user's own prices."""

from __future__ import annotations

import dataclasses
import itertools
import json
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import spanfold
from spanfold.config import ConfigError
from spanfold.testing import MockLLMServer, MockRequest, Reply, Usage, run_agent, weather_agent
from spanfold.testing.agents import PROVIDERS

from .conftest import assistant, user

genai_prices = pytest.importorskip("genai_prices")

#: ``gen_ai.provider.name`` of each provider's calls (litellm: the provider it routed to).
PROVIDER_NAMES = {
    "openai": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "bedrock": "aws.bedrock",
    "groq": "groq",
    "mistral": "mistral_ai",
    "ollama": "ollama",
    "cohere": "cohere",
    "litellm": "openai",
}
#: The usage the mock server reports for the weather agent's three calls.
KNOWN = [(1200, 40), (1350, 25), (1500, 60)]


def known_usage(replies: Callable[[MockRequest], Reply] = weather_agent) -> Callable[[MockRequest], Reply]:
    """The weather agent, each of its replies reporting the next of :data:`KNOWN`."""
    calls = itertools.count()

    def respond(request: MockRequest) -> Reply:
        tokens_in, tokens_out = KNOWN[next(calls) % len(KNOWN)]
        return dataclasses.replace(replies(request), usage=Usage(tokens_in, tokens_out))

    return respond


@contextmanager
def traced(directory: Path, **options: Any) -> Iterator[Path]:
    spanfold.init(output=str(directory), **options)
    try:
        yield directory
    finally:
        spanfold.shutdown()


def metas(directory: Path) -> list[dict[str, Any]]:
    assert spanfold.flush(timeout=30)
    lines = (directory / "traces.meta.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["metadata"] for line in lines]


def table_price(step: dict[str, Any], provider: str, **usage: int) -> Decimal:
    """genai-prices' price of a step's usage, for its model at ``provider`` at the time of the call."""
    when = datetime.fromisoformat(step["start"].replace("Z", "+00:00"))
    counted = genai_prices.Usage(**usage)
    total: Decimal = genai_prices.calc_price(
        counted, step["model"], provider_id=provider, genai_request_timestamp=when
    ).total_price
    return total


def models(meta: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in meta["steps"] if s["kind"] == "model"]


def run_weather(provider: str, directory: Path, replies: Callable[[MockRequest], Reply], **options: Any) -> None:
    api = PROVIDERS[provider]
    with traced(directory, **options), MockLLMServer(replies) as server:
        with spanfold.agent("weather-bot"):
            api.run(api.client(server))
        assert spanfold.flush(timeout=30)


# --- every provider's weather agent -----------------------------------------------------------------------------


@pytest.mark.parametrize("provider", [p for p in PROVIDERS if p != "ollama"])
def test_each_call_and_the_run_cost_what_genai_prices_says(tmp_path: Path, provider: str) -> None:
    run_weather(provider, tmp_path, known_usage())
    (meta,) = metas(tmp_path)
    steps = models(meta)
    assert [(s["usage"]["input_tokens"], s["usage"]["output_tokens"]) for s in steps] == KNOWN
    expected = [
        table_price(s, PROVIDER_NAMES[provider], input_tokens=i, output_tokens=o)
        for s, (i, o) in zip(steps, KNOWN, strict=True)
    ]
    for step, price in zip(steps, expected, strict=True):
        cost = step["cost"]
        if provider == "litellm" and cost["priced_by"] == "reported":  # LiteLLM's own response_cost, its own table
            assert cost["amount"] == pytest.approx(float(price), rel=1e-6)
            continue
        assert cost == {
            "amount": float(price),
            "currency": "USD",
            "source": "local",
            "priced_by": "genai-prices",
            "by_kind": cost["by_kind"],
        }
        assert sorted(cost["by_kind"]) == ["input", "output"]
        assert sum(cost["by_kind"].values()) == pytest.approx(cost["amount"], rel=1e-12)
    run = meta["cost"]
    total = sum(expected, Decimal(0))
    assert run["total"] == pytest.approx(float(total), rel=1e-12) and run["currency"] == "USD"
    assert run["by_model"] == {steps[0]["model"]: run["total"]}
    assert "unpriced_steps" not in run
    assert meta["cost_usd"] == run["total"]  # what AgentV reads


@pytest.mark.parametrize("model", ["llama3.2", "deepseek-r1:8b"])
def test_a_model_no_price_knows_has_no_cost_and_is_counted(tmp_path: Path, model: str) -> None:
    """A model Ollama runs on the user's own machine: genai-prices has no price of it at that provider, and none is
    guessed (not even DeepSeek's API price for ``deepseek-r1:8b``, a name genai-prices alone would match)."""
    api = dataclasses.replace(PROVIDERS["ollama"], model=model)
    with traced(tmp_path), MockLLMServer(known_usage()) as server:
        with spanfold.agent("weather-bot"):
            run_agent(api, api.client(server))
        assert spanfold.flush(timeout=30)
        assert spanfold.stats().get("cost.unknown_model") == 3
    (meta,) = metas(tmp_path)
    assert [s["usage"]["input_tokens"] for s in models(meta)] == [i for i, _ in KNOWN]
    assert all("cost" not in s for s in meta["steps"])
    assert "cost" not in meta and "cost_usd" not in meta


def test_a_run_with_an_unknown_model_among_known_ones_says_what_it_left_out(tmp_path: Path) -> None:
    models_asked = iter(["gpt-4o-mini", "our-own-finetune", "gpt-4o-mini"])
    api = PROVIDERS["openai"]
    with traced(tmp_path), MockLLMServer(known_usage()) as server:
        client = api.client(server)
        create = client.chat.completions.create

        def create_with(**request: Any) -> Any:
            return create(**{**request, "model": next(models_asked)})

        client.chat.completions.create = create_with
        with spanfold.agent("weather-bot"):
            run_agent("openai", client)
        assert spanfold.flush(timeout=30)
        assert spanfold.stats().get("cost.unknown_model") == 1
    (meta,) = metas(tmp_path)
    first, unknown, last = models(meta)
    assert unknown["model"] == "our-own-finetune" and "cost" not in unknown
    priced = [
        table_price(s, "openai", input_tokens=KNOWN[n][0], output_tokens=KNOWN[n][1])
        for n, s in ((0, first), (2, last))
    ]
    assert meta["cost"]["total"] == pytest.approx(float(sum(priced, Decimal(0))), rel=1e-12)
    assert meta["cost"]["unpriced_steps"] == 1
    assert "cost_usd" not in meta  # a total that leaves a call out is no budget's answer


# --- cached and reasoning tokens -----------------------------------------------------------------------------------


def one_reply(provider: str, body: dict[str, Any], directory: Path) -> dict[str, Any]:
    """The metadata of one call of ``provider``'s API answered by ``body`` (its own JSON)."""
    api = PROVIDERS[provider]
    with traced(directory), MockLLMServer(lambda _: Reply.shaped(body)) as server:
        api.run(api.client(server), "Is it sunny?")
        assert spanfold.flush(timeout=30)
    (meta,) = metas(directory)
    return meta


def test_openai_cached_tokens_are_priced_as_cache_reads(tmp_path: Path) -> None:
    """OpenAI counts the cached tokens inside ``prompt_tokens`` (``prompt_tokens_details.cached_tokens``)."""
    usage = {"prompt_tokens": 2000, "completion_tokens": 50, "total_tokens": 2050}
    usage["prompt_tokens_details"] = {"cached_tokens": 1500}  # type: ignore[assignment]
    body = {
        "id": "chatcmpl-cached",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Sunny."}}],
        "usage": usage,
    }
    meta = one_reply("openai", body, tmp_path)
    (step,) = models(meta)
    assert step["usage"] == {"input_tokens": 2000, "output_tokens": 50, "cache_read_tokens": 1500}
    price = table_price(step, "openai", input_tokens=2000, cache_read_tokens=1500, output_tokens=50)
    uncached = table_price(step, "openai", input_tokens=2000, output_tokens=50)
    assert step["cost"]["amount"] == float(price) < float(uncached)  # cached tokens cost less, never full price
    by_kind = step["cost"]["by_kind"]
    assert by_kind["cache_read"] == float(table_price(step, "openai", input_tokens=1500, cache_read_tokens=1500))
    assert by_kind["input"] == float(table_price(step, "openai", input_tokens=500))
    assert meta["cost"]["by_kind"] == by_kind and meta["cost_usd"] == float(price)


def test_anthropic_cache_reads_and_writes_are_priced_apart(tmp_path: Path) -> None:
    """Anthropic counts the cache reads and writes beside ``input_tokens``, not inside it."""
    usage = {"input_tokens": 500, "cache_read_input_tokens": 1500, "cache_creation_input_tokens": 200}
    body = {
        "id": "msg_cached",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5",
        "content": [{"type": "text", "text": "Sunny."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 50},
    }
    meta = one_reply("anthropic", body, tmp_path)
    (step,) = models(meta)
    assert step["usage"] == {
        "input_tokens": 2200,
        "output_tokens": 50,
        "cache_read_tokens": 1500,
        "cache_write_tokens": 200,
    }
    tokens = {"input_tokens": 2200, "cache_read_tokens": 1500, "cache_write_tokens": 200, "output_tokens": 50}
    price = table_price(step, "anthropic", **tokens)
    assert step["cost"]["amount"] == float(price)
    assert price < table_price(step, "anthropic", input_tokens=2200, output_tokens=50)
    by_kind = step["cost"]["by_kind"]
    assert sorted(by_kind) == ["cache_read", "cache_write", "input", "output"]
    assert by_kind["cache_write"] == float(table_price(step, "anthropic", input_tokens=200, cache_write_tokens=200))
    assert sum(by_kind.values()) == pytest.approx(float(price), rel=1e-12)


def test_gemini_reasoning_and_cached_tokens(tmp_path: Path) -> None:
    """Gemini counts thoughts apart from the answer (spanfold adds them to the output) and cached content inside the
    prompt."""
    body = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "Sunny."}]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": 1000,
            "cachedContentTokenCount": 400,
            "candidatesTokenCount": 30,
            "thoughtsTokenCount": 70,
            "totalTokenCount": 1100,
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-thinking",
    }
    meta = one_reply("gemini", body, tmp_path)
    (step,) = models(meta)
    assert step["usage"] == {
        "input_tokens": 1000,
        "output_tokens": 100,
        "cache_read_tokens": 400,
        "reasoning_tokens": 70,
    }
    tokens = {"input_tokens": 1000, "cache_read_tokens": 400, "output_tokens": 100, "output_reasoning_tokens": 70}
    price = table_price(step, "gcp.gemini", **tokens)
    assert step["cost"]["amount"] == float(price)
    by_kind = step["cost"]["by_kind"]
    assert sorted(by_kind) == ["cache_read", "input", "output", "reasoning"]
    assert by_kind["reasoning"] == float(table_price(step, "gcp.gemini", output_tokens=70, output_reasoning_tokens=70))
    assert by_kind["output"] == float(table_price(step, "gcp.gemini", output_tokens=30))


# --- the user's prices ---------------------------------------------------------------------------------------------


def test_the_users_prices_file_prices_a_model_the_table_does_not_know_and_wins_over_the_table(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(
        "# our own machine, and our negotiated rate\n"
        "- model: llama3.2\n"
        "  provider: ollama\n"
        "  input_mtok: 0.5\n"
        "  output_mtok: 1.5\n"
        "- model: [gpt-4o-mini]\n"
        "  input_mtok: 0.1\n"
        "  output_mtok: 0.4\n"
    )
    run_weather("ollama", tmp_path / "ollama", known_usage(), prices=str(prices))
    run_weather("openai", tmp_path / "openai", known_usage(), prices=str(prices))
    for name, (rate_in, rate_out) in (("ollama", ("0.5", "1.5")), ("openai", ("0.1", "0.4"))):
        (meta,) = metas(tmp_path / name)
        expected = [
            (Decimal(i) * Decimal(rate_in) + Decimal(o) * Decimal(rate_out)) / 1_000_000 for i, o in KNOWN
        ]  # the user's own prices: per million tokens
        assert [s["cost"]["amount"] for s in models(meta)] == [float(e) for e in expected]
        assert {s["cost"]["priced_by"] for s in models(meta)} == {"override"}
        assert meta["cost_usd"] == pytest.approx(float(sum(expected, Decimal(0))), rel=1e-12)
    assert spanfold.stats().get("cost.unknown_model") is None


def test_prices_given_in_code_and_a_provider_they_do_not_name(tmp_path: Path) -> None:
    """An entry naming a provider prices that provider's calls only: litellm routes gpt-4o-mini to openai."""
    entry = {"model": "gpt-4o-mini", "provider": "azure.ai.openai", "input_mtok": 9, "output_mtok": 9}
    run_weather("openai", tmp_path, known_usage(), prices=[entry])
    (meta,) = metas(tmp_path)
    assert {s["cost"]["priced_by"] for s in models(meta)} == {"genai-prices"}


OPENAI_RATE = {"model": "GPT-4o-mini", "provider": "OpenAI", "input_mtok": 0.1, "output_mtok": 0.4}
ANY_RATE = {"model": "gpt-4o-mini", "input_mtok": 3, "output_mtok": 5}
OLLAMA_RATE = {"model": "gpt-4o-mini", "provider": "ollama", "input_mtok": 7, "output_mtok": 9}


@pytest.mark.parametrize(
    ("entries", "rates"),
    [
        ([ANY_RATE, OPENAI_RATE], ("0.1", "0.4")),  # the entry naming the call's provider wins, listed after ...
        ([OPENAI_RATE, ANY_RATE], ("0.1", "0.4")),  # ... or before the one naming none
        ([OLLAMA_RATE, ANY_RATE], ("3", "5")),  # an entry naming another provider never prices the call
        ([ANY_RATE, OLLAMA_RATE], ("3", "5")),
    ],
    ids=["any-then-openai", "openai-then-any", "ollama-then-any", "any-then-ollama"],
)
def test_an_entry_naming_the_provider_wins_whatever_the_order(
    tmp_path: Path, entries: list[dict[str, Any]], rates: tuple[str, str]
) -> None:
    """Two entries price the model: the one naming the call's provider (``openai``; names matched without regard to
    case) prices it, listed first or last; one naming another provider never does, and one naming none then does."""
    run_weather("openai", tmp_path, known_usage(), prices=entries)
    (meta,) = metas(tmp_path)
    rate_in, rate_out = map(Decimal, rates)
    expected = [(Decimal(i) * rate_in + Decimal(o) * rate_out) / 1_000_000 for i, o in KNOWN]
    assert [s["cost"]["amount"] for s in models(meta)] == [float(e) for e in expected]
    assert {s["cost"]["priced_by"] for s in models(meta)} == {"override"}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("- model: llama3.2\n  input_mtok: -1\n", "prices.yaml:1: input_mtok: expected a number of US dollars"),
        ("- model: a\n  input_mtok: 1\n- model: b\n  inptu_mtok: 1\n", "prices.yaml:3: unknown key 'inptu_mtok'"),
        ("- model: a\n", "prices.yaml:1: no price"),
        ("model: a\n", "prices.yaml:1: expected a list of prices"),
        ("- [unclosed\n", "prices.yaml:2: not YAML or JSON"),
    ],
)
def test_a_prices_file_that_is_wrong_is_refused_at_init_saying_where(tmp_path: Path, text: str, problem: str) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(text)
    with pytest.raises(ConfigError, match="^prices: .*" + problem.replace("(", r"\(").replace("[", r"\[")):
        spanfold.init(output=str(tmp_path / "out"), prices=str(prices))
    assert not (tmp_path / "out").exists()


def test_the_prices_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps([{"model": "llama3.2", "input_mtok": 0, "output_mtok": 0}]))
    monkeypatch.setenv("SPANFOLD_PRICES", str(prices))
    run_weather("ollama", tmp_path / "out", known_usage())
    (meta,) = metas(tmp_path / "out")
    assert meta["cost"]["total"] == 0.0 and meta["cost_usd"] == 0.0  # free, and known to be
    monkeypatch.setenv("SPANFOLD_PRICES", str(tmp_path / "missing.yaml"))
    with pytest.raises(ConfigError, match=r"SPANFOLD_PRICES: prices file .*missing\.yaml"):
        spanfold.init(output=str(tmp_path / "out2"))


# --- where the cost is written -------------------------------------------------------------------------------------


def test_the_spans_spanfold_writes_carry_each_calls_cost(tmp_path: Path) -> None:
    """``format="otlp-json"``: each model span gets ``gen_ai.usage.cost.*``; folded again, the run costs the same."""
    run_weather("openai", tmp_path, known_usage(), format="otlp-json")
    (line,) = (tmp_path / "traces.otlp.jsonl").read_text(encoding="utf-8").splitlines()
    spans = [s for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    costs = []
    for span in spans:
        attrs = {a["key"]: a["value"] for a in span.get("attributes", ())}
        if attrs.get("gen_ai.operation.name") != {"stringValue": "chat"}:
            assert "gen_ai.usage.cost.amount" not in attrs
            continue
        assert attrs["gen_ai.usage.cost.currency"] == {"stringValue": "USD"}
        assert attrs["gen_ai.usage.cost.source"] == {"stringValue": "local"}
        costs.append(attrs["gen_ai.usage.cost.amount"]["doubleValue"])
    assert len(costs) == 3
    from spanfold.exporter.pipeline.span_files import read_any

    (record,) = [r for r in read_any(tmp_path / "traces.otlp.jsonl") if r.trace is not None]
    assert record.trace is not None
    refolded = record.trace.meta
    assert [s.cost.amount for s in refolded.steps if s.cost is not None] == costs
    assert refolded.extra["cost_usd"] == pytest.approx(sum(costs), rel=1e-12)


def test_capture_off_still_records_the_cost(tmp_path: Path) -> None:
    """Cost is not content: with content capture off every call is priced the same."""
    run_weather("anthropic", tmp_path / "on", known_usage())
    run_weather("anthropic", tmp_path / "off", known_usage(), capture_content=False)
    (on,), (off,) = metas(tmp_path / "on"), metas(tmp_path / "off")
    assert [s["cost"]["amount"] for s in models(off)] == [s["cost"]["amount"] for s in models(on)]
    assert off["cost"] == on["cost"] and off["cost_usd"] == on["cost_usd"] > 0


def test_pricing_reaches_no_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """genai-prices' bundled table only: while a run is priced, no connection goes anywhere but the mock server."""
    connected: list[Any] = []
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        connected.append(address)
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    run_weather("openai", tmp_path, known_usage())
    (meta,) = metas(tmp_path)
    assert meta["cost_usd"] > 0
    assert connected and all(address[0] in ("127.0.0.1", "::1", "localhost") for address in connected), connected
    from genai_prices import data_snapshot

    assert data_snapshot.get_snapshot().from_auto_update is False


# --- a cost the span states ----------------------------------------------------------------------------------------


def test_litellms_own_response_cost_is_the_calls_cost(tmp_path: Path) -> None:
    api = PROVIDERS["litellm"]
    reported: list[float] = []
    with traced(tmp_path), MockLLMServer(known_usage()) as server:
        import litellm

        completion = litellm.completion

        def completion_noting_the_cost(*args: Any, **kwargs: Any) -> Any:
            response = completion(*args, **kwargs)
            reported.append(response._hidden_params["response_cost"])
            return response

        litellm.completion = completion_noting_the_cost
        try:
            with spanfold.agent("weather-bot"):
                api.run(api.client(server))
        finally:
            litellm.completion = completion
        assert spanfold.flush(timeout=30)
    (meta,) = metas(tmp_path)
    assert [s["cost"]["priced_by"] for s in models(meta)] == ["reported"] * 3
    assert [s["cost"]["amount"] for s in models(meta)] == reported


def test_a_cost_the_span_states_is_kept_as_it_is(spans: Any) -> None:
    """A gateway that priced the call (``gen_ai.usage.cost.*`` on the span, ``source=provider``): its amount is the
    call's, whatever the table says; a cost without its currency is not one (counted) and the table prices the call."""
    stated = {"gen_ai.usage.cost.amount": 0.0042, "gen_ai.usage.cost.currency": "USD"}
    stated["gen_ai.usage.cost.source"] = "provider"
    with spans.agent("gateway-bot"):
        spans.chat([user("hi")], [assistant("hello")], model="gpt-4o-mini", attributes=stated)
        spans.chat([user("hi")], [assistant("hello")], model="gpt-4o-mini", attributes={"gen_ai.usage.cost.amount": 1})
    meta = spans.one().meta
    first, second = (s for s in meta.steps if s.kind == "model")
    assert first.cost is not None and second.cost is not None
    assert (first.cost.amount, first.cost.source, first.cost.priced_by) == (0.0042, "provider", "reported")
    assert second.cost.priced_by == "genai-prices"
    assert spanfold.stats().get("fault.fold.type") == 1
    assert meta.run_cost is not None and meta.run_cost.total == pytest.approx(0.0042 + second.cost.amount)


def test_tokens_that_do_not_add_up_are_not_priced(spans: Any) -> None:
    """More cache reads than input tokens: a producer's mistake, counted; the call gets no cost, never a guess."""
    with spans.agent("bot"):
        spans.chat([user("hi")], [assistant("hello")], model="gpt-4o-mini", usage=(10, 5))
        spans.chat(
            [user("hi")],
            [assistant("hello")],
            model="gpt-4o-mini",
            usage=(10, 5),
            attributes={"gen_ai.usage.cache_read.input_tokens": 900},
        )
    meta = spans.one().meta
    priced, unpriced = (s for s in meta.steps if s.kind == "model")
    assert priced.cost is not None and unpriced.cost is None
    assert spanfold.stats().get("cost.bad_usage") == 1
    assert meta.run_cost is not None and meta.run_cost.unpriced_steps == 1 and "cost_usd" not in meta.extra
