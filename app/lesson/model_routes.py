"""Routes of the lesson's chapters that run a model's layer: multihead, block."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/api", tags=["lesson"])
