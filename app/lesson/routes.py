"""Routes of the lesson's chapters: rnn, projections, scaling, positions."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/api", tags=["lesson"])
