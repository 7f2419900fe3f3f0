"""The torch CUDA path, checked on a GPU machine in one short run: the same numbers as NumPy's, and
the speed of a 512-token forward.

    .venv/bin/python -m bench.gpu_check [--model DIR] [--tokens 512] [--repeat 20]

Prints, for a sentence of `--tokens` tokens through all-MiniLM-L6-v2 (or --model DIR):
  1. the device torch sees (the check fails unless it is CUDA, or --cpu-ok is given)
  2. max |torch − NumPy| of every layer's q, k, v and output, and of every attention stage of
     one head (app.attention with backend="torch" against "numpy", float64), with the tolerance
     each must meet (float32 forward: 1e-4 relative to the array's largest value; float64 stages: 1e-9)
  3. the median seconds of one forward (all layers) on the GPU, on NumPy, and of transformers'
     forward (output_attentions, eager) on the GPU when transformers is installed: ratios in one run
Exit status 0 when every difference is within its tolerance, 1 otherwise.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

WORDS = [
    "the",
    "teacher",
    "asked",
    "why",
    "the",
    "animal",
    "did",
    "not",
    "cross",
    "the",
    "busy",
    "street",
    "before",
    "the",
    "rain",
    "started",
    "again",
]


def median_seconds(fn: Callable[[], object], repeat: int, sync: Callable[[], None]) -> float:
    for _ in range(3):
        fn()
    sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, default=None, help="a model folder (default: all-MiniLM-L6-v2)")
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--cpu-ok", action="store_true", help="run the comparison even without a GPU")
    args = parser.parse_args()

    import torch

    from app.attention import attention
    from app.model.loader import load
    from app.model.nn import ops
    from app.model.spec import read_spec

    cuda = torch.cuda.is_available()
    name = torch.cuda.get_device_name(0) if cuda else "none (CPU only)"
    print(f"torch {torch.__version__}, CUDA device: {name}")
    if not cuda and not args.cpu_ok:
        print("FAIL: torch sees no CUDA device")
        return 1
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    model = load(read_spec(args.model))
    text = " ".join(WORDS[i % len(WORDS)] for i in range(args.tokens * 2))
    ids = model.tokenizer.encode(text).ids[: args.tokens]
    ids[-1] = model.tokenizer.encode("").ids[-1]  # the sentence ends as a real one does ([SEP] for BERT)
    print(f"model {model.spec.name}: {model.spec.layers} layers × {model.spec.heads} heads, {len(ids)} tokens")
    ok = True

    theirs = model.forward(ids, "numpy")
    ours = model.forward(ids, "torch")
    assert ops("torch").device.type == ("cuda" if cuda else "cpu")  # type: ignore[attr-defined]
    print(f"{'forward, float32':34} {'max |torch − numpy|':>20} {'tolerance':>10}")
    for field in ("q", "k", "v", "hidden"):
        for i, (a, b) in enumerate(zip(getattr(theirs, field), getattr(ours, field), strict=True)):
            diff = float(np.abs(a.astype(np.float64) - b).max())
            tol = 1e-4 * max(1.0, float(np.abs(a).max()))
            ok &= diff <= tol
            print(f"{field + ' of layer ' + str(i):34} {diff:20.3e} {tol:10.1e}{'' if diff <= tol else '  FAIL'}")

    layer, head = model.spec.layers // 2, 1
    q, k, v = (t[layer][head].astype(np.float64) for t in (theirs.q, theirs.k, theirs.v))
    for mask in ("full", "causal"):
        a, b = attention(q, k, v, mask, "numpy"), attention(q, k, v, mask, "torch")
        for stage, x in a.as_dict().items():
            y = getattr(b, stage)
            finite = np.isfinite(x)
            same_hidden = bool((finite == np.isfinite(y)).all())
            diff = float(np.abs(x[finite] - y[finite]).max())
            tol = 1e-9 * max(1.0, float(np.abs(x[finite]).max()))
            good = diff <= tol and same_hidden
            ok &= good
            label = f"stage {stage}, {mask}, L{layer} H{head}"
            print(f"{label:34} {diff:20.3e} {tol:10.1e}{'' if good else '  FAIL'}")

    t_gpu = median_seconds(lambda: model.forward(ids, "torch"), args.repeat, sync)
    t_numpy = median_seconds(lambda: model.forward(ids, "numpy"), max(3, args.repeat // 4), lambda: None)
    print(f"\n{len(ids)}-token forward, all layers, median of {args.repeat}:")
    print(f"{'ours, torch on ' + ('CUDA' if cuda else 'CPU'):34} {t_gpu * 1e3:9.2f} ms")
    print(f"{'ours, NumPy (CPU)':34} {t_numpy * 1e3:9.2f} ms   {t_numpy / t_gpu:6.1f}× the torch time")
    try:
        import transformers
    except ImportError:
        print("transformers is not installed: no reference row")
    else:
        device = "cuda" if cuda else "cpu"
        hf = transformers.AutoModel.from_pretrained(str(model.spec.path), attn_implementation="eager")
        hf = hf.eval().to(device)
        batch = torch.tensor([ids], device=device)

        def reference() -> object:
            with torch.no_grad():
                return hf(input_ids=batch, output_attentions=True)

        t_hf = median_seconds(reference, args.repeat, sync)
        print(
            f"{'transformers on ' + device + ' (reference)':34} {t_hf * 1e3:9.2f} ms   ours/theirs {t_gpu / t_hf:5.2f}×"
        )
    print("PASS" if ok else "FAIL: a difference is over its tolerance")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
