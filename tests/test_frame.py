"""Malformed binary frames against a real server: always a 4xx in the API's detail shape, never a
5xx, and the keep-alive connection survives: the next request on it succeeds."""

from __future__ import annotations

import http.client
import io
import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import uvicorn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app import frame
from app.main import create_app
from tests.budget import examples

HEADERS = {"content-type": frame.FRAME_MEDIA_TYPE, "accept": frame.FRAME_MEDIA_TYPE}


@pytest.fixture(scope="module")
def server() -> Iterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    srv = uvicorn.Server(uvicorn.Config(create_app(backend="numpy"), log_level="warning", access_log=False))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not srv.started:
        time.sleep(0.01)
    yield port
    srv.should_exit = True
    thread.join(5)


@pytest.fixture(scope="module")
def conn(server: int) -> Iterator[http.client.HTTPConnection]:
    c = http.client.HTTPConnection("127.0.0.1", server, timeout=30)
    yield c
    c.close()


def post_then_get(conn: http.client.HTTPConnection, body: bytes) -> tuple[int, Any]:
    """POST the frame, then GET on the same connection, which must still be open and answer 200."""
    conn.request("POST", "/api/attention", body=body, headers=HEADERS)
    r = conn.getresponse()
    data = r.read()
    assert r.status < 500, data[:500]
    sock = conn.sock
    conn.request("GET", "/api/examples/the-cat-ate-its-fish")
    again = conn.getresponse()
    assert again.status == 200 and json.loads(again.read())["id"] == "the-cat-ate-its-fish"
    assert conn.sock is sock, "the server closed the keep-alive connection"
    if r.status == 200:
        return r.status, frame.decode(data)
    detail = json.loads(data)["detail"]
    assert detail and all(set(d) == {"loc", "msg", "type"} and d["loc"][0] == "body" for d in detail), detail
    return r.status, detail


def raw_frame(header: Any, data: bytes = b"", length: int | None = None) -> bytes:
    text = json.dumps(header).encode() if not isinstance(header, bytes) else header
    text += b" " * (-(8 + len(text)) % 8)
    return struct.pack("<4sI", b"ATF1", len(text) if length is None else length) + text + data


ONES = np.ones((3, 2)).tobytes()


def qkv(shape: Any, offset: Any = 0, data: bytes = ONES * 3, k_at: int = 48, **extra: Any) -> bytes:
    arrays = {"q": {"shape": shape, "offset": offset}, "k": {"shape": [3, 2], "offset": k_at}}
    arrays["v"] = {"shape": [3, 2], "offset": k_at + 48}
    return raw_frame({"arrays": arrays, **extra}, data)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (qkv([0, 2], data=ONES * 2, k_at=0), "no axis may be 0"),
        (qkv([3, 0, 2], data=ONES * 2, k_at=0), "no axis may be 0"),
        (qkv([10**30, 0]), "less than or equal to"),
        (qkv([2**62, 2**62, 0]), "less than or equal to"),
        (qkv("32"), "valid list"),
        (qkv([3, 2.5]), "valid integer"),
        (qkv([3, -2]), "greater than or equal to 0"),
        (qkv([3, 2], offset=4), "multiple of 8"),
        (qkv([3, 2], offset="0"), "valid integer"),
        (qkv([3, 2, 1, 1, 1]), "at most 4"),
        (raw_frame(b'{"arrays": {}, "x": 1e400}'), "beyond float64"),
        (raw_frame(b'{"arrays": {}, "x": Infinity}'), "Infinity"),
        (raw_frame(b'{"arrays": {}, "x": NaN}'), "NaN"),
        (raw_frame(b"[" * 100_000 + b"]" * 100_000), "deeper"),
        (raw_frame({"a": [[[[[[[[[1]]]]]]]]]}), "deeper"),
        (raw_frame(b"\xff\xfe"), "UTF-8"),
        (raw_frame(b"[1, 2]"), "JSON object"),
        (raw_frame({"arrays": {"x": {"shape": [1], "offset": 0}}}, bytes(8)), "Extra inputs"),
        (raw_frame({"arrays": {"q": {"shape": [1], "offset": 0, "dtype": "int8"}}}, bytes(8)), "float32"),
        (qkv([3, 2], data=ONES * 3 + bytes(8)), "after the last array"),
        (qkv([3, 2], data=ONES * 3)[:-8], "needs bytes"),
        (qkv([4, 2], data=ONES * 3), "overlaps"),
        (raw_frame({"arrays": {"q": {"shape": [1], "offset": 8}}}, bytes(16)), "belong to no array"),
        (raw_frame({}, length=2**31), "limit"),
        (raw_frame({}, length=1000), "runs past"),
        (b"ATF1\x03\x00\x00\x00{} ", "8-byte aligned"),
        (b"ATF", "prefix"),
        (b"XXXX\x00\x00\x00\x00", "must start"),
        (qkv([3, 2], q=[[1.0]]), "sent twice"),
    ],
)
def test_each_malformed_frame_is_a_4xx_and_the_connection_lives(
    conn: http.client.HTTPConnection, body: bytes, words: str
) -> None:
    status, detail = post_then_get(conn, body)
    assert status == 422
    assert any(words in d["msg"] for d in detail), detail


def test_a_well_formed_frame_still_answers(conn: http.client.HTTPConnection) -> None:
    status, (fields, arrays) = post_then_get(conn, qkv([3, 2]))
    assert status == 200 and fields["d_k"] == 2
    np.testing.assert_array_equal(arrays["weights"], np.full((3, 3), 1 / 3))


def test_float32_arrays_pad_to_eight_bytes() -> None:
    q = np.arange(3, dtype=np.float64).reshape(1, 3)  # 3 float32 = 12 bytes, padded to 16
    body = frame.encode({"x": 1}, {"q": q, "k": q}, dtype="float32")
    fields, arrays = frame.decode(body)
    assert fields == {"x": 1} and arrays["q"].dtype == np.float32 and arrays["k"].tolist() == [[0.0, 1.0, 2.0]]
    with pytest.raises(frame.FrameError, match="after the last array"):
        frame.decode(body + bytes(8))


names = st.sampled_from([*frame.ARRAY_NAMES, "x", ""])
axis = st.integers(-2, 6) | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=3) | st.none()
spec = st.fixed_dictionaries(
    {"shape": st.lists(axis, max_size=5) | axis, "offset": st.integers(-16, 200) | axis},
    optional={"dtype": st.sampled_from(["float64", "float32", "f8", 1])},
)
junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)
fields = st.dictionaries(st.sampled_from(["mask", "tokens", "sentence", "layer", "head", "q", "x"]), junk, max_size=3)


@settings(max_examples=examples(300, 80), deadline=None, suppress_health_check=list(HealthCheck))
@given(
    arrays=st.dictionaries(names, spec, max_size=4) | junk,
    extra=fields,
    data=st.binary(max_size=256),
    cut=st.none() | st.integers(0, 400),
)
def test_random_headers_and_bytes_never_get_a_5xx(
    conn: http.client.HTTPConnection, arrays: Any, extra: dict[str, Any], data: bytes, cut: int | None
) -> None:
    body = raw_frame({**extra, "arrays": arrays}, data)
    post_then_get(conn, body if cut is None else body[:cut])


@settings(max_examples=examples(150, 40), deadline=None, suppress_health_check=list(HealthCheck))
@given(body=st.binary(max_size=300), prefix=st.booleans())
def test_random_bytes_never_get_a_5xx(conn: http.client.HTTPConnection, body: bytes, prefix: bool) -> None:
    post_then_get(conn, (b"ATF1" + body) if prefix else body)


@settings(max_examples=examples(100, 30), deadline=None, suppress_health_check=list(HealthCheck))
@given(n=st.integers(1, 4), d=st.integers(1, 3), cut=st.integers(0, 10_000), mask=st.sampled_from(["full", "causal"]))
def test_truncated_frames_never_get_a_5xx(
    conn: http.client.HTTPConnection, n: int, d: int, cut: int, mask: str
) -> None:
    a = np.arange(n * d, dtype=np.float64).reshape(n, d) / 7
    body = frame.encode({"mask": mask}, {"q": a, "k": a, "v": a})
    status, _ = post_then_get(conn, body[: cut % (len(body) + 1)])
    assert status == (200 if cut % (len(body) + 1) == len(body) else 422)


def test_answers_larger_than_a_request_body_decode() -> None:
    big = np.zeros((2, 1024, 1024, 2))  # 32 MiB: offsets past the request limit
    _, arrays = frame.decode(frame.encode({}, {"q": big, "weights": np.ones((1, 2))}))
    assert arrays["weights"].tolist() == [[1.0, 1.0]] and arrays["q"].shape == big.shape


class Trickle(io.BytesIO):
    """A stream that hands over at most `step` bytes a call, as a socket may."""

    def __init__(self, data: bytes, step: int) -> None:
        super().__init__(data)
        self.step = step

    def readinto(self, buffer: Any) -> int:
        return super().readinto(memoryview(buffer)[: self.step])


def test_read_takes_an_answer_from_its_stream_into_numpy_memory(conn: http.client.HTTPConnection) -> None:
    """frame.read (what docs/api.md shows a Python client): the server's answer read from the
    response itself gives what decode() gives of the same answer read whole, every array a
    read-only view of one NumPy array."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 6, 4)) for _ in range(3))
    body = frame.encode({"mask": "causal"}, {"q": q, "k": k, "v": v})
    conn.request("POST", "/api/attention", body=body, headers=HEADERS)
    r = conn.getresponse()
    assert r.status == 200
    fields, arrays = frame.read(r, int(r.headers["content-length"]))
    conn.request("POST", "/api/attention", body=body, headers=HEADERS)
    whole_fields, whole = frame.decode(conn.getresponse().read())
    assert fields == whole_fields and fields["mask"] == "causal"
    assert sorted(arrays) == sorted(whole)
    for name, a in arrays.items():
        np.testing.assert_array_equal(a, whole[name])
        assert not a.flags.writeable
        owner = a
        while not isinstance(owner, np.ndarray) or owner.base is not None:
            owner = owner.base if isinstance(owner, np.ndarray) else owner.obj
        assert owner.dtype == np.uint8 and np.shares_memory(owner, arrays["q"])
    assert np.isneginf(arrays["masked"][0, 0, 1:]).all()  # hidden keys, as the answer carries them


def test_read_gathers_short_reads_and_refuses_a_stream_that_ends_early() -> None:
    body = frame.encode({"x": 1}, {"q": np.arange(6.0).reshape(2, 3), "k": np.ones((2, 3))})
    fields, arrays = frame.read(Trickle(body, 5), len(body))
    assert fields == {"x": 1} and arrays["q"].tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(frame.FrameError, match=f"ended after {len(body) - 8:,} of its {len(body):,} bytes"):
        frame.read(Trickle(body[:-8], 5), len(body))
