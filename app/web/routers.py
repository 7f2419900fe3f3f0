"""Every route module of the app, in the order the app includes them (app.main.create_app)."""

from __future__ import annotations

from fastapi import APIRouter

from app.web import attention, chapters, generate, inside, lessons, model, overview, quiz, rooms

ROUTERS: tuple[APIRouter, ...] = (
    attention.router,
    model.router,
    overview.router,
    generate.router,
    inside.router,
    chapters.router,
    rooms.router,
    quiz.router,
    lessons.router,
)
