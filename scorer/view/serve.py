"""`scorer view --serve`: serve the written page on 127.0.0.1 only (never other hosts)."""

from __future__ import annotations

import http.server
import threading
from functools import partial
from pathlib import Path
from typing import Any

__all__ = ["PageServer"]


class _Handler(http.server.BaseHTTPRequestHandler):
    """Answers every GET with the one page; nothing else is readable."""

    def __init__(self, page: Path, *args: Any, **kwargs: Any) -> None:
        self.page = page
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        if self.path.split("?")[0] not in ("/", "/index.html"):
            self.send_error(404)
            return
        body = self.page.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # quiet
        return


class PageServer:
    """A loopback HTTP server for one page.

    Example:
        >>> with PageServer(Path("view.html")) as server:
        ...     print(server.url)
    """

    def __init__(self, page: Path, port: int = 0) -> None:
        handler = partial(_Handler, page)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/"

    def start(self) -> PageServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> PageServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
