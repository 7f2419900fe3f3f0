"""Routes of the classroom's saved lessons: a title and views, each view with the teacher's note.

POST   /api/lessons              teacher token, {title, views} → 201 {id}
GET    /api/lessons              → [{id, title, views, …}]
GET    /api/lessons/{id}         → the lesson
PUT    /api/lessons/{id}         teacher token, {title, views} → 204
DELETE /api/lessons/{id}         teacher token → 204

The lessons live in the classroom's store (app.classroom.store); bodies are read by app.http.
"""

from __future__ import annotations

from typing import Any

import anyio
from fastapi import APIRouter, Path, Request, Response

from app.classroom import auth, limits
from app.classroom.schemas import Lesson, LessonCreated, LessonIn, LessonSummary
from app.classroom.service import classroom
from app.errors import ClientError
from app.http import body_doc, error_docs, json_body

router = APIRouter(prefix="/api", tags=["classroom"])

_AUTH = error_docs(401, 403)
_BAD = error_docs(413, 415, 422)
_LESSON = error_docs(s404="No such lesson.")
LessonId = Path(ge=1, le=2**62, description="the lesson's id")


def _no_lesson(lesson_id: int) -> ClientError:
    return ClientError(404, ["path", "lesson_id"], f"no lesson {lesson_id}", "no_lesson")


def _views(body: LessonIn) -> list[dict[str, Any]]:
    return [{"state": v.state.plain(), "note": v.note} for v in body.views]


@router.post(
    "/lessons",
    status_code=201,
    response_model=LessonCreated,
    summary="Save a lesson: a title and views, each with a note",
    responses={**_AUTH, **_BAD, **error_docs(s429=f"{limits.MAX_LESSONS} lessons are saved already.")},
    openapi_extra=body_doc(LessonIn),
)
async def create_lesson(request: Request) -> LessonCreated:
    auth.require_teacher(request)
    body = await json_body(request, LessonIn, limits.MAX_LESSON_BYTES)
    store = classroom(request.app).store
    if await anyio.to_thread.run_sync(store.count_lessons) >= limits.MAX_LESSONS:
        raise ClientError(429, ["body"], f"{limits.MAX_LESSONS} lessons are saved: delete one first", "lesson_limit")
    lesson_id = await anyio.to_thread.run_sync(store.add_lesson, body.title, _views(body))
    return LessonCreated(id=lesson_id)


@router.get("/lessons", response_model=list[LessonSummary], summary="The saved lessons")
async def list_lessons(request: Request) -> list[dict[str, Any]]:
    return await anyio.to_thread.run_sync(classroom(request.app).store.lessons)


@router.get("/lessons/{lesson_id}", response_model=Lesson, summary="One lesson", responses=_LESSON)
async def get_lesson(request: Request, lesson_id: int = LessonId) -> dict[str, Any]:
    lesson = await anyio.to_thread.run_sync(classroom(request.app).store.lesson, lesson_id)
    if lesson is None:
        raise _no_lesson(lesson_id)
    return lesson


@router.put(
    "/lessons/{lesson_id}",
    status_code=204,
    summary="Replace a lesson",
    responses={**_AUTH, **_LESSON, **_BAD},
    openapi_extra=body_doc(LessonIn),
)
async def replace_lesson(request: Request, lesson_id: int = LessonId) -> Response:
    auth.require_teacher(request)
    body = await json_body(request, LessonIn, limits.MAX_LESSON_BYTES)
    store = classroom(request.app).store
    if not await anyio.to_thread.run_sync(store.replace_lesson, lesson_id, body.title, _views(body)):
        raise _no_lesson(lesson_id)
    return Response(status_code=204)


@router.delete("/lessons/{lesson_id}", status_code=204, summary="Delete a lesson", responses={**_AUTH, **_LESSON})
async def delete_lesson(request: Request, lesson_id: int = LessonId) -> Response:
    auth.require_teacher(request)
    if not await anyio.to_thread.run_sync(classroom(request.app).store.delete_lesson, lesson_id):
        raise _no_lesson(lesson_id)
    return Response(status_code=204)
