"""The join address as a QR code, drawn here as SVG by segno (no network, no script in the SVG)."""

from __future__ import annotations

import io

import segno


def svg(text: str) -> bytes:
    """A black-on-white QR code of `text` (error correction M, quiet zone of 4 modules), as an SVG file."""
    code = segno.make(text, error="m", micro=False)
    out = io.BytesIO()
    code.save(out, kind="svg", scale=8, border=4, dark="#000", light="#fff", xmldecl=False, title="Join the class")
    return out.getvalue()
