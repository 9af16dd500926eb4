"""The ``spanfold ui`` web server (aiohttp): the page, its static assets and a small JSON API over the index.

Every response carries a Content-Security-Policy that allows only this server's own script, style and images
(``data:`` images too, which traces carry inline), no inline script, no framing; trace content reaches the page
only as JSON and is put on it as text. With a token, each request needs it: ``Authorization: Bearer TOKEN``, or
the cookie the page gets when it is opened once as ``/?token=TOKEN``. Before anything else, a request whose ``Host``
is not one of this server's names (loopback, ``host``, ``allowed_hosts``: :mod:`spanfold.host_check`) gets 421
Misdirected Request and a line of text: a page that rebinds its own name to this address (DNS rebinding) reads
nothing.

``/api/media/<sha256>.<ext>``: a blob the ``media`` option stored (:mod:`spanfold.content.media`), served from the
``media/`` directory of a served trace directory (a served file's own directory) and nowhere else: the name must be a
content-addressed one, and the file it resolves to (symbolic links followed) must be a regular file directly in that
directory. Images and audio a browser shows are served as what they are, anything else as a download.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from aiohttp import web

from spanfold import counters
from spanfold.codecs import jsonio
from spanfold.config import HOW_TRACES_ARE_MADE
from spanfold.content import media
from spanfold.host_check import AllowedHosts
from spanfold.trace.formats import writable
from spanfold.ui.catalog import Catalog
from spanfold.ui.compare import Side, compare
from spanfold.ui.index import Index, Row
from spanfold.ui.opened import PAGE, Opened, OpenRuns, slice_of
from spanfold.ui.query import Lister, Query, conversation_of, facets
from spanfold.ui.search import ContentSearch, load_trace
from spanfold.ui.sessions import Session, group, in_order
from spanfold.ui.stats import stats

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
COOKIE = "spanfold_ui_token"
#: The page's files and their types (the scripts are ES modules that import each other).
STATIC = {
    **{
        name: "text/javascript"
        for name in (
            *("app.js", "dom.js", "keys.js", "list.js", "run.js", "conversation.js", "markdown.js", "waterfall.js"),
            *("compare.js", "numbers.js", "sessions.js", "metadata.js", "step.js"),
        )
    },
    "style.css": "text/css",
    "index.html": "text/html",
}
#: A stored blob's extension -> the type it is served as, shown by the page (anything else is a download).
MEDIA_SHOWN = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
    "wav": "audio/wav",
    "mp3": "audio/mpeg",
    "ogg": "audio/ogg",
    "weba": "audio/webm",
    "flac": "audio/flac",
    "aac": "audio/aac",
    "m4a": "audio/mp4",
}
#: Seconds between looks at the files for appended traces.
REFRESH_SECONDS = 1.0

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(slots=True)
class UiOptions:
    host: str = "127.0.0.1"
    port: int = 8777
    token: str | None = None
    refresh: float = REFRESH_SECONDS
    #: Names the page answers to beside loopback and ``host`` (``--allow-host``).
    allowed_hosts: tuple[str, ...] = ()
    #: How traces are made, said while there is none (``spanfold serve --ui`` says its own).
    waiting_hint: str = HOW_TRACES_ARE_MADE


def _asset(name: str) -> bytes:
    return resources.files("spanfold.ui").joinpath("static").joinpath(name).read_bytes()


def _authorized(request: web.Request, token: str) -> bool:
    given = ""
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        given = header[len("Bearer ") :]
    elif "token" in request.query:
        given = request.query["token"]
    else:
        given = request.cookies.get(COOKIE, "")
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), token.encode("utf-8", "surrogatepass"))


def _middleware(options: UiOptions) -> Any:
    hosts = AllowedHosts.of(options.host, options.allowed_hosts)

    @web.middleware
    async def secure(request: web.Request, handler: Handler) -> web.StreamResponse:
        response: web.StreamResponse
        if not hosts.allows(request.headers.getall("Host", [])):
            text = "spanfold ui: not a name of this server (add it with --allow-host or SPANFOLD_ALLOWED_HOSTS)\n"
            response = web.Response(status=421, text=text)
        elif options.token is not None and not _authorized(request, options.token):
            response = web.Response(status=401, text="spanfold ui: a token is required\n")
        else:
            try:
                response = await handler(request)
            except web.HTTPException as exc:
                response = web.Response(status=exc.status, text=exc.reason or "")
            if options.token is not None and "token" in request.query:
                response.set_cookie(COOKIE, request.query["token"], httponly=True, samesite="Strict")
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Cache-Control"] = "no-store"
        return response

    return secure


def _json(value: Any) -> web.Response:
    """A JSON response (a non-finite number as null: the page's JSON.parse refuses NaN); a lone surrogate in trace text
    (half an emoji a provider's stream cut) is sent as its JSON escape, which the page reads back as it was (UTF-8
    cannot hold it)."""
    text = writable(jsonio.dumps(value, str))
    return web.Response(text=text, content_type="application/json")


def _number(text: str | None, default: int) -> int:
    try:
        return max(0, int(text)) if text is not None else default
    except ValueError:
        return default


class Ui:
    def __init__(self, index: Index, options: UiOptions) -> None:
        self.index = index
        self.options = options
        self.search = ContentSearch(load_trace(index))
        self.lister = Lister(self.search.matching)
        self._facets: tuple[int, dict[str, Any]] = (-1, {})
        self._stats: tuple[tuple[Any, ...], dict[str, Any]] = ((), {})
        self._sessions: tuple[tuple[Any, ...], dict[str, Session]] = ((), {})
        self._catalog = Catalog()
        self._catalog_lock = threading.Lock()
        self.opened = OpenRuns()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[_middleware(self.options)], client_max_size=64 * 1024)
        app.router.add_get("/", self.page)
        app.router.add_get("/static/{name}", self.static)
        app.router.add_get("/favicon.ico", self.favicon)
        app.router.add_get("/api/state", self.state)
        app.router.add_get("/api/runs", self.runs)
        app.router.add_get("/api/stats", self.stats)
        app.router.add_get("/api/sessions", self.sessions)
        app.router.add_get("/api/session", self.session)
        app.router.add_get("/api/run/{id}", self.run)
        app.router.add_get("/api/run/{id}/events", self.run_events)
        app.router.add_get("/api/run/{id}/part", self.run_part)
        app.router.add_get("/api/run/{id}/{text:raw|spec}", self.run_text)
        app.router.add_get("/api/compare", self.compare)
        app.router.add_get("/api/media/{name}", self.media)
        app.on_startup.append(self._start)
        app.on_cleanup.append(self._stop)
        return app

    async def _start(self, app: web.Application) -> None:
        self._task = asyncio.get_running_loop().create_task(self._watch())

    async def _stop(self, app: web.Application) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _watch(self) -> None:
        """Refresh the index for as long as the page is served: a fault is counted and logged once, and the next
        refresh goes on (the index skips and counts what it cannot read, file by file)."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                await loop.run_in_executor(None, self.index.refresh)
            except Exception as exc:
                counters.fault("ui.refresh", exc)
            await asyncio.sleep(0 if self.index.behind else self.options.refresh)

    async def page(self, request: web.Request) -> web.Response:
        return web.Response(body=_asset("index.html"), content_type="text/html", charset="utf-8")

    async def favicon(self, request: web.Request) -> web.Response:
        return web.Response(status=204)

    async def static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in STATIC:
            raise web.HTTPNotFound()
        return web.Response(body=_asset(name), content_type=STATIC[name], charset="utf-8")

    def catalog(self) -> Catalog:
        """The runs listed and their permalinks, as of the index's latest generation."""
        generation, rows = self.index.snapshot()
        with self._catalog_lock:
            if self._catalog.generation != generation:
                self._catalog = Catalog.of(generation, rows)
            return self._catalog

    def _row_json(self, row: Row) -> dict[str, Any]:
        return row.to_json(self.catalog().id_of(row))

    def waiting(self, catalog: Catalog) -> dict[str, Any] | None:
        """While no run is listed: the paths the page waits on (``missing``: those not there yet) and how traces are
        made, for the page to say; None once there is a run."""
        if catalog.shown:
            return None
        paths = self.index.paths
        return {
            "paths": [str(p) for p in paths],
            "missing": [str(p) for p in paths if not p.exists()],
            "hint": self.options.waiting_hint,
        }

    async def state(self, request: web.Request) -> web.Response:
        """How many records are indexed (``total``), how many runs are listed (``runs``: copies in other files
        counted once), how many lines and files could not be read (``problems``), and while there is no run what
        the page waits on (``waiting``: :meth:`waiting`)."""
        catalog = await asyncio.get_running_loop().run_in_executor(None, self.catalog)
        total = len(set(map(id, catalog.by_id.values())))
        return _json(
            {
                "generation": catalog.generation,
                "total": total,
                "runs": len(catalog.shown),
                "problems": self.index.problems(),
                "waiting": self.waiting(catalog),
            }
        )

    def _runs_of(self, query: Query) -> dict[str, Any]:
        catalog = self.catalog()
        generation = catalog.generation
        rows = catalog.rows if query.copies else catalog.shown
        total, page = self.lister.page(generation, rows, query)
        if self._facets[0] != generation:
            self._facets = (generation, facets(catalog.shown))
        return {
            "generation": generation,
            "total": total,
            "all": len(catalog.shown),
            "copies": len(catalog.rows) - len(catalog.shown),
            "offset": query.offset,
            "runs": [r.to_json(catalog.id_of(r)) for r in page],
            "facets": self._facets[1],
            "waiting": self.waiting(catalog),
        }

    async def runs(self, request: web.Request) -> web.Response:
        """A page of the runs the query keeps (:mod:`spanfold.ui.query`), how many, and the filters' choices."""
        query = Query.parse(request.query)
        return _json(await asyncio.get_running_loop().run_in_executor(None, self._runs_of, query))

    def _stats_of(self, query: Query) -> dict[str, Any]:
        catalog = self.catalog()
        key = (catalog.generation, query.key())
        if self._stats[0] != key:
            rows = catalog.rows if query.copies else catalog.shown
            self._stats = (key, stats(self.lister.chosen(catalog.generation, rows, query)))
        return self._stats[1]

    async def stats(self, request: web.Request) -> web.Response:
        """Totals and a chart's bins over the runs the list's filters keep (:mod:`spanfold.ui.stats`)."""
        query = Query.parse(request.query)
        return _json(await asyncio.get_running_loop().run_in_executor(None, self._stats_of, query))

    def _sessions_of(self, query: Query) -> dict[str, Session]:
        """The sessions among the runs the query keeps (its text and filters; not its order)."""
        catalog = self.catalog()
        key = (catalog.generation, query.key())
        if self._sessions[0] != key:
            rows = catalog.rows if query.copies else catalog.shown
            self._sessions = (key, group(self.lister.chosen(catalog.generation, rows, query)))
        return self._sessions[1]

    async def sessions(self, request: web.Request) -> web.Response:
        """A page of the sessions among the runs the list's filters keep, the one active last first."""
        query = Query.parse(request.query)
        found = await asyncio.get_running_loop().run_in_executor(None, self._sessions_of, query)
        page = list(found.values())[query.offset : query.offset + query.limit]
        return _json({"total": len(found), "offset": query.offset, "sessions": [s.to_json() for s in page]})

    def _session(self, sid: str) -> dict[str, Any]:
        found = self._sessions_of(Query()).get(sid)
        if found is None:
            raise web.HTTPNotFound(reason="no such session")
        catalog = self.catalog()
        rows = in_order(found.rows)
        return {"session": found.to_json(), "runs": [r.to_json(catalog.id_of(r)) for r in rows], "stats": stats(rows)}

    async def session(self, request: web.Request) -> web.Response:
        """One session (``id``): its runs in the order they started, and its totals."""
        sid = request.query.get("id", "")
        return _json(await asyncio.get_running_loop().run_in_executor(None, self._session, sid))

    def _open(self, run_id: str) -> tuple[Row, Opened]:
        """The run, decoded once for the requests that follow (its events page by page, its texts)."""
        row = self.catalog().resolve(run_id)
        if row is None:
            raise web.HTTPNotFound(reason="no such run")

        def load() -> Opened:
            try:
                _, trace = self.index.trace(row)
            except Exception:
                raise web.HTTPNotFound(reason="this run can no longer be read") from None
            return Opened.of(key, row.length, trace, lambda: self.index.raw(row))

        key = (row.id, row.file, row.offset, row.length, row.seq)
        return row, self.opened.get(key, load)

    async def _opened(self, request: web.Request) -> tuple[Row, Opened]:
        return await asyncio.get_running_loop().run_in_executor(None, self._open, request.match_info["id"])

    async def run(self, request: web.Request) -> web.Response:
        """A run as the page first shows it: its row, metadata, waterfall and first page of events."""
        row, opened = await self._opened(request)
        catalog = self.catalog()
        copies = [
            {"id": catalog.id_of(c), "file": c.file, "line": c.line, "shape": c.shape} for c in catalog.copies_of(row)
        ]
        out: dict[str, Any] = {"row": row.to_json(catalog.id_of(row)), "count": opened.count, "copies": copies}
        sid = conversation_of(row)
        if sid is not None:
            found = await asyncio.get_running_loop().run_in_executor(None, self._sessions_of, Query())
            out["session"] = {"id": sid, "runs": len(found[sid].rows) if sid in found else 1}
        if opened.trace is not None:
            end = opened.page_end(0)
            out.update(meta=opened.meta, waterfall=opened.waterfall, events=opened.events(0, end), next=end)
        return _json(out)

    async def run_events(self, request: web.Request) -> web.Response:
        """The run's events from ``from`` (from 0), a page; ``to``: at least up to that event."""
        _, opened = await self._opened(request)
        start = _number(request.query.get("from"), 0)
        wanted = max(_number(request.query.get("to"), 0) - start, PAGE)
        end = opened.page_end(start, wanted)
        return _json({"from": start, "next": end, "events": opened.events(start, end)})

    async def run_part(self, request: web.Request) -> web.Response:
        """A slice of the whole text of one part of an event (``n`` from 1, ``path`` as ``cut`` names it)."""
        _, opened = await self._opened(request)
        try:
            text = opened.part(_number(request.query.get("n"), 0), request.query.get("path", ""))
        except KeyError:
            raise web.HTTPNotFound(reason="no such part") from None
        return _json(slice_of(text, _number(request.query.get("from"), 0)))

    async def run_text(self, request: web.Request) -> web.Response:
        """A slice of the raw record as indented JSON (``raw``), or the whole spec (``spec``), built on request."""
        _, opened = await self._opened(request)
        name = request.match_info["text"]
        text = await asyncio.get_running_loop().run_in_executor(None, opened.text, name)
        if name == "spec":
            return _json({"spec": text})
        return _json(slice_of(text, _number(request.query.get("from"), 0)))

    def media_file(self, name: str) -> Path | None:
        """The stored blob ``name`` in the ``media/`` directory of a served path, resolved; None when it is not a
        content-addressed name, or resolves to anything but a regular file directly in that directory."""
        if not media.NAME.fullmatch(name):
            return None
        for path in self.index.paths:
            try:
                root = ((path if path.is_dir() else path.parent) / media.DIRECTORY).resolve(strict=True)
                found = (root / name).resolve(strict=True)
            except OSError:  # no media directory there, or no such blob
                continue
            if found.parent == root and found.is_file():
                return found
        return None

    async def media(self, request: web.Request) -> web.StreamResponse:
        """A stored blob (:meth:`media_file`), as what it is when the page shows it, else as a download."""
        name = request.match_info["name"]
        found = await asyncio.get_running_loop().run_in_executor(None, self.media_file, name)
        if found is None:
            raise web.HTTPNotFound(reason="no such media")
        shown = MEDIA_SHOWN.get(name.rpartition(".")[2])
        headers = {"Content-Type": shown or "application/octet-stream"}
        if shown is None:
            headers["Content-Disposition"] = f'attachment; filename="{name}"'
        return web.FileResponse(found, headers=headers)

    def _side(self, run_id: str) -> Side:
        row, opened = self._open(run_id)
        return Side(self._row_json(row), opened.trace, opened.waterfall, row.meta.extra)

    async def compare(self, request: web.Request) -> web.Response:
        """Two runs (``a``, ``b``) compared (:mod:`spanfold.ui.compare`)."""
        loop = asyncio.get_running_loop()
        a = await loop.run_in_executor(None, self._side, request.query.get("a", ""))
        b = await loop.run_in_executor(None, self._side, request.query.get("b", ""))
        return _json(await loop.run_in_executor(None, compare, a, b))


async def start(index: Index, options: UiOptions) -> tuple[web.AppRunner, str]:
    """Start serving (the index is refreshed in the background); the runner and the page's URL."""
    runner = web.AppRunner(Ui(index, options).app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, options.host, options.port)
    await site.start()
    port = int(runner.addresses[0][1])
    host = f"[{options.host}]" if ":" in options.host else options.host
    return runner, f"http://{host}:{port}/"
