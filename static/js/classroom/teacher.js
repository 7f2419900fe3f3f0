// The teacher's window (?teacher=1, opened by Present beside the projector, or the teacher link on a
// phone used as a remote): what the projector must never show. A panel over the page holds
//   - the room: its code, how many follow, the connection, whether the screen is blank or hidden
//   - where the class is and what comes next (the next step, or the lesson's next view)
//   - the lesson's note for this view (a note may hold the answer: it stays here)
//   - Back / Next (the clicker's PageUp / PageDown), B and H, Ask the class (or why not), the
//     question's answers coming in, Reveal and End, and the Room menu (the class report)
// The page under it follows the room like the projector does, so the teacher sees the same step.
// The two windows stay in step through the room (presenter.js): either one can drive.

import { CHAPTERS } from "../chapters/index.js";
import { el } from "../dom.js";
import { t } from "../i18n.js";
import { classRole, viewState } from "../pageview.js";
import { call } from "../api.js";
import { viewSummary } from "./lesson-views.js";
import { chapterSteps } from "./questions.js";
import { teacherToken } from "./session.js";

const say = (k, values) => t(`classroom.teacher.${k}`, values);
const STATES = new Set(["live", "connecting", "retrying", "waiting", "closed"]); // the room's connection, in words

const key = (k) => document.body.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true, cancelable: true }));

export class TeacherPanel {
  constructor(presenter) {
    this.presenter = presenter;
    this.lessons = new Map(); // lesson id → the lesson (with its notes), fetched with the teacher token
    document.body.classList.add("cr-teacher");
    classRole("teacher"); // a chapter shows the teacher every answer (its guess-first steps wait for nobody here)
    const root = el("section", { className: "cr-teacher-panel", "aria-label": say("label"), dataset: { testid: "teacher-panel" } });
    this.status = el("p", { className: "cr-teacher-status", role: "status", dataset: { testid: "teacher-status" } });
    this.now = el("p", { className: "cr-teacher-now", dataset: { testid: "teacher-now" } });
    this.next = el("p", { className: "cr-teacher-next", dataset: { testid: "teacher-next-step" } });
    this.noteTitle = el("h2", { className: "cr-teacher-note-title" }, say("noteTitle"));
    this.note = el("p", { className: "cr-teacher-note", dataset: { testid: "teacher-note" } });
    const button = (text, testid, fn, title = "") => {
      const b = el("button", { type: "button", dataset: { testid }, ...(title ? { title } : {}) }, text);
      b.addEventListener("click", fn);
      return b;
    };
    this.back = button(say("back"), "teacher-back", () => key("PageUp"), say("backTitle"));
    this.forward = button(say("next"), "teacher-next", () => key("PageDown"), say("nextTitle"));
    this.blank = button(say("blank"), "teacher-blank", () => presenter.toggleBlank(), say("blankTitle"));
    this.hide = button(say("hide"), "teacher-hide", () => presenter.toggleNumbers(), say("hideTitle"));
    const nav = el("div", { className: "cr-teacher-row" });
    nav.append(this.back, this.forward, this.blank, this.hide);
    const ask = el("div", { className: "cr-teacher-row cr-teacher-ask" });
    ask.append(presenter.askButton, presenter.askWhy, presenter.menu.root);
    root.append(this.status, this.now, this.next, nav, this.noteTitle, this.note, ask, presenter.quiz.root);
    document.querySelector("#main")?.prepend(root);
    this.root = root;
    for (const what of ["room", "view", "quiz"]) presenter.on(what, () => this.draw());
    presenter.on("deck", (deck) => this.drawDeck(deck));
    this.draw();
    this.drawDeck(null);
  }

  draw() {
    const p = this.presenter;
    const room = p.room;
    const screen = p.screenShown === "blank" || p.screenShown === "hidden" ? p.screenShown : "shown";
    const state = p.status ?? "connecting";
    const status = STATES.has(state) ? say(`state.${state}`) : state;
    this.status.textContent = room
      ? say("status", { code: room.code, n: p.followers ?? 0, status, screen })
      : say("waiting");
    this.blank.setAttribute("aria-pressed", String(p.screenShown === "blank"));
    this.hide.setAttribute("aria-pressed", String(p.screenShown === "hidden"));
    const view = viewState();
    const chapter = CHAPTERS.findIndex((c) => c.id === (view.chapter ?? "steps"));
    const steps = chapterSteps(view.chapter ?? "steps");
    const i = steps ? steps.findIndex((s) => s.id === view.step) : -1;
    const here = CHAPTERS[chapter];
    this.now.textContent = here
      ? i >= 0
        ? say("nowStep", { chapter: chapter + 1, chapters: CHAPTERS.length, title: here.title, step: i + 1, stepTitle: steps[i].title })
        : say("now", { chapter: chapter + 1, chapters: CHAPTERS.length, title: here.title })
      : "";
    if (!this.deck?.lesson) {
      const nextStep = steps && i >= 0 ? steps[i + 1] : null;
      const nextChapter = CHAPTERS[chapter + 1];
      this.next.textContent = nextStep
        ? say("nextStep", { step: i + 2, title: nextStep.title })
        : nextChapter
          ? say("nextChapter", { chapter: chapter + 2, title: nextChapter.title })
          : say("lastStep");
    }
    const open = p.quiz.open;
    this.back.disabled = this.forward.disabled = open;
    this.back.title = this.forward.title = open ? say("answering") : "";
  }

  async lesson(id) {
    if (!this.lessons.has(id)) {
      this.lessons.set(id, call("GET", `/api/lessons/${id}`, { secret: teacherToken() }).catch(() => null));
    }
    return this.lessons.get(id);
  }

  /** The lesson's note for the view on the projector, and what comes next. */
  async drawDeck(deck) {
    this.deck = deck;
    if (!deck?.lesson) {
      this.noteTitle.textContent = say("noteTitle");
      this.note.textContent = say("noLesson");
      this.note.dataset.empty = "true";
      this.draw();
      return;
    }
    const lesson = await this.lesson(deck.lesson);
    if (this.deck !== deck) return;
    const view = lesson?.views?.[deck.index];
    this.noteTitle.textContent = say("deckTitle", { title: deck.title || lesson?.title || say("lesson"), index: deck.index + 1, count: deck.count });
    this.note.textContent = view?.note || say("noNote");
    this.note.dataset.empty = String(!view?.note);
    const after = lesson?.views?.[deck.index + 1];
    this.next.textContent = after
      ? after.note
        ? say("nextViewNote", { view: viewSummary(after.state), note: `${after.note.slice(0, 80)}${after.note.length > 80 ? "…" : ""}` })
        : say("nextView", { view: viewSummary(after.state) })
      : say("lastView");
  }
}
