"""A writing computed once and shared (app.model.shared): the phones of a class that load what their
teacher's page has just written get that stream's answer, and many asking at once cost one writing.

The model is SmolLM2 (the real decoder); how often it runs is counted on generate.write. Each test has
an app of its own (its own kept answers), and prompts no other test writes.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import httpx
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.model import generate
from app.model.loader import Model
from app.model.shared import SharedAnswers
from tests.asyncrun import run_async

WHOLE = {"accept": "application/json"}


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many writings the model starts (each call of generate.write, as the route makes it)."""
    started: list[int] = []
    write = generate.write

    def counted(*args: Any, **kwargs: Any) -> Any:
        started.append(1)
        return write(*args, **kwargs)

    monkeypatch.setattr(generate, "write", counted)  # the route calls generate.write at each writing
    return started


def without_seconds(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k != "seconds"}


def test_the_phones_get_the_teachers_stream(smollm: Model, writes: list[int]) -> None:
    """The stream writes 12 tokens; a request for those 12 is answered from it, equal (but for the
    seconds it took) to the answer a server that never saw the stream computes."""
    body = {"prompt": "A lighthouse keeper looked out at the", "max_new_tokens": 12, "layer": 5, "head": 3}
    with TestClient(create_app(backend="numpy")) as teacher_server:
        streamed = [json.loads(x) for x in teacher_server.post("/api/generate", json=body).text.splitlines()]
        assert streamed[-1]["written"] == 12 and len(writes) == 1
        for _ in range(3):  # three phones: none runs the model
            shared = teacher_server.post("/api/generate", json=body, headers=WHOLE)
            assert shared.status_code == 200 and shared.headers["content-type"] == "application/json"
        assert len(writes) == 1
        off = teacher_server.post("/api/generate", json={**body, "ablate": [[0, 0]]}, headers=WHOLE)
        assert off.status_code == 200 and len(writes) == 2  # a head switched off: another writing, not the kept one
    with TestClient(create_app(backend="numpy")) as fresh_server:
        fresh = fresh_server.post("/api/generate", json=body, headers=WHOLE).json()
    assert len(writes) == 3
    assert without_seconds(shared.json()) == without_seconds(fresh)
    assert [t["id"] for t in fresh["tokens"]] == [line["id"] for line in streamed[:-1]]


def test_a_writing_that_ends_early_is_shared_for_the_tokens_it_wrote(smollm: Model, writes: list[int]) -> None:
    """A page asks for 64 tokens; the model ends the text (or the page is told 'n' = what was written):
    the phones ask for exactly that many, and get the stream's answer."""
    body = {"prompt": "Q: What is 2 + 2?\nA:", "max_new_tokens": 64, "temperature": 0.8, "seed": 7, "layer": 2}
    with TestClient(create_app(backend="numpy")) as client:
        streamed = [json.loads(x) for x in client.post("/api/generate", json=body).text.splitlines()]
        written = streamed[-1]["written"]
        phones = client.post("/api/generate", json={**body, "max_new_tokens": written}, headers=WHOLE).json()
        assert len(writes) == 1
        assert [t["id"] for t in phones["tokens"]] == [line["id"] for line in streamed[:-1]]
        assert phones["written"] == written and phones["reason"] in ("eos", "length")


def test_a_class_asking_at_once_costs_one_writing(smollm: Model, writes: list[int]) -> None:
    """30 phones ask for the same text together (no stream before them): the model writes it once; the
    29 others wait for that answer and get the same bytes."""
    body = {"prompt": "The robot opened the door and", "max_new_tokens": 6, "layer": 7, "head": 0}

    async def class_of_30() -> list[bytes]:
        transport = httpx.ASGITransport(app=create_app(backend="numpy"))
        async with httpx.AsyncClient(transport=transport, base_url="http://class") as client:

            async def phone() -> bytes:
                r = await client.post("/api/generate", json=body, headers=WHOLE, timeout=120)
                assert r.status_code == 200, r.text
                return r.content

            return list(await asyncio.gather(*(phone() for _ in range(30))))

    bodies = run_async(class_of_30)
    assert len(writes) == 1
    assert len(set(bodies)) == 1 and len(json.loads(bodies[0])["tokens"]) == 6


def test_sampling_without_a_seed_is_never_shared(smollm: Model, writes: list[int]) -> None:
    body = {"prompt": "My favourite colour is", "max_new_tokens": 2, "temperature": 1.0}
    with TestClient(create_app(backend="numpy")) as client:
        for _ in range(2):
            assert client.post("/api/generate", json=body, headers=WHOLE).status_code == 200
    assert len(writes) == 2  # each asks for a writing of its own


def test_kept_answers_are_bounded_and_a_failure_is_not_kept() -> None:
    answers = SharedAnswers(max_bytes=10)
    answers.put("a", b"12345")
    answers.put("b", b"123")
    assert answers.get("a") == b"12345"  # a is now the most recently used
    answers.put("c", b"1234")  # 12 bytes: the least recently used (b) goes
    assert answers.get("b") is None and answers.get("a") == b"12345" and answers.get("c") == b"1234"
    assert answers.bytes == 9
    answers.put("huge", b"x" * 11)  # never kept
    assert answers.get("huge") is None and answers.bytes == 9

    made: list[str] = []

    async def failing() -> bytes:
        made.append("fail")
        await anyio.sleep(0.01)
        raise RuntimeError("the model could not be loaded")

    async def working() -> bytes:
        made.append("work")
        return b"ok"

    async def both() -> list[Any]:
        return list(
            await asyncio.gather(answers.once("k", failing), answers.once("k", working), return_exceptions=True)
        )

    first, second = run_async(both)
    assert isinstance(first, RuntimeError) and second == b"ok" and made == ["fail", "work"]
    assert answers.get("k") == b"ok" and not answers._making  # nothing left waiting
