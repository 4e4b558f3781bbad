"""A loopback HTTP server that answers with a `FakeAnthropic`, for tests that go through
`ANTHROPIC_BASE_URL` (the CLI builds its own client, so no transport can be injected)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
from judge.fake_anthropic import FakeAnthropic


@contextmanager
def serve(fake: FakeAnthropic) -> Iterator[str]:
    """Run a server on 127.0.0.1 (free port) for the duration; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            request = httpx2.Request(
                "POST",
                f"http://loopback{self.path}",
                headers=dict(self.headers),
                content=self.rfile.read(length),
            )
            response = fake.handler(request)
            body = response.read()
            self.send_response(response.status_code)
            for key, value in response.headers.items():
                if key.lower() not in {"content-length", "transfer-encoding", "content-encoding"}:
                    self.send_header(key, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:  # keep test output quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
