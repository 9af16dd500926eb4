"""``spanfold ui [DIR ...]``: browse traces in a local web page (the run list, a run, two runs compared).

Loopback only unless ``--host`` says otherwise; ``--token`` (or ``SPANFOLD_UI_TOKEN``) makes every request need
it (open the page once as ``/?token=TOKEN``). The page loads nothing from outside this server. It answers only to
its own names (loopback, ``--host``, ``--allow-host``): a request with another ``Host`` gets 421 (DNS rebinding).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from spanfold import host_check
from spanfold.commands.show import DEFAULT_DIRECTORY
from spanfold.config import HOW_TRACES_ARE_MADE

_F = TypeVar("_F", bound=Callable[..., object])


def _allowed_hosts(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    try:
        return host_check.parse_names(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def allow_host_option(command: _F) -> _F:
    """``--allow-host NAME`` (repeatable; or ``SPANFOLD_ALLOWED_HOSTS``, comma-separated), of ``ui`` and ``serve``."""
    option = click.option(
        "--allow-host",
        "allowed_hosts",
        multiple=True,
        metavar="NAME",
        envvar=host_check.ENV,
        show_envvar=True,
        callback=_allowed_hosts,
        help="Also answer to this Host name (loopback names and --host always; any other Host gets 421). "
        "Repeatable; the environment variable takes a comma-separated list.",
    )
    return option(command)


@click.command("ui")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (loopback by default).")
@click.option("--port", default=8777, show_default=True, type=click.IntRange(0, 65535), help="0: any free port.")
@click.option("--token", envvar="SPANFOLD_UI_TOKEN", show_envvar=True, default=None, help="Require this bearer token.")
@allow_host_option
def command(paths: tuple[Path, ...], host: str, port: int, token: str | None, allowed_hosts: tuple[str, ...]) -> None:
    """Browse the traces in DIR (or files; default: ./traces) in a local web page, updated as traces are added.
    Every format spanfold reads opens, OTLP JSON span files too (folded on read). A path with nothing there yet is
    waited on: its runs are listed as soon as they are written."""
    try:
        from spanfold.ui.index import Index
        from spanfold.ui.server import UiOptions, start
    except ImportError as exc:
        click.echo(f"spanfold ui needs aiohttp: pip install 'spanfold[ui]' ({exc})", err=True)
        sys.exit(2)
    chosen = list(paths) or [Path(DEFAULT_DIRECTORY)]
    if host not in ("127.0.0.1", "localhost", "::1") and not token:
        click.echo(
            f"spanfold ui: warning: listening on {host} without --token: anyone who reaches it reads the traces",
            err=True,
        )
    index = Index(chosen)
    options = UiOptions(host, port, token or None, allowed_hosts=allowed_hosts)

    async def main() -> None:
        try:
            runner, url = await start(index, options)
        except OSError as exc:
            click.echo(f"spanfold ui: cannot listen on {host}:{port}: {exc.strerror or exc}", err=True)
            sys.exit(2)
        click.echo(f"spanfold ui: {url}" + ("?token=..." if token else ""), err=True)
        for path in chosen:
            if not path.exists():  # not yet: the page says so, and lists the runs once they are written there
                click.echo(f"spanfold ui: {path}: no traces yet; waiting for them. {HOW_TRACES_ARE_MADE}", err=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            await runner.cleanup()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
