"""The routes of the lesson's chapters, one module per chapter, registered from one list.

Each module owns its chapter's request and answer models and its router; the arithmetic stays in
the chapter's pure module (app.lesson.rnn, app.lesson.scaling, …), which imports
nothing from the web. A new chapter with routes adds its module here and one line to CHAPTERS.

  rnn          POST /api/rnn                  a small RNN beside attention on the same words
  projections  GET  /api/projections          where q, k and v come from: x·W_Q, x·W_K, x·W_V
  scaling      POST /api/scaling              why attention divides by √d_k
  positions    POST /api/positions            word order without and with positions, toy and real
  multihead    POST /api/multihead, GET /api/multihead/example, POST /api/multihead/model
  block        POST /api/block                one transformer block of the real model, by name
  today        POST /api/decoder/today        RoPE, grouped-query heads, the attention sink (the decoder)
  tiles        POST /api/lesson/tiles         attention in blocks of keys with an online softmax
"""

from __future__ import annotations

from fastapi import APIRouter

from app.web.chapters import block, multihead, positions, projections, rnn, scaling, tiles, today

CHAPTERS = (rnn, projections, scaling, positions, multihead, block, today, tiles)  # in the lesson's order

router = APIRouter()
for chapter in CHAPTERS:
    router.include_router(chapter.router)
