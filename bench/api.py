"""API speed and memory, as ratios against a reference measured in the same run.

    .venv/bin/python -m bench.api            (make bench)

1. a 5-token request end to end  vs  a hello-world endpoint of the same app      goal ≤ 1.2×
2. n = 512, 8 heads, d_k = 64, every stage delivered to a client (binary frame)
   vs  the bare NumPy computation of the same stages                              goal ≤ 1.5×
   (JSON, which every client can read, is reported beside it)
3. peak memory of the largest request the limits allow, per request and for a class of 30
"""

from __future__ import annotations

import http.client
import json
import math
import socket
import statistics
import threading
import time
import tracemalloc
from collections.abc import Callable

import numpy as np
import orjson
import uvicorn
from fastapi import Request

from app import frame, limits
from app.api import _compute_and_encode
from app.attention import STAGES
from app.examples import EXAMPLES
from app.main import create_app
from app.schemas import AttentionRequest, checked


def best_of(fn: Callable[[], object], repeat: int, warmup: int = 2) -> float:
    """Median seconds of one call (after warm-up)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def in_turn(*fns: Callable[[], object], rounds: int = 15, calls: int = 60) -> list[float]:
    """Median seconds per call of each fn, measured round after round in turn, so that the
    machine's other work falls on every row alike."""
    per_round: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, times in zip(fns, per_round, strict=True):
            fn()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            times.append((time.perf_counter() - t0) / calls)
    return [statistics.median(times) for times in per_round]


def serve() -> tuple[uvicorn.Server, int]:
    app = create_app(backend="numpy")

    @app.get("/hello")
    async def hello() -> dict[str, str]:
        return {"hello": "world"}

    @app.post("/hello")
    async def hello_post(request: Request) -> dict[str, int]:  # the same bytes on the wire, no work
        return {"received": len(await request.body())}

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return server, port


def request(
    conn: http.client.HTTPConnection,
    method: str,
    path: str,
    body: bytes | memoryview | None = None,
    headers: dict[str, str] | None = None,
) -> bytes:
    conn.request(method, path, body=body, headers=headers or {})
    r = conn.getresponse()
    data = r.read()
    assert r.status == 200, data[:300]
    return data


def wire(size: int) -> float:
    """Seconds to move size bytes over a plain loopback socket: the floor under any encoding."""
    payload = bytes(size)
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            conn, _ = listener.accept()
            with conn:
                conn.sendall(payload)

    threading.Thread(target=serve, daemon=True).start()
    buffer = memoryview(bytearray(size))

    def fetch() -> None:
        with socket.create_connection(listener.getsockname()) as conn:
            got = 0
            while got < size:
                got += conn.recv_into(buffer[got:])

    return best_of(fetch, 7)


def bare_numpy(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> list[np.ndarray]:
    scores = q @ k.transpose(0, 2, 1)
    scaled = scores / math.sqrt(q.shape[-1])
    e = np.exp(scaled - scaled.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return [scores, scaled, scaled, weights, weights @ v]


def main() -> None:
    server, port = serve()
    conn = http.client.HTTPConnection("127.0.0.1", port)
    rows: list[tuple[str, float, str, float, float | None]] = []

    cat = EXAMPLES["the-cat-ate-its-fish"]
    small = orjson.dumps(
        {"tokens": list(cat.tokens), "q": cat.q, "k": cat.k, "v": cat.v}, option=orjson.OPT_SERIALIZE_NUMPY
    )
    json_h = {"content-type": "application/json"}
    hello, five, hello_post = in_turn(
        lambda: request(conn, "GET", "/hello"),
        lambda: request(conn, "POST", "/api/attention", small, json_h),
        lambda: request(conn, "POST", "/hello", small, json_h),
    )
    rows.append(("5-token request, end to end", five, "hello-world GET", hello, 1.2))
    rows.append(("5-token request, end to end", five, "hello POST, same body", hello_post, None))

    rng = np.random.default_rng(0)
    h, n, d = 8, 512, 64
    q, k, v = (rng.standard_normal((h, n, d)) for _ in range(3))
    ref = best_of(lambda: bare_numpy(q, k, v), 7)

    def via_frame() -> dict[str, np.ndarray]:
        body = frame.encode({"mask": "full"}, {"q": q, "k": k, "v": v})
        headers = {"content-type": frame.FRAME_MEDIA_TYPE, "accept": frame.FRAME_MEDIA_TYPE}
        fresh = http.client.HTTPConnection("127.0.0.1", port)  # a client's own connection
        return frame.decode(request(fresh, "POST", "/api/attention", body, headers))[1]

    def via_json() -> dict[str, object]:
        body = orjson.dumps({"q": q, "k": k, "v": v}, option=orjson.OPT_SERIALIZE_NUMPY)
        fresh = http.client.HTTPConnection("127.0.0.1", port)
        return dict(json.loads(request(fresh, "POST", "/api/attention", body, json_h)))

    got = via_frame()
    assert np.array_equal(got["weights"], bare_numpy(q, k, v)[3])
    rows.append(("n=512, 8 heads, d_k=64, all stages, frame", best_of(via_frame, 7), "bare NumPy stages", ref, 1.5))
    size = sum(
        len(p) for p in frame.parts({}, {"q": q, "k": k, "v": v, **dict(zip(STAGES, bare_numpy(q, k, v), strict=True))})
    )
    rows.append((f"the wire alone: {size / 2**20:.0f} MiB, raw socket", wire(size), "bare NumPy stages", ref, None))
    rows.append(
        ("n=512, 8 heads, d_k=64, all stages, JSON", best_of(via_json, 3, warmup=1), "bare NumPy stages", ref, None)
    )
    server.should_exit = True

    print(f"{'measured':48} {'ms':>8}   {'reference':22} {'ms':>8}   {'ratio':>6}  goal")
    for name, t, ref_name, t_ref, goal in rows:
        verdict = "" if goal is None else f"≤ {goal}× {'met' if t / t_ref <= goal else 'MISSED'}"
        print(f"{name:48} {t * 1e3:8.2f}   {ref_name:22} {t_ref * 1e3:8.2f}   {t / t_ref:5.2f}×  {verdict}")

    # Memory: the largest request the limits allow (12 heads × 512 tokens, d = 42: 774,144 inputs).
    h, n, d = limits.MAX_CELLS // (512 * 512), 512, limits.MAX_INPUT_VALUES // (3 * 12 * 512)
    big = {
        "q": rng.standard_normal((h, n, d)),
        "k": rng.standard_normal((h, n, d)),
        "v": rng.standard_normal((h, n, d)),
    }
    body = orjson.dumps(big, option=orjson.OPT_SERIALIZE_NUMPY)
    print(f"\nlargest allowed request: {h} heads × {n} tokens × d {d}; JSON body {len(body) / 2**20:.1f} MiB")
    for as_frame in (False, True):
        tracemalloc.start()
        inp = checked(AttentionRequest.model_validate_json(body))
        out = _compute_and_encode(inp, "numpy", as_frame)
        size = len(out) if isinstance(out, bytes) else sum(len(p) for p in out)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        slots, waiting = limits.COMPUTE_SLOTS, 30 - limits.COMPUTE_SLOTS
        total = slots * peak + waiting * limits.MAX_BODY_BYTES
        print(
            f"  {'frame' if as_frame else 'JSON '} answer {size / 2**20:6.1f} MiB, "
            f"peak {peak / 2**20:6.0f} MiB per request; "
            f"30 at once: {slots} computing + {waiting} bodies waiting ≤ {total / 2**30:.1f} GiB"
        )
        del out, inp


if __name__ == "__main__":
    main()
