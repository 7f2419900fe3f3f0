"""How bodies come in and answers go out.

- read_body: a request body, refused with 413 as soon as it passes MAX_BODY_BYTES.
- SLOTS: COMPUTE_SLOTS requests may compute and send a big answer at once; the rest wait.
- in_slot / Answer: run the work in a worker thread holding a slot until its answer is sent,
  so at most COMPUTE_SLOTS big answers are in memory however many clients ask.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
from fastapi import Request, Response
from starlette.types import Receive, Scope, Send

from app import limits
from app.errors import ClientError

SLOTS = anyio.CapacityLimiter(limits.COMPUTE_SLOTS)


async def read_body(request: Request) -> bytes:
    """The body, refused with 413 as soon as it passes the limit (declared or streamed)."""
    too_big = ClientError(413, ["body"], f"the body is larger than {limits.MAX_BODY_BYTES:,} bytes", "too_large")
    declared = request.headers.get("content-length", "")
    if declared.isdigit():  # the server delivers exactly this many bytes
        if int(declared) > limits.MAX_BODY_BYTES:
            raise too_big
        return await request.body()
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limits.MAX_BODY_BYTES:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


Body = bytes | list[memoryview]


class Answer(Response):
    """A response sent as its body lies in memory, buffer by buffer (a frame's arrays are sent
    from the arrays themselves), that can hand its compute slot back once sent or abandoned."""

    def __init__(self, body: Body, media_type: str, release: Callable[[], None] | None = None) -> None:
        self._parts = [memoryview(body)] if isinstance(body, bytes) else body
        size = sum(len(p) for p in self._parts)
        super().__init__(None, media_type=media_type, headers={"content-length": str(size)})
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            last = len(self._parts) - 1
            for i, part in enumerate(self._parts):
                await send({"type": "http.response.body", "body": part, "more_body": i < last})
        finally:
            if self._release is not None:
                self._release()


async def in_slot(media_type: str, encode: Callable[..., Body], *args: Any) -> Response:
    """Run encode(*args) in a worker thread holding one of the SLOTS until its answer is sent."""
    borrower = object()
    await SLOTS.acquire_on_behalf_of(borrower)
    try:
        content = await anyio.to_thread.run_sync(encode, *args)
    except BaseException:
        SLOTS.release_on_behalf_of(borrower)
        raise
    return Answer(content, media_type, lambda: SLOTS.release_on_behalf_of(borrower))
