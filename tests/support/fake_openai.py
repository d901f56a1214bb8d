"""A local OpenAI-compatible chat-completions endpoint that answers from a script, recording every
request: the stand-in for `vllm serve` or a paid API in the tests of the LLM actors and passes."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# A reply: (status, headers, body bytes).
Reply = tuple[int, dict[str, str], bytes]
JSON = {"Content-Type": "application/json"}


@dataclass
class FakeServer:
    """Records every request; `script` holds one-off replies used in order before `default`."""

    default: Callable[[dict], Reply]
    base_url: str = ""
    requests: list[dict] = field(default_factory=list)
    script: list[Callable[[dict], Reply]] = field(default_factory=list)
    delay_s: float = 0.0
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(self, path: str, body: bytes) -> Reply:
        if path != "/v1/chat/completions":
            return 404, {}, b"{}"
        request = json.loads(body)
        with self.lock:
            self.requests.append(request)
            reply = self.script.pop(0) if self.script else self.default
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.delay_s)
            return reply(request)
        finally:
            with self.lock:
                self.in_flight -= 1


@contextlib.contextmanager
def serving(fake: FakeServer) -> Iterator[FakeServer]:
    """`fake` answering on a local port (its `base_url` set) until the block ends."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            status, headers, payload = fake.handle(self.path, body)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(payload)   # the client may have given up first (the timeout tests)

        def log_message(self, *args) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    fake.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield fake
    finally:
        httpd.shutdown()
        httpd.server_close()
