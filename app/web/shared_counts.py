"""The per-address limits of app.web.server, counted in Redis: one count for every worker process.

With `attention3d --workers N --redis URL` a student's connections and requests reach any of the N
processes; counted per process, one address would get N times the caps. Here they are counted once,
in Redis, by two Lua scripts (each one round trip, atomic):

- ADMIT, at each new connection: the address's open connections (a hash: process → its count, each
  process writing its own count as it is, so a lost update mends itself at the next one; processes
  whose `alive` key expired, renewed by each ADMIT and every ALIVE_SECONDS / 3, are left out) and
  its connection rate (a token bucket);
- TAKE, for requests: tokens from the address's request bucket. A process takes a few at a time
  (lease(): never more than a quarter of a burst over the processes) and spends them itself, so a
  page of 30 requests costs about two round trips, and an address never gets more than the bucket
  holds, whatever N: at most, tokens leased by one process go unused for a second.

Every Redis call has a deadline (CALL_SECONDS; one late answer is tried again once, as a process
that was paused finds every deadline passed). While Redis can't be reached, calls answer None at
once for DOWN_SECONDS and the server counts in each process with every cap divided by N, so the
caps hold then too; one log line says so, and one says when the counts are shared again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from typing import Any

log = logging.getLogger("uvicorn.error")
CALL_SECONDS = 1.0  # one Redis call, connection included (a LAN's Redis answers in well under 1 ms; a
# busy 2-core machine's, shared with the workers, in up to a few hundred)
DOWN_SECONDS = 5.0  # after a failed call, count in this process for this long before trying Redis again
ALIVE_SECONDS = 30  # a process's `alive` key lives this long, renewed every third of it
PREFIX = "a3d:addr:"

_ADMIT = """
local process, mine, most = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local rate, burst, alive = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
redis.call('SET', alive .. process, 1, 'EX', ARGV[7])
redis.call('HSET', KEYS[1], process, mine)
local open, fields = 0, redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  if fields[i] == process or redis.call('EXISTS', alive .. fields[i]) == 1 then
    open = open + tonumber(fields[i + 1])
  else
    redis.call('HDEL', KEYS[1], fields[i])
  end
end
redis.call('EXPIRE', KEYS[1], 3600)
if open >= most then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local b = redis.call('HMGET', KEYS[2], 'tokens', 'last')
local tokens = math.min(burst, (tonumber(b[1]) or burst) + (now - (tonumber(b[2]) or now)) * rate)
if tokens < 1 then return -1 end
redis.call('HSET', KEYS[2], 'tokens', tostring(tokens - 1), 'last', tostring(now))
redis.call('EXPIRE', KEYS[2], math.ceil(burst / rate) + 1)
redis.call('HSET', KEYS[1], process, mine + 1)
return 1
"""

_TAKE = """
local rate, burst, want = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local b = redis.call('HMGET', KEYS[1], 'tokens', 'last')
local tokens = math.min(burst, (tonumber(b[1]) or burst) + (now - (tonumber(b[2]) or now)) * rate)
local taken = math.min(want, math.floor(tokens))
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens - taken), 'last', tostring(now))
redis.call('EXPIRE', KEYS[1], math.ceil(burst / rate) + 1)
return taken
"""


class SharedCounts:
    """One process's view of the counts in Redis (made in its event loop, on first use)."""

    def __init__(self, url: str, workers: int, max_open: int, connection_rate: int, request_rate: int) -> None:
        self.url = url
        self.workers = workers
        self.max_open = max_open
        self.connection_rate = connection_rate
        self.request_rate = request_rate
        self.process = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._redis: Any = None
        self._scripts: dict[str, Any] = {}
        self._down_until = 0.0
        self._credit: dict[str, tuple[int, float]] = {}  # address → (request tokens leased, when)
        self._tasks: set[asyncio.Task[None]] = set()

    def lease(self) -> int:
        """Request tokens taken from Redis at once: all processes' leases together are at most a
        quarter of a burst (4 x the rate), so an address near its limit is refused a little early, never late."""
        return max(1, self.request_rate // self.workers)

    def _client(self) -> Any:
        if self._redis is None:
            import redis.asyncio as aioredis

            self._redis = aioredis.from_url(
                self.url, socket_timeout=CALL_SECONDS, socket_connect_timeout=CALL_SECONDS, decode_responses=True
            )
            self._scripts = {"admit": self._redis.register_script(_ADMIT), "take": self._redis.register_script(_TAKE)}
            self._spawn(self._stay_alive())
        return self._redis

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _stay_alive(self) -> None:
        """Renew this process's `alive` key: while it lives, the other processes count its connections."""
        while True:
            await self._call(lambda r: r.set(PREFIX + "alive:" + self.process, 1, ex=ALIVE_SECONDS))
            await asyncio.sleep(ALIVE_SECONDS / 3)

    async def _call(self, make: Any) -> Any:
        """The call's answer, or None while Redis can't be reached (at once for DOWN_SECONDS after a failure)."""
        if time.monotonic() < self._down_until:
            return None
        from redis.exceptions import RedisError
        from redis.exceptions import TimeoutError as RedisTimeout

        try:
            try:
                async with asyncio.timeout(CALL_SECONDS):
                    answer = await make(self._client())
            except (TimeoutError, RedisTimeout):  # once more: a late answer may be this process's pause, not Redis
                async with asyncio.timeout(CALL_SECONDS):
                    answer = await make(self._client())
        except (RedisError, OSError, TimeoutError) as e:
            if not self._down_until:
                log.warning(
                    "per-address limits: Redis can't be reached (%s): each worker counts its own share until it can",
                    type(e).__name__,
                )
            self._down_until = time.monotonic() + DOWN_SECONDS
            return None
        if self._down_until:
            log.warning("per-address limits: counted in Redis again")
            self._down_until = 0.0
        return answer

    async def admit(self, address: str, mine: int) -> bool | None:
        """Whether a new connection from `address` may stay open (`mine`: this process's open ones of
        it before this one); None while Redis can't be reached."""
        keys = [PREFIX + address + ":open", PREFIX + address + ":connects"]
        rate = self.connection_rate
        args = [self.process, mine, self.max_open, rate, 3 * rate, PREFIX + "alive:", ALIVE_SECONDS]
        answer = await self._call(lambda r: self._scripts["admit"](keys=keys, args=args))
        return None if answer is None else int(answer) == 1

    def release(self, address: str, mine: int) -> None:
        """This process now holds `mine` connections of `address` (written soon, in the background)."""
        key = PREFIX + address + ":open"
        if mine:
            self._spawn(self._call(lambda r: r.hset(key, self.process, mine)))
        else:
            self._spawn(self._call(lambda r: r.hdel(key, self.process)))

    async def request(self, address: str) -> bool | None:
        """Whether `address` may make one more request now; None while Redis can't be reached."""
        now = time.monotonic()
        credit, when = self._credit.get(address, (0, 0.0))
        if credit and now - when < 1.0:
            self._credit[address] = (credit - 1, when)
            return True
        if len(self._credit) > 4096:  # forget leases of a second ago and more
            self._credit = {a: c for a, c in self._credit.items() if now - c[1] < 1.0}
        rate = self.request_rate
        args = [rate, 4 * rate, self.lease()]
        taken = await self._call(lambda r: self._scripts["take"](keys=[PREFIX + address + ":requests"], args=args))
        if taken is None:
            return None
        if int(taken) < 1:
            self._credit.pop(address, None)
            return False
        self._credit[address] = (int(taken) - 1, now)
        return True
