"""Sentence mode speed, as ratios against transformers measured in the same run.

    .venv/bin/python -m bench.model

A ~300-token sentence through all-MiniLM-L6-v2 (6 layers × 12 heads), each row against
transformers' own forward pass (eager attention, output_attentions=True, torch CPU, float32,
torch's default threads), tokenizing included on both sides; the rows are measured in turn,
round after round, so that the machine's other work falls on all of them alike:

1. our forward: tokenize, then every layer's per-head Q, K, V and each head's output
   (what transformers' forward computes)                                          goal ≤ 1.1×
   and the same forward with ATTENTION_BACKEND=torch (here on the CPU); then its matrix
   products alone (every layer's six linear layers, nothing else), in NumPy as our forward
   makes them and in torch as transformers' does, and the rest of each forward: how much of
   the gap is the matrix library (OpenBLAS against torch's MKL or oneDNN) and how much ours.
   With the mkl extra installed our products are MKL's (app.model.blas) and one more row runs
   our forward with NumPy's own BLAS
2. POST /api/attention end to end (in-process client, JSON out, not compressed), a sentence
   never seen before, every stage of one head in float64:  layer 2                goal ≤ 0.8×
                                                           the last layer          goal ≤ 1.3×
   and a sentence seen before (the cache answers); and layer 2 again from a client that
   accepts gzip, as browsers do (app.web.middleware compresses JSON answers up to 16 MB)
   The goal rows again with one thread each (torch.set_num_threads(1), nn.WORKERS = 1): on a
   busy machine a spinning thread pool (torch's) stalls whenever another process holds a core,
   so these rows compare the work itself
3. a spawned server (python -m uvicorn app.main:app): from spawn to the first sentence
   answered (cold start)                                                          goal ≤ 1.0 s
   then a class: 30 students send new 15-20 word sentences at once, 3 times: all
   answered, p50 / p99 / max latency
4. first load: weights + tokenizer read from disk by our loader, vs
   transformers' AutoModel.from_pretrained + AutoTokenizer, each in a fresh process

Needs the test extra (transformers, torch==2.13.0). Numbers depend on the machine: the
ratios are what to compare.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import platformdirs

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

BASE = (
    "The animal didn't cross the street because it was too tired, so it lay down in the shade "
    "and watched the cars go by; later, when the evening came, it finally crossed. "
)
WORDS = [
    "the",
    "a",
    "cat",
    "dog",
    "bird",
    "teacher",
    "student",
    "river",
    "city",
    "garden",
    "book",
    "letter",
    "song",
    "window",
    "morning",
    "night",
    "quickly",
    "slowly",
    "happily",
    "ate",
    "saw",
    "wrote",
    "sang",
    "opened",
    "crossed",
    "found",
    "lost",
    "gave",
    "took",
    "old",
    "young",
    "green",
    "small",
    "large",
    "quiet",
    "loud",
    "because",
    "although",
    "while",
    "after",
    "before",
    "with",
    "under",
    "over",
    "near",
]


def sentence(tokens: int = 300, salt: str = "") -> str:
    """A sentence of about `tokens` tokens for MiniLM's tokenizer (BASE is ~40 tokens)."""
    text = (BASE * (tokens // 35 + 1)).split(" ")
    return salt + " ".join(text[: int(tokens * 0.83)])


def student_sentence(rng: random.Random) -> str:
    """A new sentence of 15-20 words, as a student would type one."""
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(15, 20))).capitalize() + "."


CPU_TIMES: dict[str, float] = {}  # interleaved()'s last run: the calling thread's median CPU seconds per row


def products(model: Any, n: int) -> tuple[Callable[[], object], Callable[[], object]]:
    """The forward's matrix products alone, ours and torch's: every layer's six linear layers on the
    model's own weights, for an input of n tokens, and nothing else of the forward. Ours (MKL's
    where the mkl extra is installed, else NumPy's OpenBLAS: app.model.blas): split over the
    blocks of rows our forward splits them into (nn.row_blocks), each block's q, k, v, output
    projection and feed-forward on one thread, as its layer runs them;
    torch's (MKL): whole matrices on torch's threads, as transformers' forward makes them. The
    numbers in them do not change the time (random inputs); what is left of each forward beside
    them is the rest of it."""
    import numpy as np
    import torch

    from app.model import nn
    from app.model.families.bert.config import LAYER, LINEARS
    from app.model.families.bert.layer import column_major, linear

    spec, w = model.spec, model.weights
    column_major(w, spec)  # the layout our forward multiplies by (done at its first run)
    x = np.random.default_rng(0).standard_normal((n, spec.hidden), dtype=np.float32)  # (n, C)
    prefixes = [LAYER.format(i) for i in range(spec.layers)]
    qkv, rest = LINEARS[:3], LINEARS[3:]  # then the output projection and the feed-forward: (n, C) → (n, 4C) → (n, C)

    def block(r: slice, p: str) -> np.ndarray:
        for name in qkv:
            linear(x[r], w, p + name)
        y = x[r]
        for name in rest:
            y = linear(y, w, p + name)
        return y

    def ours() -> object:
        for p in prefixes:
            nn.rows(partial(block, p=p), n)
        return None

    tw = {p + name + s: torch.from_numpy(np.array(w[p + name + s], order="C")) for p in prefixes
          for name in LINEARS for s in (".weight", ".bias")}  # fmt: skip
    tx = torch.from_numpy(x)

    def theirs() -> object:
        with torch.no_grad():
            for p in prefixes:
                for name in qkv:
                    torch.nn.functional.linear(tx, tw[p + name + ".weight"], tw[p + name + ".bias"])
                y = tx
                for name in rest:
                    y = torch.nn.functional.linear(y, tw[p + name + ".weight"], tw[p + name + ".bias"])
        return None

    return ours, theirs


def interleaved(fns: dict[str, Callable[[], object]], rounds: int, warmup: int = 2) -> dict[str, float]:
    """Median seconds of each function, called in turn round after round so that all of them
    see the same machine (a shared, busy machine slows every row alike, not just one).
    The calling thread's CPU time is kept too (CPU_TIMES): for work done on this thread alone,
    it is what the machine's other work cannot stretch."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            c0, t0 = time.thread_time(), time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
            cpu[name].append(time.thread_time() - c0)
    CPU_TIMES.clear()
    CPU_TIMES.update({name: statistics.median(c) for name, c in cpu.items()})
    return {name: statistics.median(t) for name, t in times.items()}


def with_numpy_blas(fn: Callable[[], object]) -> Callable[[], object]:
    """fn with NumPy's own BLAS doing the products (a plain install's), where the mkl extra would do them."""

    def call() -> object:
        from app.model import blas

        with blas.using("numpy"):
            return fn()

    return call


def fresh_process_seconds(code: str, repeat: int = 3) -> float:
    """Median seconds a fresh interpreter spends in `code` (imports done before the clock starts)."""
    out = []
    for _ in range(repeat):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        out.append(float(r.stdout.strip().splitlines()[-1]))
    return statistics.median(out)


OURS_LOAD = """
import time
from app.model.loader import load
from app.model.spec import read_spec
t = time.perf_counter(); m = load(read_spec()); m.tokenizer.encode("warm"); print(time.perf_counter() - t)
"""
THEIRS_LOAD = """
import os, time
os.environ["HF_HUB_OFFLINE"] = "1"; os.environ["TRANSFORMERS_VERBOSITY"] = "error"
import transformers
from app.model.spec import default_dir
d = str(default_dir())
t = time.perf_counter()
m = transformers.AutoModel.from_pretrained(d, attn_implementation="eager").eval()
tok = transformers.AutoTokenizer.from_pretrained(d); tok("warm")
print(time.perf_counter() - t)
"""


# the decoder's converted weights, kept between runs (a server keeps them in its data folder)
MODEL_CACHE = Path(platformdirs.user_cache_dir("attention3d")) / "bench-models"
MODEL_CACHE_ENV = {"ATTENTION_MODEL_CACHE": str(MODEL_CACHE)}  # for a bench's server process


def decoder_converted(base: str) -> None:
    """Wait until the server at `base` (started with MODEL_CACHE_ENV) has converted the decoder's
    GGUF file into MODEL_CACHE. A page's first GET /api/models starts that conversion (once per
    file: ~10 s of a core, then kept), which a server that has been serving a while did long ago;
    measured beside it, every page and request is slower."""
    import httpx

    from app.model import registry
    from app.model.families.llama import gguf

    os.environ.update(MODEL_CACHE_ENV)  # gguf.converted() reads where the server writes
    path = registry.decoder_file()
    if path is None:
        return
    httpx.get(base + "/api/models", timeout=300)  # starts the conversion when it is not done yet (its header: seconds)
    for _ in range(1200):
        if gguf.converted(path):
            return
        time.sleep(0.5)
    raise RuntimeError(f"the decoder's GGUF file was not converted into {MODEL_CACHE} in 10 min")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def post_sentence(port: int, text: str, layer: int = 5, head: int = 11, timeout: float = 60) -> float:
    """Seconds for one POST /api/attention of a sentence over a fresh connection, as a browser
    sends it (gzip accepted), until the whole answer is read (asserts a 200)."""
    body = json.dumps({"sentence": text, "layer": layer, "head": head})
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", "/api/attention", body, {"content-type": "application/json", "accept-encoding": "gzip"})
        r = conn.getresponse()
        data = r.read()
    finally:
        conn.close()
    assert r.status == 200, data[:300]
    return time.perf_counter() - t0


def spawn_server(port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("ATTENTION_BACKEND", "ATTENTION_MODEL")}
    cmd = [sys.executable, "-m", "uvicorn", "app.main:app", "--port", str(port), "--log-level", "warning"]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, every thread) a process has used so far (Linux's /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cold_start(text: str) -> tuple[float, float, subprocess.Popen[bytes], int]:
    """Seconds from spawning the server to its first sentence answered, and the CPU seconds the
    server used for it (what a busy machine cannot stretch); the server is left running."""
    port = free_port()
    t0 = time.perf_counter()
    server = spawn_server(port)
    while True:
        try:
            post_sentence(port, text, layer=0, head=0, timeout=30)
            return time.perf_counter() - t0, cpu_seconds(server.pid), server, port
        except (ConnectionRefusedError, ConnectionResetError):
            if server.poll() is not None or time.perf_counter() - t0 > 60:
                raise RuntimeError("the server did not start") from None
            time.sleep(0.005)


def class_of(port: int, students: int, rng: random.Random) -> list[float]:
    """Latencies of `students` new sentences sent at once (each on its own thread)."""
    texts = [student_sentence(rng) for _ in range(students)]
    out: list[float] = []
    errors: list[BaseException] = []
    go = threading.Barrier(students)

    def one(text: str) -> None:
        go.wait()
        try:
            out.append(post_sentence(port, text))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=one, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    return out


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * len(xs) + 0.5) - 1))]


def main() -> None:
    import numpy as np
    import torch
    import transformers
    from fastapi.testclient import TestClient
    from threadpoolctl import threadpool_info  # type: ignore[import-untyped]

    from app.main import create_app
    from app.model import blas, nn
    from app.model.loader import handle_for
    from app.model.spec import default_dir

    rng = random.Random(13)
    colds, cold_cpus = [], []
    for i in range(3):
        seconds, cpu, server, port = cold_start(student_sentence(rng))
        colds.append(seconds)
        cold_cpus.append(cpu)
        if i < 2:
            server.terminate()
            server.wait()
    try:
        for _ in range(2):
            post_sentence(port, student_sentence(rng))  # warm: the first call of each kind
        waves = [class_of(port, 30, rng) for _ in range(3)]
    finally:
        server.terminate()
        server.wait()

    handle = handle_for(None)
    model = handle.model()
    text = sentence()
    n = len(model.tokenizer.encode(text))
    hf = transformers.AutoModel.from_pretrained(str(default_dir()), attn_implementation="eager").eval()
    hf_tok = transformers.AutoTokenizer.from_pretrained(str(default_dir()))

    def theirs() -> object:
        ids = hf_tok(text, return_tensors="pt")
        with torch.no_grad():
            return hf(**ids, output_attentions=True)

    def ours(backend: str) -> Callable[[], object]:
        return lambda: model.forward(model.tokenizer.encode(text).ids, backend)  # type: ignore[arg-type]

    client = TestClient(create_app(backend="numpy"))
    calls = iter(range(10**6))

    def api(layer: int, head: int, fresh: bool, gzip: bool = False) -> Callable[[], object]:
        encoding = {"accept-encoding": "gzip" if gzip else "identity"}

        def call() -> object:
            s = sentence(salt=f"{next(calls)} " if fresh else "")
            r = client.post("/api/attention", json={"sentence": s, "layer": layer, "head": head}, headers=encoding)
            assert r.status_code == 200, r.text
            assert (r.headers.get("content-encoding") == "gzip") == gzip
            return r

        return call

    def one_thread(fn: Callable[[], object]) -> Callable[[], object]:
        def call() -> object:
            threads, workers = torch.get_num_threads(), nn.WORKERS
            torch.set_num_threads(1)
            nn.WORKERS = 1
            try:
                return fn()
            finally:
                torch.set_num_threads(threads)
                nn.WORKERS = workers

        return call

    last = model.spec.layers - 1
    products_ours, products_theirs = products(model, n)
    made_by = blas.name()  # MKL's products when the mkl extra is installed
    with blas.using("numpy"):
        own = blas.name()
    own_row = {"ours_own": (f"  the same, {own} (no mkl extra)", with_numpy_blas(ours("numpy")), None)}
    rows = {
        "theirs": ("transformers forward, output_attentions (reference)", theirs, None),
        "ours": (f"our forward: all layers and heads (NumPy, {made_by})", ours("numpy"), 1.1),
        **(own_row if own != made_by else {}),
        "ours_torch": ("our forward on torch (ATTENTION_BACKEND=torch, CPU)", ours("torch"), None),
        "products": (f"  its matrix products alone ({made_by})", products_ours, None),
        "products_torch": ("  the same products in torch (MKL), as transformers'", products_theirs, None),
        "api_l2": ("POST /api/attention layer 2 head 1, new sentence", api(2, 1, True), 0.8),
        "api_last": (f"POST /api/attention layer {last} head 11, new sentence", api(last, 11, True), 1.3),
        "api_cached": (f"POST /api/attention layer {last} head 11, seen sentence", api(last, 11, False), None),
        "api_l2_gzip": ("the layer 2 row, gzip accepted (as a browser does)", api(2, 1, True, gzip=True), None),
        # One thread each: spinning thread pools (torch's) cannot be stretched by other processes here.
        "theirs_1": ("1 thread each: transformers forward (reference)", one_thread(theirs), None),
        "ours_1": ("1 thread each: our forward", one_thread(ours("numpy")), 1.1),
        "api_l2_1": ("1 thread each: POST layer 2 head 1, new sentence", one_thread(api(2, 1, True)), 0.8),
        "api_last_1": (f"1 thread each: POST layer {last} head 11, new sentence", one_thread(api(last, 11, True)), 1.3),
    }
    measured = interleaved({key: fn for key, (_, fn, _) in rows.items()}, rounds=15)
    t_theirs_load = fresh_process_seconds(THEIRS_LOAD)
    t_ours_load = fresh_process_seconds(OURS_LOAD)

    def verdict(value: float, goal: float | None) -> str:
        return "" if goal is None else f"goal ≤ {goal:g}: {'met' if value <= goal else 'MISSED'}"

    pools = [f"{i['internal_api']} {i['num_threads']}" for i in threadpool_info() if i["user_api"] == "blas"]
    print(
        f"all-MiniLM-L6-v2, {n} tokens; torch {torch.__version__}, {torch.get_num_threads()} threads; "
        f"NumPy {np.__version__}: {nn.WORKERS} threads of ours, BLAS {', '.join(pools)} thread; "
        f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{'':62} {'ms':>8} {'ratio':>7}")
    for key, (name, _, goal) in rows.items():
        t, ref = measured[key], measured["theirs_1" if key.endswith("_1") else "theirs"]
        print(f"{name:62} {t * 1e3:8.1f} {t / ref:6.2f}×  {verdict(t / ref, goal)}")
    rest_ours, rest_theirs = measured["ours"] - measured["products"], measured["theirs"] - measured["products_torch"]
    ref = measured["theirs"]
    print(
        f"{'  the rest of our forward (the forward − its products)':62} {rest_ours * 1e3:8.1f} {rest_ours / ref:6.2f}×"
        f"  (of transformers': {rest_theirs * 1e3:.1f} ms, {rest_theirs / ref:.2f}×)"
    )
    cpu_theirs, cpu_ours = CPU_TIMES["theirs_1"], CPU_TIMES["ours_1"]
    print(
        f"{'1 thread each, CPU time: transformers forward / ours':62} {cpu_theirs * 1e3:8.1f} "
        f"{cpu_ours * 1e3:.1f} ms: {cpu_ours / cpu_theirs:.2f}×  {verdict(cpu_ours / cpu_theirs, 1.1)}"
    )
    print("a spawned server (python -m uvicorn app.main:app)")
    cold = statistics.median(colds)
    print(f"{'cold start: spawn to the first sentence answered, median of 3':62} {cold * 1e3:8.0f}  "
          f"{verdict(cold, 1.0)} s; the server's CPU time {statistics.median(cold_cpus):.2f} s")  # fmt: skip
    every = [t for wave in waves for t in wave]
    print(
        f"{'30 students, new 15-20 word sentences at once (3 waves)':62} "
        f"{len(every)}/{len(every)} answered; p50 {statistics.median(every) * 1e3:.0f} ms, "
        f"p99 {percentile(every, 99) * 1e3:.0f} ms, max {max(every) * 1e3:.0f} ms"
    )
    print("first load (fresh process, imports excluded)")
    for name, t in (
        ("transformers from_pretrained + tokenizer (reference)", t_theirs_load),
        ("our first load: safetensors + tokenizer.json", t_ours_load),
    ):
        print(f"{name:62} {t * 1e3:8.1f} {t / t_theirs_load:6.2f}×")


if __name__ == "__main__":
    main()
