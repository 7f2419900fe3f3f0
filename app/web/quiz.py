"""Routes of the class quiz and the class reports. The quiz: app.classroom.quiz; the questions and their
answers: app.classroom.questions; the reports: app.classroom.report.

GET    /api/questions                      every question: its chapter, the steps it may be asked at, its kind
POST   /api/rooms/{code}/quiz              presenter key, {question} → 201 {id} (the server computes the answer)
POST   /api/rooms/{code}/quiz/reveal       presenter key → the quiz with its answer and counts
DELETE /api/rooms/{code}/quiz              presenter key → 204
GET    /api/rooms/{code}/quiz/summary      presenter key → the room's class so far: one row per question, totals
GET    /api/rooms/{code}/quiz/summary.csv  presenter key → the same as CSV (a download)
PUT    /api/rooms/{code}/deck              presenter key, {lesson, title, index, count} → 204 (presenters hear it)
GET    /api/reports?lesson=ID              teacher token → the kept class reports (newest first), of one lesson
GET    /api/reports/{id}                   teacher token → one report: its rows and totals
GET    /api/reports/{id}.csv               teacher token → the same as CSV
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import numpy as np
from fastapi import APIRouter, Path, Query, Request, Response

from app.attention import Backend, Mask
from app.classroom import quiz, report, rooms
from app.classroom.broker import Broker
from app.classroom.database import Unavailable
from app.classroom.questions import SentenceAttention, catalogue
from app.classroom.schemas import Deck, QuestionInfo, QuizCreated, QuizStart, Report, ReportSummary, RoomReport
from app.classroom.service import classroom
from app.errors import ClientError, InputError, in_range
from app.web import auth as web_auth
from app.web.http import body_doc, error_docs, json_body
from app.web.rooms import RoomRoute

router = APIRouter(prefix="/api", tags=["classroom"], route_class=RoomRoute)  # Redis away: 503 naming it
log = logging.getLogger(__name__)

_AUTH = error_docs(401, 403)
_ROOM = error_docs(s404="No such room (closed, expired or never opened).")
_BAD = error_docs(413, 415, 422)
_DOWN = error_docs(s503="The database can't be reached now (rooms and the quiz keep working).")
Code = Path(max_length=32, description="the room's code (case and dashes do not matter)")
ReportId = Path(ge=1, le=2**62, description="the report's id")
SMALL_BODY_BYTES = 4096
WRITING_DRAW = 7  # the Write chapter's fixed random draw (static/js/chapters/writing.js DRAW)


class ServerModels:
    """The real models, as the questions about them need them (app.classroom.questions.Models)."""

    def __init__(self, app: Any) -> None:
        self.default_dir = getattr(app.state, "model_dir", None)
        self.backend: Backend = app.state.backend

    def _handle(self, model_id: str | None) -> Any:
        from app.model import registry

        return registry.handle(model_id, self.default_dir)

    def sentence(
        self, sentence: str, model: str | None, layer: int | str, head: int | str, mask: Mask
    ) -> SentenceAttention:
        from app.model.service import sentence_attention

        fields, arrays = sentence_attention(self._handle(model), sentence, layer, head, mask, False, self.backend)  # type: ignore[arg-type]
        return SentenceAttention(list(fields["tokens"]), np.asarray(arrays["masked"]), np.asarray(arrays["weights"]))

    def block(self, sentence: str, layer: int) -> tuple[list[str], dict[str, np.ndarray]]:
        from app.lesson import block as blocks
        from app.model.service import encode_sentence

        handle = self._handle(None)
        spec = handle.spec()
        in_range("layer", layer, spec.layers, spec.name)
        encoded = encode_sentence(handle, spec, sentence)
        model = handle.model()
        with np.errstate(over="ignore", invalid="ignore"):
            x = blocks.layer_input(encoded.ids, model.weights, spec, layer, self.backend)
            b = blocks.block(x, model.weights, spec, layer, self.backend)
        norms = {name: np.linalg.norm(v.astype(np.float64), axis=-1) for name, v in b.vectors.items()}
        return list(encoded.tokens), norms

    def _decoder(self) -> Any:
        from app.model import registry

        model = self._handle(registry.DECODER_ID).model()
        if model.spec.kind != "llama":
            raise InputError("model", f"{model.spec.name} is not a decoder")
        return model

    def today(self, sentence: str, layer: int, head: int) -> tuple[list[str], np.ndarray]:
        from app.lesson.today import for_sentence
        from app.model import registry

        t = for_sentence(self._handle(registry.DECODER_ID), sentence, layer, head)
        return list(t.tokens), np.asarray(t.head_weights)

    def next_tokens(self, prompt: str, written: int, sampling: tuple[float, int, float]) -> list[tuple[str, float]]:
        from app.model import generate

        model = self._decoder()
        ids = model.tokenizer.encode(prompt).ids
        if not ids or len(ids) + written >= model.spec.max_positions:
            return []
        draw = generate.Sampling(*sampling)  # the Write chapter's fixed draw: the same tokens as the page wrote
        steps = generate.write(model, ids, written + 1, draw, WRITING_DRAW, model.spec.layers - 1, 0, self.backend)
        try:
            for item in steps:
                if isinstance(item, generate.Done):
                    return []
                if item.index == written:
                    return [(c.token, float(c.p)) for c in item.candidates]
        finally:
            steps.close()
        return []

    def lens(self, prompt: str) -> tuple[int, str, int]:
        from app.model import inside, registry

        handle = self._handle(registry.DECODER_ID)
        guess = inside.every_layers_guess(handle, prompt, None, self.backend)
        return int(guess["first_top"]), str(guess["answer"]["token"]), handle.spec().layers

    def next_word_without(self, prompt: str, heads: list[tuple[int, int]]) -> tuple[str, float, float]:
        from app.model import inside, registry

        return inside.next_word_without(self._handle(registry.DECODER_ID), prompt, heads, self.backend)


def _keeper(request: Request) -> quiz.Keep:
    """Keeps a finished question in the class report of its run (the lessons' database)."""
    room = classroom(request.app)

    def keep(run: str, code: str, entry: dict[str, Any]) -> None:
        report.Reports(room.store.db).add(run, code, entry)

    return keep


async def _presenters_room(request: Request, code: str) -> tuple[Broker, str]:
    code = rooms.normal_code(code)
    broker = classroom(request.app).broker
    await web_auth.require_presenter(request, broker, code)
    return broker, code


@router.get("/questions", response_model=list[QuestionInfo], summary="The questions the class can be asked")
async def list_questions() -> list[dict[str, Any]]:
    """Where each question may be asked (chapter and steps), its kind and a short name: never an answer."""
    return catalogue()


@router.post(
    "/rooms/{code}/quiz",
    status_code=201,
    response_model=QuizCreated,
    summary="Ask the class a question about the room's current view",
    responses={**_AUTH, **_ROOM, **_BAD, **error_docs(s409="The class is not at a step this question is asked at.")},
    openapi_extra=body_doc(QuizStart),
)
async def start_quiz(request: Request, code: str = Code) -> QuizCreated:
    """The server reads the room's view, computes the question and its answer from the chapter's numbers, and
    keeps the answer until the reveal. Every page gets the question and its options."""
    broker, code = await _presenters_room(request, code)
    body = await json_body(request, QuizStart, SMALL_BODY_BYTES)
    return QuizCreated(id=await quiz.start(broker, code, body, ServerModels(request.app), _keeper(request)))


@router.post(
    "/rooms/{code}/quiz/reveal",
    summary="Reveal the answer (every page sees it and the counts)",
    responses={**_AUTH, **_ROOM, **error_docs(s409="No quiz is running, or its answer is out already.")},
)
async def reveal_quiz(request: Request, code: str = Code) -> dict[str, Any]:
    broker, code = await _presenters_room(request, code)
    return await quiz.reveal(broker, code, _keeper(request))


@router.delete("/rooms/{code}/quiz", status_code=204, summary="End the quiz", responses={**_AUTH, **_ROOM})
async def end_quiz(request: Request, code: str = Code) -> Response:
    broker, code = await _presenters_room(request, code)
    await quiz.end(broker, code, _keeper(request))
    return Response(status_code=204)


async def _room_report(broker: Broker, code: str) -> dict[str, Any]:
    entries = await broker.quiz_log(code)
    return {"rows": report.rows(entries), "totals": report.totals(entries)}


@router.get(
    "/rooms/{code}/quiz/summary",
    response_model=RoomReport,
    summary="The class so far: per question asked, answered, % right, the most common wrong answer, the time",
    responses={**_AUTH, **_ROOM},
)
async def quiz_summary(request: Request, code: str = Code) -> dict[str, Any]:
    broker, code = await _presenters_room(request, code)
    return await _room_report(broker, code)


def _csv(text: str, name: str) -> Response:
    headers = {"content-disposition": f'attachment; filename="{name}"', "cache-control": "no-store"}
    return Response(text.encode("utf-8-sig"), media_type="text/csv; charset=utf-8", headers=headers)


@router.get(
    "/rooms/{code}/quiz/summary.csv",
    summary="The class so far as CSV (one row per question)",
    responses={200: {"content": {"text/csv": {}}}, **_AUTH, **_ROOM},
    response_class=Response,
)
async def quiz_summary_csv(request: Request, code: str = Code) -> Response:
    broker, code = await _presenters_room(request, code)
    return _csv(report.csv_text(await broker.quiz_log(code)), f"class-{code}.csv")


@router.put(
    "/rooms/{code}/deck",
    status_code=204,
    summary="The saved lesson the teacher's windows play (presenters only hear it)",
    responses={**_AUTH, **_ROOM, **_BAD},
    openapi_extra=body_doc(Deck),
)
async def put_deck(request: Request, code: str = Code) -> Response:
    """Every presenter socket of the room hears {"deck": …}: the teacher's other window shows that view's note."""
    broker, code = await _presenters_room(request, code)
    deck = await json_body(request, Deck, SMALL_BODY_BYTES)
    kept = None if deck.lesson is None else deck.model_dump()
    await broker.set_deck(code, kept)
    await broker.publish(code, json.dumps({"deck": kept}), presenters_only=True)
    return Response(status_code=204)


async def _reports(request: Request, work: Any) -> Any:
    web_auth.require_teacher(request)
    try:
        return await anyio.to_thread.run_sync(lambda: work(report.Reports(classroom(request.app).store.db)))
    except Unavailable as e:
        log.warning("class reports: %s", e)
        msg = "the database can't be reached right now: the reports come back when it does (the quiz keeps working)"
        raise ClientError(503, ["server", "database"], msg, "database_unavailable") from None


@router.get(
    "/reports",
    response_model=list[ReportSummary],
    summary="The kept class reports, newest first (of one saved lesson with ?lesson=, 0 for none)",
    responses={**_AUTH, **_DOWN},
)
async def list_reports(
    request: Request, lesson: int | None = Query(None, ge=0, le=2**62, description="a saved lesson's id")
) -> Any:
    return await _reports(request, lambda r: r.listed(lesson_id=lesson))


def _no_report(report_id: int) -> ClientError:
    return ClientError(404, ["path", "report_id"], f"no report {report_id}", "no_report")


@router.get(
    "/reports/{report_id}.csv",
    summary="One class report as CSV",
    responses={200: {"content": {"text/csv": {}}}, **_AUTH, **_DOWN, **error_docs(s404="No such report.")},
    response_class=Response,
)
async def get_report_csv(request: Request, report_id: int = ReportId) -> Response:
    found = await _reports(request, lambda r: r.get(report_id))
    if found is None:
        raise _no_report(report_id)
    return _csv(report.csv_text(found["entries"]), f"class-report-{report_id}.csv")


@router.get(
    "/reports/{report_id}",
    response_model=Report,
    summary="One class report: per question the chapter and step, in the room, answered, % right, …",
    responses={**_AUTH, **_DOWN, **error_docs(s404="No such report.")},
)
async def get_report(request: Request, report_id: int = ReportId) -> Any:
    found = await _reports(request, lambda r: r.get(report_id))
    if found is None:
        raise _no_report(report_id)
    return found
