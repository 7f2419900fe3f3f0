"""The lesson's chapters: the computations behind each chapter that the page draws (pure NumPy, one
module per chapter), and their routes (app.web.chapters: one module per chapter, registered in a list)."""
