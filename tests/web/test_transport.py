"""Bodies in and answers out: compute slots are held until a big answer is sent, and always given back."""

from __future__ import annotations

import time
from typing import Any

import anyio
import numpy as np
import orjson
import pytest
from fastapi.testclient import TestClient

from app import frame
from app.attention import attention
from app.schemas import InputError
from app.web import transport
from tests.asyncrun import run_async


def _rows(n: int, d: int, value: float = 1.0) -> list[list[float]]:
    return [[value] * d for _ in range(n)]


async def _sent(answer: Any) -> list[Any]:
    """What `answer` sends to a client that has gone once it is asked for more."""
    sent: list[Any] = []

    async def receive() -> Any:
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(message)

    await answer({"type": "http"}, receive, send)
    return sent


def test_a_big_answer_holds_its_compute_slot_until_it_is_sent() -> None:
    run_async(_holds_its_slot)


async def _holds_its_slot() -> None:
    response = await transport.in_slot("application/json", lambda: b"{}")
    assert transport.SLOTS.borrowed_tokens == 1  # computed, not yet sent: still counted
    sent = await _sent(response)
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


FRAME_HEADERS = {"content-type": frame.FRAME_MEDIA_TYPE, "accept": frame.FRAME_MEDIA_TYPE}


@pytest.mark.parametrize("mask", ["full", "causal"])
def test_a_streamed_frame_is_byte_for_byte_the_whole_one(client: TestClient, mask: str) -> None:
    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(3, 64, 5)), rng.normal(size=(3, 64, 5)), rng.normal(size=(3, 64, 2))  # streamed
    r = client.post(
        "/api/attention", content=frame.encode({"mask": mask}, {"q": q, "k": k, "v": v}), headers=FRAME_HEADERS
    )
    assert r.status_code == 200 and int(r.headers["content-length"]) == len(r.content)
    s = attention(q, k, v, mask)  # type: ignore[arg-type]
    fields = {"tokens": [f"t{i}" for i in range(64)], "mask": mask, "d_k": 5}
    assert r.content == frame.encode(fields, {"q": q, "k": k, "v": v, **s.as_dict()})
    assert transport.SLOTS.borrowed_tokens == 0


def test_a_streamed_frame_still_refuses_overflowing_scores(client: TestClient) -> None:
    big = np.full((2, 64, 1), 1e200)
    r = client.post(
        "/api/attention", content=frame.encode({}, {"q": big, "k": big, "v": big[..., :1] * 0}), headers=FRAME_HEADERS
    )
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "q"]
    assert transport.SLOTS.borrowed_tokens == 0


def test_values_near_the_end_of_float64_are_computed_whole_first(client: TestClient) -> None:
    q = np.zeros((2, 64, 1))
    v = np.full((2, 64, 1), 1.79e308)
    r = client.post("/api/attention", content=frame.encode({}, {"q": q, "k": q, "v": v}), headers=FRAME_HEADERS)
    _, arrays = frame.decode(r.content)
    assert r.status_code == 200 and np.array_equal(arrays["output"], attention(q, q, v).output)
    assert np.isfinite(arrays["output"]).all()


def test_a_client_that_leaves_mid_stream_gives_the_slot_back() -> None:
    run_async(_client_leaves)


async def _client_leaves() -> None:
    made: list[int] = []

    def later() -> Any:
        for i in range(100):
            made.append(i)
            yield memoryview(b"x")

    answer = await transport.stream_in_slot("application/octet-stream", lambda: ([memoryview(b"head")], later(), 104))
    assert transport.SLOTS.borrowed_tokens == 1

    async def receive() -> Any:
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        if message.get("body") == b"x":
            raise OSError("client went away")

    with pytest.raises(ExceptionGroup) as left:
        await answer({"type": "http"}, receive, send)
    assert left.group_contains(OSError, match="client went away")
    assert transport.SLOTS.borrowed_tokens == 0
    assert len(made) < 100  # the producer stopped too


def test_a_large_body_is_read_only_once_a_parse_slot_is_free() -> None:
    run_async(_waits_for_a_parse_slot)


async def _waits_for_a_parse_slot() -> None:
    from app.main import create_app

    app = create_app(backend="numpy")
    body = orjson.dumps({"q": _rows(300, 40), "k": _rows(300, 40), "v": _rows(300, 40)})
    assert len(body) > 64 * 1024
    reads: list[int] = []
    sent: list[Any] = []

    async def receive() -> Any:
        reads.append(1)
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/attention",
        "raw_path": b"/api/attention",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        "http_version": "1.1",
        "scheme": "http",
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 1),
        "root_path": "",
    }
    holders = [object() for _ in range(int(transport.PARSE_SLOTS.total_tokens))]
    for holder in holders:
        await transport.PARSE_SLOTS.acquire_on_behalf_of(holder)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(app, scope, receive, send)
        await anyio.sleep(0.3)
        assert reads == [] and sent == []  # every parse slot is taken: the body stays with the client
        transport.PARSE_SLOTS.release_on_behalf_of(holders.pop())
    assert reads and sent[0]["status"] == 200
    for holder in holders:
        transport.PARSE_SLOTS.release_on_behalf_of(holder)
    assert transport.PARSE_SLOTS.borrowed_tokens == 0


def test_answers_leave_in_chunks_of_at_most_a_mebibyte() -> None:
    run_async(_chunks)


async def _chunks() -> None:
    payload = bytes(range(256)) * (5 * 4096 + 7)  # 5 MiB and a bit
    sent = await _sent(transport.Answer(payload, "application/json"))
    bodies = [m for m in sent if m["type"] == "http.response.body"]
    assert len(bodies) == 6 and all(len(m["body"]) <= transport.CHUNK for m in bodies)
    assert b"".join(bytes(m["body"]) for m in bodies) == payload and bodies[-1]["more_body"] is False


def test_kept_answers_go_least_recently_asked_first_and_a_large_one_is_not_kept() -> None:
    kept = transport.Kept(budget=160)  # an answer of at most 20 bytes is kept
    for key in "abcdefg":
        kept.put(key, key.encode() * 20)  # 140 bytes
    assert kept.get("a") == b"a" * 20  # asked for again: now the most recent
    kept.put("h", b"h" * 20)
    kept.put("i", b"i" * 20)  # 180 bytes: "b", the least recently asked for, goes
    assert kept.get("b") is None and all(kept.get(k) == k.encode() * 20 for k in "acdefghi")
    kept.put("j", b"j" * 21)  # over 160 / 8 bytes: not kept
    assert kept.get("j") is None and kept.get("c") == b"c" * 20


def test_a_class_asking_one_kept_answer_at_once_has_it_made_once() -> None:
    run_async(_asked_at_once)


async def _asked_at_once() -> None:
    made: list[tuple[str, tuple[int, ...]]] = []

    def encode(word: str, heads: list[tuple[int, int]]) -> bytes:
        made.append((word, tuple(h for pair in heads for h in pair)))
        time.sleep(0.05)
        return orjson.dumps({"word": word, "heads": heads})

    bodies: list[bytes] = []

    async def phone(word: str) -> None:
        response = await transport.in_slot("application/json", encode, word, [(0, 1), (2, 3)], keep=True)
        bodies.append(b"".join(m.get("body", b"") for m in await _sent(response)))

    async with anyio.create_task_group() as tg:
        for _ in range(25):
            tg.start_soon(phone, "kept-answers-test")
    assert len(made) == 1  # made for the first; the others waited for it, without a slot
    assert len(set(bodies)) == 1 and orjson.loads(bodies[0])["heads"] == [[0, 1], [2, 3]]
    await phone("kept-answers-test")  # later: from the kept answer, no slot
    await phone("another word")  # other arguments: made
    assert len(made) == 2 and made[-1][0] == "another word"
    assert transport.SLOTS.borrowed_tokens == 0


def test_an_answer_that_fails_is_not_kept_and_each_waiting_request_tries_it_again() -> None:
    run_async(_failing_at_once)


async def _failing_at_once() -> None:
    tried: list[str] = []

    def encode(word: str) -> bytes:
        tried.append(word)
        time.sleep(0.02)
        raise InputError("sentence", "not a word this test accepts")

    async def phone() -> None:
        with pytest.raises(InputError):
            await transport.in_slot("application/json", encode, "refused", keep=True)

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(phone)
    assert tried == ["refused"] * 3 and not transport.KEPT.making and transport.SLOTS.borrowed_tokens == 0
