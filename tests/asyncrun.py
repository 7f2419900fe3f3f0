"""anyio.run on a thread of its own: the browser tests' Playwright (sync API) keeps the main thread's
event loop running for the whole session, and a second anyio.run there fails with "Already running
asyncio in this thread"."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

T = TypeVar("T")


def run_async(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """`anyio.run(fn, *args)` on a new thread; returns its result or raises what it raised."""
    result: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(anyio.run(fn, *args))
        except BaseException as e:
            failure.append(e)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]
