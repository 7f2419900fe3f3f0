"""The web layer: every HTTP route and the plumbing under them, over the pure domains.

  http.py          reading bodies (415, 413, 422 naming the field), answers, the one error mapping
  transport.py     big answers out: compute slots, answers in pieces, Accept negotiation
  middleware.py    zstd or gzip, and HEAD        security.py   the CSP and hardening headers
  assets.py        versioned static URLs, the bundle, the import map
  server.py        the uvicorn server `attention3d` runs, with its guards for a school's LAN
  auth.py          the teacher token and presenter keys, read from a request
  routers.py       every route module, in the order the app includes them

Route modules, one per concept: attention.py (POST /api/attention, the examples), model.py (the
models, sentence heads and model info), overview.py, generate.py (writing with a decoder),
chapters/ (one module per chapter of the lesson), rooms.py (the classroom's rooms and their socket),
lessons.py (saved lessons).

Nothing outside this package imports it (tests/test_imports.py): the domains (app.attention,
app.model, app.lesson, app.classroom, app.notebook, …) know nothing of HTTP. Handlers stay thin: read
a body, call a domain function, answer.
"""
