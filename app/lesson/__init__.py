"""The lesson's chapters: the computations behind each chapter that the page draws (pure NumPy),
and their routes (routes.py: rnn, projections, scaling, positions; model_routes.py: multihead, block)."""
