"""Written answers shared by every page that asks for the same writing: a class following its teacher.

When the teacher's Write ends, each phone of the room loads the written text's numbers (the
candidates, the attention of each new token's query, its q, k, v): POST /api/generate with the same
prompt, settings and seed, and max_new_tokens = the tokens written. They are the same numbers for
every phone. The first request computes them (or the teacher's own stream left them here as it
ended); a request that comes while they are being computed waits for them instead of computing them
again; every later one gets them from here. A class of 30 costs the server one writing, not 30.

    answers = SharedAnswers(max_bytes)
    body = await answers.once(key, make)   # make() → the answer's bytes, run once per key at a time
    answers.put(key, body)                 # an answer made elsewhere (a stream that ended)

Only a writing that comes out the same every time is shared: greedy (temperature 0), or sampled
with a fixed seed. Answers are kept least recently used first out, at most `max_bytes` of them.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable

MAX_BYTES = 32 << 20  # a 64-token answer after a 300-token prompt is ~0.4 MB of JSON; a class's is ~50 kB


class SharedAnswers:
    """Answers by key (bytes, as sent), kept in one event loop's process; at most max_bytes of them."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._kept: OrderedDict[Hashable, bytes] = OrderedDict()
        self._making: dict[Hashable, tuple[asyncio.Lock, list[int]]] = {}  # key → (its lock, [waiters])

    def get(self, key: Hashable) -> bytes | None:
        body = self._kept.get(key)
        if body is not None:
            self._kept.move_to_end(key)
        return body

    def put(self, key: Hashable, body: bytes) -> None:
        """Keep `body` under `key` (an answer larger than max_bytes is not kept)."""
        old = self._kept.pop(key, None)
        if old is not None:
            self.bytes -= len(old)
        if len(body) > self.max_bytes:
            return
        self._kept[key] = body
        self.bytes += len(body)
        while self.bytes > self.max_bytes:
            _, dropped = self._kept.popitem(last=False)
            self.bytes -= len(dropped)

    async def once(self, key: Hashable, make: Callable[[], Awaitable[bytes]]) -> bytes:
        """The answer of `key`: kept, or made by make() once however many ask at the same time (those
        that come while it is being made wait for it). A make() that fails fails for its caller only:
        the next in line makes it itself."""
        found = self.get(key)
        if found is not None:
            return found
        lock, waiting = self._making.setdefault(key, (asyncio.Lock(), [0]))
        waiting[0] += 1
        try:
            async with lock:
                found = self.get(key)
                if found is None:
                    found = await make()
                    self.put(key, found)
                return found
        finally:
            waiting[0] -= 1
            if not waiting[0]:
                self._making.pop(key, None)
