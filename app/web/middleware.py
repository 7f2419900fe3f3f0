"""Two pure-ASGI wrappers around the whole app.

- HeadAsGet: HEAD on any GET route (the page, /docs, static files, the API's GETs) answers as GET
  would, with the same status and headers (Content-Length included) and no body.
- Compress: zstd or gzip for text answers (HTML, JavaScript, CSS, JSON, SVG, CSV), whichever the
  client's Accept-Encoding prefers (zstd when it names both alike: Chromium and Firefox send
  "gzip, deflate, br, zstd"; zstd's fastest level packs a 219 kB overview smaller than gzip's, in a
  third of the time). Never binary frames, never an answer that streams without a Content-Length,
  nothing already encoded, nothing under MIN_BYTES (not worth it) or over MAX_BYTES (it would hold
  the event loop or a thread for seconds: large tables should be frames). Bodies over THREAD_BYTES
  are compressed in a worker thread so that the event loop keeps serving the other clients. Bodies
  over FAST_BYTES (a long sentence's JSON) and every answer made per request use the fastest level
  (see _pack). Versioned static files (?v=…: immutable) are compressed once per encoding and kept,
  headers and all, so that 30 students opening the page cost one read and one compression of the
  bundle, not 30 (a conditional or Range request still goes to the files, for its 304 or 206).
"""

from __future__ import annotations

import gzip
import sys
from typing import Literal

import anyio.to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.web.transport import q_value

if sys.version_info >= (3, 14):
    from compression import zstd
else:  # the same module, backported (PEP 784)
    from backports import zstd

COMPRESSED_TYPES = (
    "text/html",
    "text/css",
    "text/javascript",
    "application/javascript",
    "application/json",
    "image/svg+xml",
    "text/csv",
    "text/plain",
)
MIN_BYTES = 500
MAX_BYTES = 16 * 1024 * 1024
THREAD_BYTES = 256 * 1024
FAST_BYTES = 1024 * 1024
LEVEL = {"gzip": 6, "zstd": 10}  # kept (compressed once): 6% smaller than gzip's 6 for the bundle, as quick
FAST_LEVEL = {"gzip": 1, "zstd": 1}
Encoding = Literal["zstd", "gzip"]
_STATIC_CACHE_ENTRIES = 32


class HeadAsGet:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        done = anyio.Event()

        async def no_body(message: Message) -> None:
            if done.is_set():  # the answer is complete: the GET's body goes nowhere
                return
            await send(message)
            if message["type"] == "http.response.start":  # complete at once, even for an endless stream
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                done.set()

        async def receive_until_done() -> Message:
            if done.is_set():  # a streaming GET stops once the (empty) answer is complete
                return {"type": "http.disconnect"}
            return await receive()

        await self.app({**scope, "method": "GET"}, receive_until_done, no_body)


def _q_values(accept_encoding: str) -> dict[str, float]:
    """Each coding an Accept-Encoding header names, with its q-value (app.web.transport.q_value)."""
    q_of: dict[str, float] = {}
    for item in accept_encoding.split(","):
        name, *params = (p.strip().lower() for p in item.split(";"))
        q_of["gzip" if name == "x-gzip" else name] = q_value(params)
    return q_of


def encoding_for(accept_encoding: str) -> Encoding | None:
    """The coding to answer with: zstd or gzip, whichever has the higher q-value (zstd on a tie);
    None when the client accepts neither. zstd must be named; * stands for gzip only, so a client
    that names neither gets the coding every client reads."""
    q_of = _q_values(accept_encoding)
    star = q_of.get("*")
    zstd_q = q_of.get("zstd", 0.0)
    gzip_q = q_of.get("gzip", star if star is not None else 0.0)
    if zstd_q > 0 and zstd_q >= gzip_q:
        return "zstd"
    return "gzip" if gzip_q > 0 else None


def _pack(body: bytes, encoding: Encoding, kept: bool = False) -> bytes:
    """A slower, smaller level for what is compressed once and kept (versioned static files); the
    fastest for answers made per request: an 80 kB overview took 9 ms at gzip's level 6 and 1 ms at
    level 1, for 30 kB against 34 kB (bench/classload.py; issue 20), which a LAN sends in well under
    a millisecond; a 219 kB one 2.8 ms with gzip's 1 (86 kB) and 1.0 ms with zstd's (77 kB)."""
    level = (LEVEL if kept and len(body) <= FAST_BYTES else FAST_LEVEL)[encoding]
    return zstd.compress(body, level) if encoding == "zstd" else gzip.compress(body, level, mtime=0)


def _compressible(headers: list[tuple[bytes, bytes]]) -> bool:
    h = {k.lower(): v for k, v in headers}
    media = h.get(b"content-type", b"").split(b";")[0].strip().decode("latin-1").lower()
    size = h.get(b"content-length", b"")
    return (
        (media in COMPRESSED_TYPES or media.endswith("+json"))
        and b"content-encoding" not in h
        and size.isdigit()
        and MIN_BYTES <= int(size) <= MAX_BYTES
    )


class Compress:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._static: dict[tuple[bytes, str], bytes] = {}  # (versioned static URL, encoding) → its packed body
        self._answers: dict[tuple[bytes, str], list[tuple[bytes, bytes]]] = {}  # … → its packed answer's headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        accept = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"accept-encoding"), "")
        encoding = encoding_for(accept)
        if encoding is None:
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []
        query = scope.get("query_string", b"")
        versioned = scope["path"].startswith("/static/") and b"v=" in query
        plain = scope["method"] == "GET" and not any(k.startswith(b"if-") or k == b"range" for k, _ in scope["headers"])
        static_key = (scope["path"].encode() + b"?" + query, encoding) if versioned and plain else None
        if static_key in self._answers:
            # kept whole: the file is neither read again nor compressed (its URL changes with its content)
            start_headers = self._answers[static_key]
            await send({"type": "http.response.start", "status": 200, "headers": start_headers})
            await send({"type": "http.response.body", "body": self._static[static_key], "more_body": False})
            return

        async def packing_send(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                if _compressible(list(message.get("headers", []))):
                    start = message  # held until the whole body is here
                    return
                await send(message)
                return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(bytes(message.get("body", b"")))
            if message.get("more_body", False):
                return
            body = b"".join(chunks)
            chunks.clear()
            packed = self._static.get(static_key) if static_key else None
            if packed is None:
                kept = static_key is not None
                if len(body) > THREAD_BYTES:
                    packed = await anyio.to_thread.run_sync(_pack, body, encoding, kept)
                else:
                    packed = _pack(body, encoding, kept)
                if static_key:
                    if len(self._static) >= _STATIC_CACHE_ENTRIES:
                        self._answers.pop(next(iter(self._static)), None)
                        self._static.pop(next(iter(self._static)))
                    self._static[static_key] = packed
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() not in (b"content-length", b"vary")]
            vary = [v for k, v in start.get("headers", []) if k.lower() == b"vary"]
            headers += [
                (b"content-encoding", encoding.encode()),
                (b"content-length", str(len(packed)).encode()),
                (b"vary", b", ".join([*vary, b"accept-encoding"])),
            ]
            if static_key in self._static and start.get("status") == 200:
                self._answers[static_key] = headers  # the next GET of this URL is answered from here
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": packed, "more_body": False})

        await self.app(scope, receive, packing_send)
