"""Sentence mode speed, as ratios against transformers measured in the same run.

    .venv/bin/python -m bench.model

A ~300-token sentence through all-MiniLM-L6-v2 (6 layers × 12 heads), each row against
transformers' own forward pass (eager attention, output_attentions=True, torch CPU, float32),
tokenizing included on both sides:

1. our forward: tokenize, then every layer's per-head Q, K, V and attention through
   app.attention (all 6 × 12 heads: what transformers' forward gives)                 goal < 1×
2. POST /api/attention {"sentence", "layer": 5, "head": 11} end to end (in-process client,
   JSON out): a sentence not seen before (forward pass), and the same again (cached)
3. first load: weights + tokenizer read from disk by our loader, vs
   transformers' AutoModel.from_pretrained + AutoTokenizer, each in a fresh process

Needs the test extra (transformers, torch==2.13.0). Numbers depend on the machine: the
ratios are what to compare.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

BASE = (
    "The animal didn't cross the street because it was too tired, so it lay down in the shade "
    "and watched the cars go by; later, when the evening came, it finally crossed. "
)


def sentence(tokens: int = 300, salt: str = "") -> str:
    """A sentence of about `tokens` tokens for MiniLM's tokenizer (BASE is ~40 tokens)."""
    text = (BASE * (tokens // 35 + 1)).split(" ")
    return salt + " ".join(text[: int(tokens * 0.83)])


def interleaved(fns: dict[str, Callable[[], object]], rounds: int, warmup: int = 2) -> dict[str, float]:
    """Median seconds of each function, called in turn round after round so that all of them
    see the same machine (a shared, busy machine slows every row alike, not just one)."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


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


def main() -> None:
    import torch
    import transformers
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.model.loader import handle_for
    from app.model.spec import default_dir

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

    def ours() -> object:
        return model.forward(model.tokenizer.encode(text).ids)

    client = TestClient(create_app(backend="numpy"))
    calls = iter(range(10**6))

    def api(fresh: bool) -> object:
        s = sentence(salt=f"{next(calls)} " if fresh else "")
        r = client.post("/api/attention", json={"sentence": s, "layer": 5, "head": 11})
        assert r.status_code == 200, r.text
        return r

    names = {
        "theirs": "transformers forward, output_attentions (reference)",
        "ours": "our forward: all layers and heads through app.attention",
        "api_new": "POST /api/attention layer 5 head 11, new sentence",
        "api_cached": "POST /api/attention layer 5 head 11, cached sentence",
    }
    fns = {"theirs": theirs, "ours": ours, "api_new": lambda: api(True), "api_cached": lambda: api(False)}
    measured = interleaved(fns, rounds=15)
    t_theirs = measured["theirs"]
    rows = [(names[key], measured[key]) for key in names]
    t_theirs_load = fresh_process_seconds(THEIRS_LOAD)
    loads = [
        ("transformers from_pretrained + tokenizer (reference)", t_theirs_load),
        ("our first load: safetensors + tokenizer.json", fresh_process_seconds(OURS_LOAD)),
    ]
    print(f"all-MiniLM-L6-v2, {n} tokens; torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    print(f"{'':58} {'ms':>8} {'ratio':>7}")
    for name, t in rows:
        print(f"{name:58} {t * 1e3:8.1f} {t / t_theirs:6.2f}×")
    print("first load (fresh process, imports excluded)")
    for name, t in loads:
        print(f"{name:58} {t * 1e3:8.1f} {t / t_theirs_load:6.2f}×")


if __name__ == "__main__":
    main()
