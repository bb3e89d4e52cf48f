"""``ctxbench view``: write a run's session explorer (`reports.explorer.write_explorer`), print its path,
and with ``--serve`` serve it on localhost until Ctrl-C.
"""

from __future__ import annotations

import argparse
import errno
import http.server
import signal
import sys
from pathlib import Path

from harness.cli.errors import UsageError
from harness.cli.flags import Subparsers, add_command, output_path

#: The port ``--serve`` listens on unless ``--port`` says otherwise.
DEFAULT_PORT = 8765


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench view``."""
    view = add_command(
        subparsers, "view", handle,
        help="write the session explorer (explorer.html) of a run directory; --serve to open it over http",
        description="Write a self-contained HTML page (no network needed) to filter and sort a run's sessions, step "
                    "through one session's turns (context by kind, decision and trace, tool result, compactions, "
                    "facts lost) and put two strategies side by side on the same session; print its path. Exit 0; "
                    "2 when the directory is not a finished run or the port is busy (one line on stderr).")
    view.add_argument("run_dir", help="a finished run directory (the turns come from its events.parquet)")
    view.add_argument("--out", help="where to write the page (default: RUN_DIR/explorer.html)")
    view.add_argument("--serve", action="store_true", help="serve the page on http://127.0.0.1:PORT/ until Ctrl-C")
    view.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"port for --serve (default: {DEFAULT_PORT})")


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number from 1 to 65535, got {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number from 1 to 65535, got {port}")
    return port


def handle(args: argparse.Namespace) -> int:
    """Write the page and print its path; with ``--serve``, serve it until interrupted. The port is
    taken before the page is written, so a busy port changes nothing."""
    from reports.explorer import write_explorer
    from reports.inputs import ReportInputError

    if args.out is not None:  # before the port or the run is touched: never a run directory's own file
        output_path(args.out, flag="--out", directory=False)
    server = listen(args.port) if args.serve else None
    try:
        try:
            # The page is built from the checked run directory before anything is written.
            page = write_explorer(args.run_dir, args.out)
        except ReportInputError as e:
            raise UsageError(f"view: {e}") from None
        print(page, flush=True)
        if server is not None:
            serve(server, page)
    finally:
        if server is not None:
            server.server_close()
    return 0


class _PageServer(http.server.ThreadingHTTPServer):
    """Serves one page, at ``/`` and at its file name; 404 for anything else."""

    page = b""
    name = ""


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _PageServer

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] not in ("/", f"/{self.server.name}"):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.server.page)))
        self.end_headers()
        self.wfile.write(self.server.page)

    def log_message(self, format: str, *args: object) -> None:
        pass  # a line per request would bury the URL; the page is all there is to serve


def listen(port: int) -> _PageServer:
    """A server bound to ``127.0.0.1:port``; UsageError when the port is busy or cannot be used."""
    try:
        return _PageServer(("127.0.0.1", port), _Handler)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise UsageError(f"view: --port {port}: the port is busy (something else listens on it); pick another "
                             "with --port") from None
        raise UsageError(f"view: --port {port}: cannot listen on it ({e.strerror or e})") from None


def serve(server: _PageServer, page: Path) -> None:
    """Serve ``page`` on ``server`` until Ctrl-C (which ends the command normally)."""
    server.page = page.read_bytes()
    server.name = page.name
    # A process started in the background by a non-interactive shell inherits SIGINT ignored, and Python then
    # installs no KeyboardInterrupt handler: Ctrl-C (or `kill -INT`) would never stop the server. Ask for it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    print(f"serving the explorer at http://127.0.0.1:{server.server_port}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("ctxbench: view: stopped", file=sys.stderr)
