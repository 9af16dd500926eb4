"""``spanfold demo``: a tool-using agent run against the embedded mock LLM server, traced and shown.

No API key, no network: the real ``openai`` SDK (or another provider's, ``--provider``) talks real HTTP to a mock
server on 127.0.0.1 that plays a deterministic weather agent (two parallel ``get_weather`` calls, a
``convert_temperature`` call, an answer). The run, its tools and the agent loop on each API are
:mod:`spanfold.testing`'s (``WEATHER``, ``run_agent``), which tests share.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

import spanfold
from spanfold.commands.terminal import color_choice, terminal_width
from spanfold.pricing import table
from spanfold.testing import WEATHER, MockLLMServer
from spanfold.testing.agents import PROVIDERS, Provider
from spanfold.trace.model import Trace
from spanfold.trace.read import Record, read_records
from spanfold.trace.render import render_trace

#: Where the demo writes unless told otherwise: the directory the README's commands read.
DEFAULT_OUTPUT = "traces"
#: Printed the first time the demo writes into a directory: what the output above means.
LEGEND = """\
What you are looking at: the agent's run as one flat trace, the event list an Invariant trace file holds.
  heading       trace id (agent name), then models, tokens in/out, wall time and counts
  system/user   the prompt the agent sent; assistant: the model's replies
  -> name(...)  a tool call the model asked for, with its arguments and [call id]
  <- name [id]  the tool's output, matched to its call
Next: `spanfold show {path} --trace -1`, `spanfold summary {directory}`; the README walks through the rest."""


class DemoError(Exception):
    """The demo's traces could not be written (the message is the one-line problem)."""


def _last_trace(path: Path) -> Trace:
    """The trace the demo just appended, with its metadata from the sibling file."""
    traces = [r.trace for r in read_records(path) if isinstance(r, Record) and r.trace is not None]
    if not traces:
        raise DemoError(f"{path}: no trace was written")
    return traces[-1]


def _client_library(provider: Provider) -> None:
    """The provider's SDK imported, or :class:`DemoError` naming the extra that installs it."""
    module, extra = provider.library, provider.extra
    try:
        importlib.import_module(module)
    except ImportError:
        raise DemoError(
            f"the demo needs the {module} package: pip install 'spanfold[{extra}]'"
            f" (or pip install -e '.[{extra}]' in a checkout)"
        ) from None


#: Said under the trace when no cost could be shown.
NO_PRICES = (
    "(no cost shown: pip install 'spanfold[cost]' (Python 3.11+) prices each call from genai-prices' bundled table)"
)


def run(output: str | None = None, *, provider: str = "openai", stream: bool = False, echo: bool = True) -> Path:
    """Run the weather agent (:data:`spanfold.testing.WEATHER`) on ``provider`` (a key of
    :data:`spanfold.testing.agents.PROVIDERS`); return the trace file it appended to. Traces go to ``output`` (default
    ``./traces``); the first run into a new directory also prints a legend."""
    chosen = PROVIDERS[provider]
    _client_library(chosen)
    directory = Path(output or DEFAULT_OUTPUT)
    first_time = not (directory / "traces.jsonl").exists()
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)  # traces hold prompts: the user's only
    except OSError as exc:
        raise DemoError(f"{directory}: cannot write traces ({exc.strerror or exc})") from None
    handle = spanfold.init(output=str(directory), format="invariant")  # the demo shows the Invariant file
    with MockLLMServer(WEATHER.replies) as server:
        client = chosen.client(server)  # built before the run: the run's time is the agent's, not the SDK's import
        with spanfold.agent(WEATHER.name):
            answer = chosen.run(client, stream=stream)
    if not spanfold.flush() or not spanfold.stats().get("traces_written"):
        raise DemoError(f"{directory}: the trace was not written (see the warning above)")
    path = Path(handle.output) / "traces.jsonl"
    if echo:
        color, width = color_choice(), terminal_width()
        click.echo(f"{click.style('agent answered', bold=True)}: {answer}\n", color=color)
        trace = _last_trace(path)
        for line in render_trace(trace.events, trace.meta, color=True, max_chars=400, width=width):
            click.echo(line, color=color)
        click.echo(f"\nwritten to {path} (metadata: {path.with_name('traces.meta.jsonl')})")
        if not table.available():
            click.echo(NO_PRICES)
        if first_time:
            shown = Path(output or DEFAULT_OUTPUT)
            click.echo("\n" + LEGEND.format(path=shown / "traces.jsonl", directory=shown))
    return path


@click.command("demo")
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False),
    default=None,
    help="Trace directory (default: ./traces, where the README's commands read).",
)
@click.option(
    "--provider",
    type=click.Choice(list(PROVIDERS)),
    default="openai",
    show_default=True,
    help="API the agent uses: openai (Chat Completions), anthropic (Messages), openai-responses, gemini, bedrock"
    " (Converse), groq, mistral, ollama, cohere or litellm.",
)
@click.option("--stream", is_flag=True, help="Stream the model's replies.")
def command(output: str | None, provider: str, stream: bool) -> None:
    """Run a tool-using agent against the embedded mock LLM server and show its flat trace."""
    try:
        run(output, provider=provider, stream=stream)
    except DemoError as exc:
        click.echo(str(exc), err=True)
        sys.exit(2)
    finally:
        spanfold.shutdown()
