"""A loopback HTTP proxy that answers the first requests with chosen failures (503, 429 ...; or
:data:`CUT`: the real answer's status and first half, as vmauth 1.79 cuts some answers) and
forwards the rest, byte for byte, to a real server: fault injection in front of the real receiver
(like toxiproxy), so retries are tested against what Prometheus or VictoriaMetrics then store."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

__all__ = ["CUT", "fault_proxy"]

CUT = -1
"""A failure that forwards the request and answers the first half of the real answer."""


class _State:
    def __init__(self, upstream: str, failures: list[int]) -> None:
        self.upstream = upstream
        self.failures = failures
        self.seen: list[tuple[str, dict[str, str], int]] = []   # path, headers, status answered
        self.lock = threading.Lock()


def _handler(state: _State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with state.lock:
                status = state.failures.pop(0) if state.failures else 0
            if status > 0:
                self._seen(status)
                self.send_response(status)
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.send_header("Content-Length", "4")
                self.end_headers()
                self.wfile.write(b"nope")
            else:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                resp = httpx.post(state.upstream + self.path, content=body, headers=headers, timeout=30)
                answer = resp.content[:len(resp.content) // 2] if status == CUT else resp.content
                status = resp.status_code
                self._seen(status)
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        def _seen(self, status: int) -> None:
            # recorded before the answer is written: a client that has its answer may look at
            # ``seen`` at once, before this thread would otherwise have got to it
            with state.lock:
                state.seen.append((self.path, dict(self.headers.items()), status))

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def fault_proxy(upstream: str, failures: list[int]) -> Iterator[tuple[str, _State]]:
    """``with fault_proxy(url, [503, 429]) as (proxy_url, state): ...``"""
    state = _State(upstream, list(failures))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
