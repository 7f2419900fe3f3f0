"""How big answers go out (bodies come in through app.web.http).

- preferred: which of the offered media types the Accept header prefers (q-values honoured).
- PARSE_SLOTS: PARSE_SLOTS large bodies may be parsed into numbers at once (parsing JSON is most of
  a request's memory); the rest wait, holding only their bytes.
- SLOTS: COMPUTE_SLOTS requests may compute and send a big answer at once; the rest wait.
- in_slot / Answer: run the work in a worker thread holding a slot until its answer is sent,
  so at most COMPUTE_SLOTS big answers are in memory however many clients ask.
- OVERVIEW_LANE: overviews take at most one of the SLOTS, so a sentence's view never waits behind two.
- Busy: the queue for the slots is bounded. A request that would wait longer than MAX_WAIT_S (by
  the recent time a slot is held), or find MAX_WAITING requests already waiting, is refused at
  once with 503 and a Retry-After (seconds) instead of waiting in a long queue.
- stream_in_slot / StreamedAnswer: the same for an answer that leaves part by part while the
  rest is still being computed (a frame's stages: the wire and the math overlap).
- KEPT: in_slot(keep=True) for an answer that depends on its arguments only (a model's weights do not
  change while the server runs): the last ones made are kept, up to limits.KEPT_ANSWER_BYTES, so that
  a class whose phones all open the same view at once has it computed once: the requests that come
  while it is being made wait for it, without a slot and without being counted in the queue.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from functools import partial
from typing import Any, TypeVar, cast

import anyio
import anyio.to_thread
from fastapi import Response
from starlette.exceptions import HTTPException
from starlette.types import Receive, Scope, Send

from app import limits

MAX_WAITING = 64  # requests waiting for a slot; the next one is refused (503)
MAX_WAIT_S = 2.0  # a request that would wait longer than this for a slot is refused (503)
CHUNK = 1 << 20  # an answer goes out at most this many bytes at a time: the server's send buffer stays small
SLOTS = anyio.CapacityLimiter(limits.COMPUTE_SLOTS)
PARSE_SLOTS = anyio.CapacityLimiter(limits.PARSE_SLOTS)
# overviews computing at once: one, so that the view of a sentence (the page waits on it to draw) always
# finds a slot that no overview holds; an overview is asked for once its view is in, and may wait
OVERVIEW_LANE = anyio.CapacityLimiter(1)
T = TypeVar("T")


def q_value(params: Iterable[str]) -> float:
    """The q-value among the parameters of one item of an Accept or Accept-Encoding header ("q=0.5"):
    1 when it has none, clamped to 0…1, and 0 when it is not a number (NaN included)."""
    q = 1.0
    for param in params:
        key, _, value = param.partition("=")
        if key.strip().lower() == "q":
            try:
                q = min(max(float(value), 0.0), 1.0)
            except ValueError:
                q = 0.0
    return 0.0 if q != q else q


def _quality(accept: str, media: str) -> tuple[float, int]:
    """The q-value the Accept header gives media, and how specific the range that gave it was
    (2: the type itself, 1: type/*, 0: */*, -1: not accepted at all)."""
    kind = media.split("/")[0]
    best = (0.0, -1)
    for item in accept.split(","):
        parts = [p.strip() for p in item.split(";")]
        rng = parts[0].lower()
        specific = 2 if rng == media else 1 if rng == f"{kind}/*" else 0 if rng == "*/*" else -1
        if specific < best[1] or specific < 0:
            continue
        q = q_value(parts[1:])
        best = (q, specific) if specific > best[1] else (max(q, best[0]), specific)
    return best


def preferred(accept: str | None, offers: tuple[str, ...]) -> str:
    """The offer the client prefers: the highest q-value, a named type over a wildcard, then the first
    offer (so "*/*" or no Accept at all gets offers[0]). A type matched only by a wildcard never wins
    over offers[0]; q=0 means "not this one"."""
    if not accept:
        return offers[0]
    eligible = []
    for i, media in enumerate(offers):
        q, specific = _quality(accept, media)
        if q > 0 and (specific == 2 or i == 0):
            eligible.append((q, -i, media))
    return max(eligible)[2] if eligible else offers[0]


Body = bytes | list[memoryview]


class Answer(Response):
    """A response sent as its body lies in memory, buffer by buffer (a frame's arrays are sent
    from the arrays themselves), that can hand its compute slot back once sent or abandoned."""

    def __init__(
        self,
        body: Body,
        media_type: str,
        release: Callable[[], None] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self._parts = [memoryview(body)] if isinstance(body, bytes) else body
        size = sum(len(p) for p in self._parts)
        super().__init__(None, media_type=media_type, headers={**(headers or {}), "content-length": str(size)})
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            pieces = [part[i : i + CHUNK] for part in self._parts for i in range(0, max(len(part), 1), CHUNK)]
            last = len(pieces) - 1
            for i, piece in enumerate(pieces):
                await send({"type": "http.response.body", "body": piece, "more_body": i < last})
        finally:
            if self._release is not None:
                self._release()


class _Held:
    """How long a slot is held, lately: an exponentially weighted mean of the last requests' times."""

    def __init__(self, weight: float = 0.1) -> None:
        self.mean = 0.0
        self.weight = weight

    def add(self, seconds: float) -> None:
        self.mean += self.weight * (seconds - self.mean)


HELD = _Held()


def busy(retry_after: float) -> HTTPException:
    """The 503 of a full queue: detail as every error's, and when to try again."""
    seconds = max(1, math.ceil(retry_after))
    msg = f"the server is busy with other requests: try again in {seconds} s"
    detail = [{"loc": [], "msg": msg, "type": "busy"}]
    return HTTPException(503, detail=cast(Any, detail), headers={"Retry-After": str(seconds)})  # errors.py: a list


def expected_wait() -> float:
    """Seconds a request that asks now would wait for one of the SLOTS, by the recent time one is held."""
    return _wait_for(SLOTS)


def _wait_for(limiter: anyio.CapacityLimiter) -> float:
    if limiter.available_tokens > 0:
        return 0.0
    return (limiter.statistics().tasks_waiting + 1) * HELD.mean / limiter.total_tokens


def refuse_if_busy(lane: anyio.CapacityLimiter | None = None) -> None:
    """busy() when the queue for the SLOTS (or for a lane's) is full: too long a wait, or too many waiting."""
    wait = expected_wait() if lane is None else _wait_for(lane)
    if wait > MAX_WAIT_S or (lane or SLOTS).statistics().tasks_waiting >= MAX_WAITING:
        raise busy(wait)


async def _borrowed(work: Callable[..., T], *args: Any) -> tuple[T, Callable[[], None]]:
    """work(*args) run in a worker thread while holding one of the SLOTS, and the call that gives
    the slot back (the answer calls it once sent; a failure gives it back at once). Refused with
    busy() when the queue is full."""
    refuse_if_busy()
    borrower = object()
    await SLOTS.acquire_on_behalf_of(borrower)
    start = time.perf_counter()

    def release() -> None:
        HELD.add(time.perf_counter() - start)
        SLOTS.release_on_behalf_of(borrower)

    try:
        return await anyio.to_thread.run_sync(work, *args), release
    except BaseException:
        release()
        raise


class Kept:
    """The last answers made, by their maker and arguments, up to `budget` bytes in all (the least
    recently asked for goes first); an answer larger than an eighth of the budget is not kept."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._answers: OrderedDict[Hashable, bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self.making: dict[Hashable, anyio.Event] = {}  # answers being made now (the event loop's own record)

    def get(self, key: Hashable) -> bytes | None:
        with self._lock:
            body = self._answers.get(key)
            if body is not None:
                self._answers.move_to_end(key)
            return body

    def put(self, key: Hashable, body: bytes) -> None:
        if len(body) > self.budget // 8:
            return
        with self._lock:
            old = self._answers.pop(key, None)
            self._size += len(body) - (len(old) if old is not None else 0)
            self._answers[key] = body
            while self._size > self.budget:
                _, gone = self._answers.popitem(last=False)
                self._size -= len(gone)


KEPT = Kept(limits.KEPT_ANSWER_BYTES)


def _frozen(value: Any) -> Hashable:
    """`value` as a key: lists and tuples as tuples (a list of heads), the rest as they are."""
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return cast(Hashable, value)


def _keeping(key: Hashable, encode: Callable[..., Body], *args: Any) -> Body:
    """encode(*args), kept under `key` when it is one piece (bytes)."""
    body = encode(*args)
    if isinstance(body, bytes):
        KEPT.put(key, body)
    return body


async def in_slot(
    media_type: str,
    encode: Callable[..., Body],
    *args: Any,
    headers: dict[str, str] | None = None,
    lane: anyio.CapacityLimiter | None = None,
    keep: bool = False,
) -> Response:
    """Run encode(*args) in a worker thread holding one of the SLOTS until its answer is sent.

    lane: a limiter of its own that the request holds while it waits for a slot and computes (as
    OVERVIEW_LANE), so that requests of its kind never hold more slots than the lane has.
    keep: the answer depends on `args` only: one kept in KEPT is sent without a slot, and one made is kept."""
    if keep:
        key = (encode, _frozen(args))
        while (body := KEPT.get(key)) is None and (making := KEPT.making.get(key)) is not None:
            await making.wait()  # another request is making it: its answer, once kept, is this one's too
        if body is not None:
            return Answer(body, media_type, None, headers)
        made = KEPT.making[key] = anyio.Event()
        try:
            return await in_slot(media_type, partial(_keeping, key, encode), *args, headers=headers, lane=lane)
        finally:
            del KEPT.making[key]
            made.set()
    if lane is None:
        content, release = await _borrowed(encode, *args)
    else:
        refuse_if_busy(lane)
        async with lane:
            content, release = await _borrowed(encode, *args)
    return Answer(content, media_type, release, headers)


class StreamedAnswer(Response):
    """An answer whose first parts are ready and whose later parts are made by a generator in a
    worker thread: each part leaves as soon as it is made, while the next is being computed.

    The worker hands each part over without waiting for the event loop (a deque and a wake-up call:
    waiting for the loop to take each part stalled the computation while the loop was writing), at
    most AHEAD parts ahead of what has been sent; it stops at its next part once the answer ends."""

    AHEAD = 16

    def __init__(
        self,
        ready: list[memoryview],
        later: Iterator[memoryview],
        size: int,
        media_type: str,
        release: Callable[[], None],
    ) -> None:
        super().__init__(None, media_type=media_type, headers={"content-length": str(size)})
        self._ready, self._later, self._release = ready, later, release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        loop = asyncio.get_running_loop()
        made: deque[memoryview | None] = deque()  # None: the last part has been made
        room = threading.Semaphore(self.AHEAD)
        ended = threading.Event()  # the answer is over (sent, or abandoned): the worker stops
        arrived = asyncio.Event()

        def hand(part: memoryview | None) -> None:
            made.append(part)
            loop.call_soon_threadsafe(arrived.set)

        def produce() -> None:
            for part in self._later:
                while not room.acquire(timeout=0.1):
                    if ended.is_set():
                        return
                if ended.is_set():
                    return
                hand(part)
            hand(None)

        async def body(part: memoryview) -> None:
            for i in range(0, len(part), CHUNK):
                await send({"type": "http.response.body", "body": part[i : i + CHUNK], "more_body": True})

        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(anyio.to_thread.run_sync, produce)
                try:
                    await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
                    for first in self._ready:
                        await body(first)
                    while True:
                        while not made:
                            arrived.clear()
                            if not made:
                                await arrived.wait()
                        part = made.popleft()
                        if part is None:
                            break
                        await body(part)
                        room.release()
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                finally:
                    ended.set()
        finally:
            self._release()


Start = tuple[list[memoryview], Iterator[memoryview], int]


async def stream_in_slot(media_type: str, start: Callable[..., Start], *args: Any) -> Response:
    """Like in_slot, for an answer that can leave in parts: start(*args) runs in a worker thread
    and gives the parts ready so far (it may still refuse the request), the generator of the
    rest, and the total size."""
    (ready, later, size), release = await _borrowed(start, *args)
    return StreamedAnswer(ready, later, size, media_type, release)
