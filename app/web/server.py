"""The server process of `attention3d`: uvicorn, with the guards a school's LAN needs.

uvicorn's HTTP protocols time out an idle kept-alive connection, but never a request that is still
arriving: a client that sends one header byte every few seconds holds a socket (and a file
descriptor) for ever, and a few thousand of them starve the server (slowloris). GuardedHttp is
uvicorn's httptools protocol with, per connection:

- a header deadline: the request line and headers must be complete HEADER_TIMEOUT seconds after
  the connection opened (first request) or after the request's first byte (later requests);
- a header size: the request line and headers together are at most MAX_HEADER_BYTES, else the
  answer is 431 and the connection is closed, counted on the raw bytes while they arrive (a 40 MB
  header is refused after its first 16 KB, never held: uvicorn itself reads a header whole);
- a body rate: while a body arrives, each BODY_WINDOW seconds must bring BODY_MIN_RATE bytes a
  second (not counted while the app itself has paused reading);

and per client address (this process's counts; with --workers N and --redis, every worker's together,
counted in Redis by app.web.shared_counts):

- at most CONNECTIONS_PER_ADDRESS connections open at once, and CONNECTION_RATE new ones a second
  (a token bucket, bursts of 3x): connections past either are closed at once;
- REQUEST_RATE requests a second (bursts of 4x): past it the answer is 429, without the app.

Behind a reverse proxy (ATTENTION_PROXY=its address, docs/security.md) every client arrives from
the proxy's address: its connections skip the per-address limits here (the proxy applies its own),
and only its X-Forwarded-For is believed (by uvicorn; nobody else's), so the app's per-address
rules (followers in a room, votes) see each student's own address.

A refused or timed-out connection costs nothing more than its socket, so one device cannot take
the sockets or the event loop from the class. The WebSocket frame limit (ws_max_size) is checked
by the websockets library on the frame's header, before its payload is read. Every number is in
app/limits.py and can be changed through the environment (docs/security.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import time
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app import limits
from app.web.shared_counts import SharedCounts


def setting(name: str, default: int) -> int:
    """ATTENTION_<name> from the environment (a whole number ≥ 0), else the default."""
    raw = os.environ.get("ATTENTION_" + name, "").strip()
    if not raw:
        return default
    if not raw.isdigit():
        raise ValueError(f"ATTENTION_{name} must be a whole number ≥ 0, not {raw!r}")
    return int(raw)


class _Bucket:
    """A token bucket: `rate` a second, at most `burst` at once."""

    __slots__ = ("last", "tokens")

    def __init__(self, burst: float) -> None:
        self.tokens, self.last = burst, time.monotonic()

    def take(self, rate: float, burst: float) -> bool:
        now = time.monotonic()
        self.tokens = min(burst, self.tokens + (now - self.last) * rate)
        self.last = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class Addresses:
    """What each client address holds and has asked for lately (one process)."""

    def __init__(self) -> None:
        self.open: dict[str, set[asyncio.BaseTransport]] = {}
        self.connects: dict[str, _Bucket] = {}
        self.requests: dict[str, _Bucket] = {}
        self.logged: dict[str, float] = {}  # when each address's last refusal was logged
        self.connection_rate = setting("CONNECTION_RATE", limits.CONNECTION_RATE)
        self.request_rate = setting("REQUEST_RATE", limits.REQUEST_RATE)
        self.max_open = setting("CONNECTIONS_PER_ADDRESS", limits.CONNECTIONS_PER_ADDRESS)
        self.proxies = set(proxies())

    def admit(self, address: str, transport: asyncio.BaseTransport, share: int = 1) -> bool:
        """Whether a new connection from `address` may stay open (and then it is counted)."""
        if address in self.proxies:
            return True
        if not self.allowed(address, len(self.held(address)), share):
            return False
        self.held(address).add(transport)
        return True

    def held(self, address: str) -> set[asyncio.BaseTransport]:
        """The connections of `address` open in this process."""
        held = self.open.setdefault(address, set())
        if len(held) >= self.max_open // 2:  # sockets that became WebSockets leave no connection_lost here
            held.difference_update([t for t in held if t.is_closing()])
        return held

    def hold(self, address: str, transport: asyncio.BaseTransport) -> int:
        """Count a connection of `address` (its rules are checked elsewhere: in Redis); how many it held before."""
        held = self.held(address)
        before = len(held)
        held.add(transport)
        return before

    def allowed(self, address: str, mine: int, share: int = 1) -> bool:
        """This process's rules for a new connection of `address`, which holds `mine` here already: the
        connection rate and the open connections, each divided by `share` (the workers, while the
        shared counts in Redis can't be reached)."""
        if len(self.connects) > 4096:  # forget addresses whose buckets are full again
            self.connects = {a: b for a, b in self.connects.items() if time.monotonic() - b.last < 60}
        rate = self.connection_rate / share
        bucket = self.connects.setdefault(address, _Bucket(3 * rate))
        return bucket.take(rate, 3 * rate) and mine < max(1, self.max_open // share)

    def should_log(self, address: str) -> bool:
        """Whether a refusal of `address` goes to the log now: its first, then one a minute."""
        now = time.monotonic()
        if len(self.logged) > 4096:
            self.logged = {a: t for a, t in self.logged.items() if now - t < 60}
        if now - self.logged.get(address, -60.0) < 60:
            return False
        self.logged[address] = now
        return True

    def release(self, address: str, transport: asyncio.BaseTransport) -> None:
        held = self.open.get(address)
        if held is not None:
            held.discard(transport)
            if not held:
                del self.open[address]

    def request(self, address: str, share: int = 1) -> bool:
        if address in self.proxies:
            return True
        if len(self.requests) > 4096:
            self.requests = {a: b for a, b in self.requests.items() if time.monotonic() - b.last < 60}
        rate = self.request_rate / share
        bucket = self.requests.setdefault(address, _Bucket(4 * rate))
        return bucket.take(rate, 4 * rate)


_addresses: Addresses | None = None
_shared: SharedCounts | None = None
_shared_known = False


def addresses() -> Addresses:
    global _addresses
    if _addresses is None:
        _addresses = Addresses()
    return _addresses


def shared_counts() -> SharedCounts | None:
    """The counts every worker shares (in Redis) when `attention3d --workers N` (N > 1) runs with --redis;
    None when this process is the only one (its own counts are the address's)."""
    global _shared, _shared_known
    if not _shared_known:
        url, workers = os.environ.get("ATTENTION_REDIS_URL", ""), setting("WORKERS", 1)
        if url and workers > 1:
            a = addresses()
            _shared = SharedCounts(url, workers, a.max_open, a.connection_rate, a.request_rate)
        _shared_known = True
    return _shared


def _counted(app: Any, shared: SharedCounts, address: str) -> Any:
    """The app behind the shared request count of `address` (429 past it)."""

    async def counted(scope: Any, receive: Any, send: Any) -> None:
        allowed = await shared.request(address)
        if allowed is None:  # Redis can't be reached: this process's share of the rate
            allowed = addresses().request(address, shared.workers)
        await (app if allowed else _too_many_requests)(scope, receive, send)

    return counted


async def _too_many_requests(scope: Any, receive: Any, send: Any) -> None:
    body = b"Too many requests from this address: wait a moment\n"
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 429, "headers": [*headers, (b"retry-after", b"1")]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


def _too_large(limit: int) -> bytes:
    body = f"Request header fields too large: the request line and headers are at most {limit:,} bytes\n".encode()
    head = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
    return head + b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body) + body


class GuardedHttp(HttpToolsProtocol):
    """uvicorn's httptools protocol with header and body deadlines and per-address limits."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timeout = setting("HEADER_TIMEOUT", limits.HEADER_TIMEOUT_SECONDS)
        self._body_rate = setting("BODY_MIN_RATE", limits.BODY_MIN_BYTES_PER_SECOND)
        self._max_head = setting("MAX_HEADER_BYTES", limits.MAX_HEADER_BYTES)
        self._timer: asyncio.TimerHandle | None = None
        self._body_seen = 0
        self._body_checked = 0
        self._address = ""
        self._head_done = False  # the current request's headers are complete (its body, if any, is next)
        self._head_bytes = 0  # bytes of the current request's head read so far (while it is incomplete)
        self._refused = False  # answered 431: nothing more is read from this connection
        self._admission: asyncio.Task[None] | None = None  # the shared count of this connection (in Redis)
        self._waiting: list[bytes] | None = None  # what arrived before that count was known

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._address = self.client[0] if self.client else ""
        counts, shared = addresses(), shared_counts()
        if shared is None or self._address in counts.proxies:
            if not counts.admit(self._address, transport):
                transport.abort()  # refused: it never reaches the app
                return
        else:  # nothing reaches the parser until Redis has counted it with every other worker's
            self._waiting = []
            self._admission = self.loop.create_task(self._admit(shared, counts.hold(self._address, transport)))
        self._arm(self._header_timeout, self._headers_late)

    async def _admit(self, shared: SharedCounts, mine: int) -> None:
        allowed = await shared.admit(self._address, mine)
        if allowed is None:  # Redis can't be reached: this process's share of the caps
            allowed = addresses().allowed(self._address, mine, shared.workers)
        waiting, self._waiting = self._waiting, None
        if not allowed:
            self.transport.abort()
        elif not self.transport.is_closing():
            for data in waiting or ():  # what arrived meanwhile, in order
                self.data_received(data)
            self.transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        """Feed the parser; a head still incomplete past MAX_HEADER_BYTES is refused with 431. Only
        bytes read while the head is incomplete are counted (before it completes they are all the
        head's), so the count never exceeds the head's size."""
        if self._waiting is not None:  # not counted yet: kept, and no more read (uvloop reads once
            self._waiting.append(data)  # before a pause asked for in connection_made takes effect)
            self.transport.pause_reading()
            return
        if self._refused:
            return
        if not self._head_done:
            self._head_bytes += len(data)
        super().data_received(data)
        if not self._refused and not self._head_done and self._head_bytes > self._max_head:
            self._refuse_head()

    def _refuse_head(self) -> None:
        self._refused = True
        self._disarm()
        if not self.transport.is_closing():
            self.transport.write(_too_large(self._max_head))
            self.transport.close()
            if addresses().should_log(self._address):
                self.logger.info(
                    "%s: 431, request headers past %s bytes (the connection is closed)",
                    self._address,
                    f"{self._max_head:,}",
                )

    def handle_websocket_upgrade(self) -> None:
        if not self._refused:
            super().handle_websocket_upgrade()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        counts, shared = addresses(), shared_counts()
        counts.release(self._address, self.transport)
        if shared is not None and self._address not in counts.proxies:
            shared.release(self._address, len(counts.open.get(self._address, ())))
        super().connection_lost(exc)

    def _arm(self, seconds: float, then: Any) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, then)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _close_late(self, what: str | None = None) -> None:
        """408 and close; `what` came too slowly: one line in the log (at most one a minute per address)."""
        self._timer = None
        if not self.transport.is_closing():
            self.transport.write(_TIMEOUT)
            self.transport.close()
            if what is not None and addresses().should_log(self._address):
                self.logger.info("%s: 408, %s (the connection is closed)", self._address, what)

    def _headers_late(self) -> None:
        # a connection that sent nothing (a browser's spare one) is closed without a word
        late = f"a request's headers were not complete after {self._header_timeout} s"
        self._close_late(late if self._head_bytes else None)

    def on_message_begin(self) -> None:
        if self._refused:
            return
        super().on_message_begin()
        if self._timer is None:  # a later request on a kept-alive connection: its headers' deadline
            self._arm(self._header_timeout, self._headers_late)

    def on_url(self, url: bytes) -> None:
        if not self._refused:
            super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self._refused:
            super().on_header(name, value)

    def on_headers_complete(self) -> None:
        if self._refused:
            return
        self._head_done, self._head_bytes = True, 0
        # the head as it arrived: "METHOD url HTTP/1.1", each "name: value", each line's CRLF, the blank line
        size = (
            len(self.parser.get_method()) + len(self.url) + 11 + sum(len(n) + len(v) + 4 for n, v in self.headers) + 2
        )
        if size > self._max_head:
            self._refuse_head()
            return
        self._disarm()
        upgrade = self.parser.should_upgrade() and self._should_upgrade()
        shared = shared_counts()
        if upgrade or self._address in addresses().proxies:
            gate = None
        elif shared is not None:  # the app behind the count every worker shares
            gate = _counted(self.app, shared, self._address)
        else:  # this process's count
            gate = None if addresses().request(self._address) else _too_many_requests
        if gate is None:
            super().on_headers_complete()
        else:
            app, self.app = self.app, gate
            try:
                super().on_headers_complete()
            finally:
                self.app = app
        if not upgrade:
            self._body_seen = self._body_checked = 0
            self._arm(limits.BODY_WINDOW_SECONDS, self._body_check)

    def on_body(self, body: bytes) -> None:
        if self._refused:
            return
        self._body_seen += len(body)
        super().on_body(body)

    def on_message_complete(self) -> None:
        if self._refused:
            return
        self._head_done, self._head_bytes = False, 0  # what comes next is the next request's head
        self._disarm()
        super().on_message_complete()

    def _body_check(self) -> None:
        """Each window of a body still arriving must bring the minimum rate, unless the app paused reading."""
        self._timer = None
        cycle = self.cycle
        if cycle is None or not cycle.more_body or cycle.response_complete or self.transport.is_closing():
            return
        brought = self._body_seen - self._body_checked
        self._body_checked = self._body_seen
        if not self.flow.read_paused and brought < self._body_rate * limits.BODY_WINDOW_SECONDS:
            self._close_late(f"a request body came slower than {self._body_rate:,} bytes a second")
            return
        self._arm(limits.BODY_WINDOW_SECONDS, self._body_check)


def raise_open_files_limit() -> tuple[int, int]:
    """Raise this process's soft limit on open files to its hard limit; (soft, hard) after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def new_loop() -> asyncio.AbstractEventLoop:
    """The server's event loop (uvloop when installed, as uvicorn picks), whose TLS handshakes must
    finish within the header deadline: a client that opens TLS and never finishes its hello holds
    no socket longer than a half-sent request does (asyncio's and uvloop's default is 60 s)."""
    try:
        import uvloop

        base: type[asyncio.AbstractEventLoop] = uvloop.Loop
    except ImportError:  # pragma: no cover - uvicorn[standard] brings uvloop
        base = asyncio.SelectorEventLoop

    class GuardedLoop(base):  # type: ignore[valid-type,misc]
        async def create_server(self, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("ssl") is not None:
                kwargs.setdefault("ssl_handshake_timeout", setting("HEADER_TIMEOUT", limits.HEADER_TIMEOUT_SECONDS))
            return await super().create_server(*args, **kwargs)

    return GuardedLoop()


def proxies() -> list[str]:
    """The reverse proxies' addresses ($ATTENTION_PROXY, comma-separated; none by default)."""
    return [p.strip() for p in os.environ.get("ATTENTION_PROXY", "").split(",") if p.strip()]


def uvicorn_options() -> dict[str, Any]:
    """The uvicorn.run keywords of a LAN server."""
    return {
        # X-Forwarded-For is believed from the named proxies only (uvicorn's default trusts 127.0.0.1)
        "proxy_headers": bool(proxies()),
        "forwarded_allow_ips": ",".join(proxies()) or "",
        "http": GuardedHttp,
        "loop": "app.web.server:new_loop",
        "ws_max_size": limits.WS_MAX_MESSAGE_BYTES,
        # 20 s, not uvicorn's 5: a page's next request then rarely races the close of its idle connection
        "timeout_keep_alive": setting("IDLE_TIMEOUT", limits.IDLE_TIMEOUT_SECONDS),
        "timeout_worker_healthcheck": 30,  # --workers: 5 s killed workers still importing numpy on a busy machine
        # no per-message deflate: the classroom's messages are ~200 bytes, and compressing each copy
        # for every follower cost a quarter of the server's CPU per change (bench.rooms)
        "ws_per_message_deflate": False,
    }
