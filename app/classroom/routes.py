"""Routes of the classroom: rooms, their WebSocket, the quiz, saved lessons."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/api", tags=["classroom"])
