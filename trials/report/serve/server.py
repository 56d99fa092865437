"""The server of ``trial view --serve``: the standard library's threading HTTP server, on 127.0.0.1 only.

What it will do and nothing more:

- bind 127.0.0.1 (never another interface: :class:`LoopbackServer` refuses any other address);
- answer ``GET`` and ``HEAD`` of a fixed set of paths (``/``, ``/trial`` and ``/api/…``); every
  other path, ``..`` and its encodings included, is 404, and every other method 405 (a body is
  never read);
- name runs and trials only by the catalog's names (:mod:`.catalog`), never by a path a request
  sends, and read their files through the run folder's confined reader (no link followed);
- refuse a request whose ``Host`` is not this server's own address (a web page that rebinds a
  DNS name to 127.0.0.1 cannot read the runs), a request line past :data:`MAX_TARGET` characters
  and a query of more than :data:`MAX_QUERY_FIELDS` fields;
- serve pages that load nothing from anywhere (a Content Security Policy says so too).
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from capplan.core.errors import UserError
from capplan.trials.report.compare import compare
from capplan.trials.report.serve.app import render_app
from capplan.trials.report.serve.catalog import Catalog
from capplan.trials.report.why import comparison_json, side_by_side
from capplan.trials.report.run_data import LoadedRun, TrialResult

HOST = "127.0.0.1"
#: the longest request target answered (run names and trial keys are short)
MAX_TARGET = 4096
MAX_QUERY_FIELDS = 16
#: runs one comparison may join
MAX_COMPARED_RUNS = 8
#: seconds a connection may stay silent before it is dropped
SOCKET_TIMEOUT_S = 30

_CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; "
        "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


class ServeError(UserError):
    """The server cannot start (the port is taken, the folder is not one)."""

    code = "VIEW_SERVE"


class _NotFound(Exception):
    """Answered 404: no such page, run or trial."""


class LoopbackServer(ThreadingHTTPServer):
    """A threading HTTP server that binds 127.0.0.1 and nothing else."""

    daemon_threads = True
    allow_reuse_address = False  # two servers on one port is a mistake to report, not to share

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], catalog: Catalog) -> None:
        if address[0] != HOST:
            raise ValueError(f"the view server binds {HOST} only, not {address[0]!r}")
        self.catalog = catalog
        super().__init__(address, handler)

    def server_bind(self) -> None:
        super().server_bind()
        host = self.socket.getsockname()[0]
        if host != HOST:  # a resolver or a kernel that answers another address is not trusted
            self.socket.close()
            raise ValueError(f"the view server bound {host!r}, not {HOST}")

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer
    timeout = SOCKET_TIMEOUT_S
    server_version = "capplan-view"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
        """Quiet: a request line is untrusted text, and the terminal shows the URL only."""

    # -- methods -------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._answer(head=False)

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
        self._answer(head=True)

    def _refuse_method(self) -> None:
        self.close_connection = True
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, b"GET only\n", "text/plain; charset=utf-8",
                   extra={"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse_method  # noqa: N815 - http.server's naming

    # -- routing -------------------------------------------------------------------------
    def _answer(self, *, head: bool) -> None:
        self._head = head
        if len(self.path) > MAX_TARGET:
            self._send(HTTPStatus.REQUEST_URI_TOO_LONG, b"request target too long\n", "text/plain; charset=utf-8")
            return
        if not self._host_ok():
            self._send(HTTPStatus.FORBIDDEN, b"this server answers requests to its own address only\n",
                       "text/plain; charset=utf-8")
            return
        parts = urlsplit(self.path)
        try:
            query = parse_qs(parts.query, keep_blank_values=True, max_num_fields=MAX_QUERY_FIELDS, strict_parsing=False)
        except ValueError:
            self._send(HTTPStatus.BAD_REQUEST, b"too many query fields\n", "text/plain; charset=utf-8")
            return
        route: Callable[[dict[str, list[str]]], None] | None = {
            "/": self._app, "/trial": self._trial, "/api/runs": self._runs, "/api/run": self._run,
            "/api/poll": self._poll, "/api/compare": self._compare, "/api/diff": self._diff,
        }.get(parts.path)
        try:
            if route is None:
                raise _NotFound(parts.path)
            route(query)
        except _NotFound:
            if parts.path.startswith("/api/"):
                self._json({"error": "not found: no such run or trial under the served folder (a run that does "
                                     "not read back is listed with its problem)"}, HTTPStatus.NOT_FOUND)
            else:
                self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8")
        except UserError as exc:  # a run that does not read back: say why, as trial report would
            self._json({"error": exc.render()}, HTTPStatus.UNPROCESSABLE_ENTITY)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True

    def _host_ok(self) -> bool:
        host = self.headers.get("Host", "")
        port = self.server.port
        return host in (f"{HOST}:{port}", f"localhost:{port}") or (port == 80 and host in (HOST, "localhost"))

    # -- pages and data ------------------------------------------------------------------
    def _app(self, query: dict[str, list[str]]) -> None:
        self._send(HTTPStatus.OK, render_app(folder=self.server.catalog.root.name or "/").encode("utf-8"),
                   "text/html; charset=utf-8")

    def _runs(self, query: dict[str, list[str]]) -> None:
        self._json({"runs": self.server.catalog.rows()})

    def _loaded(self, name: str) -> LoadedRun:
        view = self.server.catalog.run(name)
        if view is None or view.loaded is None:
            raise _NotFound(name)
        return view.loaded

    def _run(self, query: dict[str, list[str]]) -> None:
        view = self.server.catalog.run(_one(query, "run"))
        if view is None:
            raise _NotFound()
        self._json({"version": view.version, "row": view.row, "trials": view.trials, "running": view.running})

    def _poll(self, query: dict[str, list[str]]) -> None:
        view = self.server.catalog.run(_one(query, "run"))
        if view is None:
            raise _NotFound()
        self._json({"version": view.version, "trials": len(view.trials), "running": view.running})

    def _trial_of(self, run: str, key: str) -> tuple[LoadedRun, TrialResult]:
        loaded = self._loaded(run)
        trial = next((t for t in loaded.trials if t.key == key), None)
        if trial is None:
            raise _NotFound(key)
        return loaded, trial

    def _trial(self, query: dict[str, list[str]]) -> None:
        from capplan.trials.report.view.write import render_runs

        loaded, trial = self._trial_of(_one(query, "run"), _one(query, "key"))
        # the static view's own page, of this one trial: the same renderer, the same escaping
        html = render_runs([dataclasses.replace(loaded, trials=(trial,))])
        self._send(HTTPStatus.OK, html.encode("utf-8"), "text/html; charset=utf-8")

    def _compare(self, query: dict[str, list[str]]) -> None:
        names = query.get("run", [])
        if not 1 <= len(names) <= MAX_COMPARED_RUNS or len(set(names)) != len(names):
            raise _NotFound()
        runs = [self._loaded(name) for name in names]  # each labelled by its catalog name: unique
        self._json(comparison_json(compare(runs), {run.label: name for run, name in zip(runs, names, strict=True)}))

    def _diff(self, query: dict[str, list[str]]) -> None:
        _, a = self._trial_of(_one(query, "a_run"), _one(query, "a_key"))
        _, b = self._trial_of(_one(query, "b_run"), _one(query, "b_key"))
        self._json(side_by_side(a, b))

    # -- answers -------------------------------------------------------------------------
    def _json(self, data: Any, status: HTTPStatus = HTTPStatus.OK) -> None:
        body = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
        self._send(status, body, "application/json; charset=utf-8")

    def _send(self, status: HTTPStatus, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        headers = {"Content-Type": content_type, "Content-Length": str(len(body)), "Cache-Control": "no-store",
                   "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
                   "Content-Security-Policy": _CSP, **(extra or {})}
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if not getattr(self, "_head", False):
            self.wfile.write(body)


def _one(query: dict[str, list[str]], name: str) -> str:
    values = query.get(name, [])
    if len(values) != 1:
        raise _NotFound(name)
    return values[0]


def make_server(folder: Path, port: int = 0) -> LoopbackServer:
    """A server over ``folder`` on 127.0.0.1:``port`` (0: a free port), bound and not yet serving."""
    if not folder.is_dir():
        raise ServeError(f"{folder} is not a folder", location=str(folder),
                         hint="name the folder that holds your run folders, e.g. runs")
    try:
        return LoopbackServer((HOST, port), _Handler, Catalog(folder))
    except OSError as exc:
        raise ServeError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}", location="--port",
                         hint="choose another --port, or leave --port out for a free one") from None


def serve(folder: Path, port: int = 0, announce: Callable[[str], None] = print) -> None:
    """Serve ``folder`` until Ctrl-C; the socket is closed on the way out."""
    server = make_server(folder, port)
    try:
        announce(server.url)
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how this command ends
    finally:
        server.server_close()


def serve_in_thread(folder: Path, port: int = 0) -> tuple[LoopbackServer, threading.Thread]:
    """A server running in a thread (for tests and notebooks); stop it with ``server.shutdown()`` then ``server_close()``."""
    server = make_server(folder, port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    return server, thread
