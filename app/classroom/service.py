"""The classroom of one app: its store and broker, made on first use (no set-up for apps that never use it)."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import cached_property
from typing import Any

from app.classroom import limits
from app.classroom.broker import Broker, MemoryBroker, RedisBroker
from app.classroom.database import Unavailable
from app.classroom.store import Store, database_url, default_data_dir
from app.errors import ClientError

REDIS_ENV = "ATTENTION_REDIS_URL"
log = logging.getLogger(__name__)
_lock = threading.Lock()


class Classroom:
    def __init__(self, redis_url: str | None) -> None:
        self.redis_url = redis_url
        self._puts: dict[str, deque[float]] = {}

    @cached_property
    def store(self) -> Store:
        """The lessons' store: --database's, else the data folder's SQLite file (database.Unavailable
        when PostgreSQL can't be reached: the next use tries again)."""
        return Store.open(default_data_dir(), database_url())

    @cached_property
    def room_store(self) -> Store:
        """Where the memory broker keeps its rooms: always this machine's data folder, so that rooms
        keep working while a PostgreSQL server for the lessons is away. A data folder that can't be
        used at all (a full or read-only disk with no database on it yet) leaves the rooms in memory
        only: they work, but do not outlive a restart."""
        try:
            return self.store if database_url() is None else Store(default_data_dir())
        except Unavailable as e:
            log.warning("classroom: rooms are kept in memory only: %s", e)
            return Store.in_memory()

    @cached_property
    def broker(self) -> Broker:
        if self.redis_url:
            return RedisBroker(self.redis_url)
        return MemoryBroker(self.room_store)

    async def ready_broker(self) -> Broker:
        broker = self.broker
        if isinstance(broker, RedisBroker):
            await broker.start()
        return broker

    def count_put(self, code: str) -> None:
        """429 past MAX_PUTS_PER_SECOND state changes of one room in the last second."""
        now = time.monotonic()
        times = self._puts.setdefault(code, deque())
        while times and times[0] <= now - 1:
            times.popleft()
        if len(times) >= limits.MAX_PUTS_PER_SECOND:
            raise ClientError(
                429, ["path", "code"], f"at most {limits.MAX_PUTS_PER_SECOND} state changes a second", "rate_limit"
            )
        times.append(now)

    async def close(self) -> None:
        if "broker" in self.__dict__:
            await self.broker.close()
        if "room_store" in self.__dict__ and self.room_store is not self.__dict__.get("store"):
            self.room_store.close()
        if "store" in self.__dict__:
            self.store.close()


def classroom(app: Any) -> Classroom:
    """The app's classroom (app.state.classroom), made on first use."""
    found: Classroom | None = getattr(app.state, "classroom", None)
    if found is None:
        with _lock:
            found = getattr(app.state, "classroom", None)
            if found is None:
                found = Classroom(os.environ.get(REDIS_ENV) or None)
                app.state.classroom = found
    return found


@asynccontextmanager
async def lifespan(app: Any) -> AsyncIterator[None]:
    """The app's lifespan: its classroom (if it made one) closed at shutdown."""
    yield
    state = getattr(app, "state", None)
    found = getattr(state, "classroom", None) if state is not None else None
    if found is not None:
        await found.close()
        state.classroom = None  # type: ignore[union-attr]
