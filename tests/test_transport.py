"""Bodies in and answers out: compute slots are held until a big answer is sent, and always given back."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app import transport
from app.schemas import InputError


def _rows(n: int, d: int, value: float = 1.0) -> list[list[float]]:
    return [[value] * d for _ in range(n)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_big_answer_holds_its_compute_slot_until_it_is_sent() -> None:
    response = await transport.in_slot("application/json", lambda: b"{}")
    assert transport.SLOTS.borrowed_tokens == 1  # computed, not yet sent: still counted
    sent: list[Any] = []

    async def receive() -> Any:
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(message)

    await response({"type": "http"}, receive, send)
    assert transport.SLOTS.borrowed_tokens == 0 and sent[-1]["body"] == b"{}"

    def broken() -> bytes:
        raise InputError("q", "no")

    with pytest.raises(InputError):
        await transport.in_slot("application/json", broken)
    assert transport.SLOTS.borrowed_tokens == 0


def test_big_requests_through_http_leave_no_slot_taken(client: TestClient) -> None:
    n = 80  # 6,400 cells: computed in a worker thread, in a slot
    ok = client.post("/api/attention", json={"q": _rows(n, 1), "k": _rows(n, 1), "v": _rows(n, 1)})
    bad = client.post("/api/attention", json={"q": _rows(n, 1, 1e200), "k": _rows(n, 1, 1e200), "v": _rows(n, 1)})
    assert (ok.status_code, bad.status_code) == (200, 422)
    assert transport.SLOTS.borrowed_tokens == 0
