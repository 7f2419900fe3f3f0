"""API speed and memory, as ratios against a reference measured in the same run.

    .venv/bin/python -m bench.api            (make bench) both parts
    .venv/bin/python -m bench.api speed      1 and 2
    .venv/bin/python -m bench.api memory     3

1. a 5-token request end to end  vs  a hello-world endpoint of the same app      goal ≤ 1.2×
2. n = 512, 8 heads, d_k = 64, delivered to a client  vs  the bare NumPy computation of the stages:
   only the weights, float32, as a binary frame                                   goal ≤ 1.2×
   every stage, float64, as a binary frame                                        goal ≤ 1.5×
   (each frame read as the API's docs show a Python client: app.frame.read, into NumPy's memory;
   beside them: the same frame as http.client's read() returns it, a new 56 MiB bytes object whose
   4 KiB pages the client faults in one by one; read into memory the client keeps, which leaves
   out the client's fresh memory altogether; the same bytes over a plain socket with no server
   work, into kept memory and read as http.client reads, the floor under both; every stage as JSON)
3. memory under a class's worst case: a real server process (uvicorn, its own process), 30 clients
   at once each POSTing 8 heads × 512 tokens × d 64 (as JSON, then as frames) and reading the whole
   answer; the server's resident memory (VmRSS in /proc, Linux) sampled every 10 ms: peak − rest.
   goal: growth ≤ 1 GB
"""

from __future__ import annotations

import http.client
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import orjson
from fastapi import FastAPI, Request

from app import frame
from app.attention import STAGES
from app.examples import EXAMPLES
from app.main import create_app


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
    """Median seconds of one call of each fn, the fns called round after round in turn (calls each a
    round), so that the machine's other work falls on every row alike. Each call is timed alone: on a
    loaded machine a call the scheduler pauses is one slow call, not a slow mean of a whole round."""
    per_fn: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, times in zip(fns, per_fn, strict=True):
            fn()
            for _ in range(calls):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
    return [statistics.median(times) for times in per_fn]


def hello_app() -> FastAPI:
    """The app with two hello-world routes (the reference requests)."""
    app = create_app(backend="numpy")

    @app.get("/hello")
    async def hello() -> dict[str, str]:
        return {"hello": "world"}

    @app.post("/hello")
    async def hello_post(request: Request) -> dict[str, int]:  # the same bytes on the wire, no work
        return {"received": len(await request.body())}

    return app


def uvicorn_process(app: str, *options: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], int]:
    """`app` served by uvicorn in a process of its own on a free port, once it accepts connections."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cmd = [sys.executable, "-m", "uvicorn", *options, app, "--port", str(port), "--log-level", "warning"]
    server = subprocess.Popen([*cmd, "--no-access-log"], env=env)
    for _ in range(600):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            time.sleep(0.05)
    return server, port


def serve() -> tuple[subprocess.Popen[bytes], int]:
    """hello_app() in a server process of its own (uvicorn, as it is deployed): a server in a thread
    of this process would share the GIL with the client reading 56 MiB, which no browser does."""
    return uvicorn_process("bench.api:hello_app", "--factory")


class Connection(http.client.HTTPConnection):
    """http.client's connection that can send a small body in the same write as the headers, as a
    browser does (Chromium's HttpStreamParser merges headers and a body of up to 1,400 bytes into
    one write). http.client writes them apart: the server then sees the request come in two
    segments, and a hello POST measured 1.06–1.14× a hello GET, half of it that second write."""

    merge_next = False  # set for one request: its headers wait for its body, and both go in one write
    _held = b""

    def send(self, data: Any) -> None:
        if self.merge_next and not self._held:
            self._held = bytes(data)  # the headers: held until the body comes
            return
        if self._held:
            data, self._held, self.merge_next = self._held + bytes(data), b"", False
        super().send(data)


def request(
    conn: http.client.HTTPConnection,
    method: str,
    path: str,
    body: bytes | memoryview | None = None,
    headers: dict[str, str] | None = None,
) -> bytes:
    if isinstance(conn, Connection):
        conn.merge_next = isinstance(body, bytes) and 0 < len(body) <= 1400
    conn.request(method, path, body=body, headers=headers or {})
    r = conn.getresponse()
    data = r.read()
    assert r.status == 200, data[:300]
    return data


def wire(size: int) -> tuple[float, float]:
    """Seconds to move size bytes over a plain loopback socket, the floor under any encoding: read
    into memory the client keeps, and read as http.client reads an answer (a new bytes object of
    that size, file.read): no server work at all, only the wire and the client's fresh pages."""
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

    def fetch_new() -> None:
        with socket.create_connection(listener.getsockname()) as conn, conn.makefile("rb") as f:
            assert len(f.read(size)) == size

    return best_of(fetch, 7), best_of(fetch_new, 7)


def bare_numpy(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> list[np.ndarray]:
    scores = q @ k.transpose(0, 2, 1)
    scaled = scores / math.sqrt(q.shape[-1])
    e = np.exp(scaled - scaled.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return [scores, scaled, scaled, weights, weights @ v]


def speed() -> None:
    server, port = serve()
    conn = Connection("127.0.0.1", port)
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

    frame_headers = {"content-type": frame.FRAME_MEDIA_TYPE, "accept": frame.FRAME_MEDIA_TYPE}

    def every_stage() -> bytes:  # encoded in each timed call, as the client of each answer would
        return frame.encode({"mask": "full"}, {"q": q, "k": k, "v": v})

    def answer(body: bytes) -> http.client.HTTPResponse:
        """A frame request on a client's own connection: the answer, its body still to be read."""
        fresh = Connection("127.0.0.1", port)
        fresh.request("POST", "/api/attention", body=body, headers=frame_headers)
        r = fresh.getresponse()
        assert r.status == 200, r.read()[:300]
        return r

    def read_frame(body: bytes) -> dict[str, np.ndarray]:
        """The answer read as docs/api.md shows a Python client (app.frame.read)."""
        r = answer(body)
        return frame.read(r, int(r.headers["content-length"]))[1]

    def via_frame() -> dict[str, np.ndarray]:
        return read_frame(every_stage())

    def via_frame_bytes() -> dict[str, np.ndarray]:
        """The same, the answer as http.client's read() returns it: a new bytes object."""
        return frame.decode(answer(every_stage()).read())[1]

    def via_json() -> dict[str, object]:
        body = orjson.dumps({"q": q, "k": k, "v": v}, option=orjson.OPT_SERIALIZE_NUMPY)
        fresh = Connection("127.0.0.1", port)
        return dict(json.loads(request(fresh, "POST", "/api/attention", body, json_h)))

    def weights_f32() -> np.ndarray:
        fields = {"mask": "full", "stages": ["weights"], "dtype": "float32"}
        return read_frame(frame.encode(fields, {"q": q, "k": k, "v": v}))["weights"]

    kept = memoryview(bytearray(64 << 20))  # a client's own memory, kept from one answer to the next

    def via_frame_kept() -> dict[str, np.ndarray]:
        """The same request, the answer read into memory the client keeps (http.client's readinto),
        which leaves out the client's fresh memory altogether."""
        r = answer(every_stage())
        size = int(r.headers["content-length"])
        got = r.readinto(kept[:size])
        assert got == size, (got, size)
        return frame.decode(kept[:size])[1]

    got = via_frame()
    assert np.array_equal(got["weights"], bare_numpy(q, k, v)[3])
    assert np.array_equal(via_frame_bytes()["weights"], got["weights"])
    assert np.array_equal(via_frame_kept()["weights"], got["weights"])
    assert np.array_equal(weights_f32(), bare_numpy(q, k, v)[3].astype(np.float32))
    # the reference in the same rounds, by the same statistic (the median), as the rows it is compared with
    t_f32, t_all, t_bytes, t_kept, ref = in_turn(
        weights_f32, via_frame, via_frame_bytes, via_frame_kept, lambda: bare_numpy(q, k, v), rounds=9, calls=1
    )
    rows.append(("n=512, 8 heads, d_k=64, weights, float32 frame", t_f32, "bare NumPy stages", ref, 1.2))
    rows.append(("n=512, 8 heads, d_k=64, all stages, frame", t_all, "bare NumPy stages", ref, 1.5))
    rows.append(("  the same, as http.client's read() returns it", t_bytes, "bare NumPy stages", ref, None))
    rows.append(("  the same, read into memory the client keeps", t_kept, "bare NumPy stages", ref, None))
    size = sum(
        len(p) for p in frame.parts({}, {"q": q, "k": k, "v": v, **dict(zip(STAGES, bare_numpy(q, k, v), strict=True))})
    )
    kept_wire, new_wire = wire(size)
    rows.append((f"the wire alone: {size / 2**20:.0f} MiB, raw socket", kept_wire, "bare NumPy stages", ref, None))
    rows.append(("  the same, into new memory as http.client reads", new_wire, "bare NumPy stages", ref, None))
    rows.append(
        ("n=512, 8 heads, d_k=64, all stages, JSON", best_of(via_json, 3, warmup=1), "bare NumPy stages", ref, None)
    )
    server.terminate()
    server.wait(30)

    print(f"{'measured':48} {'ms':>8}   {'reference':22} {'ms':>8}   {'ratio':>6}  goal")
    for name, t, ref_name, t_ref, goal in rows:
        verdict = "" if goal is None else f"≤ {goal}× {'met' if t / t_ref <= goal else 'MISSED'}"
        print(f"{name:48} {t * 1e3:8.2f}   {ref_name:22} {t_ref * 1e3:8.2f}   {t / t_ref:5.2f}×  {verdict}")


def rss(pid: int) -> int:
    """Resident memory of a process, in bytes (Linux /proc)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def memory(clients: int = 30) -> None:
    """Peak RSS of a real server process while `clients` send the heaviest request at once."""
    h, n, d = 8, 512, 64
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((h, n, d)) for _ in range(3))
    bodies = {
        "JSON": (orjson.dumps({"q": q, "k": k, "v": v}, option=orjson.OPT_SERIALIZE_NUMPY), "application/json"),
        "frame": (frame.encode({}, {"q": q, "k": k, "v": v}), frame.FRAME_MEDIA_TYPE),
    }
    for name, (body, media) in bodies.items():
        measure(name, body, media, clients, (h, n, d))


def measure(name: str, body: bytes, media: str, clients: int, shape: tuple[int, int, int]) -> None:
    """Start a server process, send body from `clients` clients at once, print its RSS at rest and peak."""
    h, n, d = shape
    server, port = uvicorn_process("app.main:app", env={**os.environ, "ATTENTION_BACKEND": "numpy"})
    try:
        small = orjson.dumps({"q": [[1.0]], "k": [[1.0]], "v": [[1.0]]})
        request(Connection("127.0.0.1", port), "POST", "/api/attention", small, {})
        time.sleep(0.5)
        rest = rss(server.pid)
        peak, stop = rest, threading.Event()

        def sample() -> None:
            nonlocal peak
            while not stop.is_set():
                peak = max(peak, rss(server.pid))
                time.sleep(0.01)

        sizes: list[int] = []
        barrier = threading.Barrier(clients)

        def client() -> None:
            conn = Connection("127.0.0.1", port, timeout=600)
            barrier.wait()
            conn.request("POST", "/api/attention", body=body, headers={"content-type": media, "accept": media})
            r = conn.getresponse()
            size = 0
            while chunk := r.read(1 << 20):  # read and drop: the client keeps nothing
                size += len(chunk)
            assert r.status == 200, r.status
            sizes.append(size)
            conn.close()

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        t0 = time.perf_counter()
        threads = [threading.Thread(target=client) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.perf_counter() - t0
        stop.set()
        sampler.join()
        assert len(sizes) == clients
        print(
            f"{clients} clients at once, {h} heads × {n} × d {d} as {name:5}: body {len(body) / 2**20:5.1f} MiB, "
            f"answer {sizes[0] / 2**20:6.1f} MiB; server RSS at rest {rest / 2**20:4.0f} MiB, "
            f"peak {peak / 2**20:5.0f} MiB, growth {(peak - rest) / 2**20:5.0f} MiB "
            f"({'≤ 1 GB: met' if peak - rest <= 1e9 else '> 1 GB: MISSED'}); all answered in {took:.1f} s"
        )
    finally:
        server.terminate()
        server.wait(30)


def main() -> None:
    part = sys.argv[1] if len(sys.argv) > 1 else "all"
    if part in ("speed", "all"):
        speed()
    if part in ("memory", "all"):
        print()
        memory()


if __name__ == "__main__":
    main()
