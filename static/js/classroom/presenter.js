// The presenter: the projector view (Present, ?present=1), the room the class follows, and the quiz.
//
// With the teacher token (from the teacher link) Present opens a room: the page PUTs its view
// state on every change of the view (hub.onViewChange), shows the join address in large type, its
// QR code (drawn by the server) and the number of followers. B blanks the screen, H hides the
// numbers (predict first), PageDown / PageUp keep walking the lesson.

import { el } from "../dom.js";
import { currentView, onViewChange, viewState } from "../hub.js";
import { call } from "./api.js";
import { answerOf, QuizPanel } from "./quiz.js";
import { keepPresenterRoom, presenterRoom, teacherToken, viewOnly } from "./session.js";
import { RoomSocket } from "./socket.js";

const MIN_PUT_GAP_MS = 60; // ≤ 16 changes a second reach the server (its limit is 20)

export class Presenter {
  constructor(bar) {
    this.room = null;
    this.socket = null;
    this.presenting = false;
    this.sending = false;
    this.queued = null;
    this.button = el("button", { type: "button", className: "cr-present", dataset: { testid: "present" } }, "Present");
    this.button.setAttribute("aria-pressed", "false");
    this.button.addEventListener("click", () => this.setPresenting(!this.presenting));
    this.askButton = el("button", { type: "button", dataset: { testid: "quiz-ask" } }, "Ask the class");
    this.askButton.title = "Which word will the focused query attend to most?";
    this.askButton.addEventListener("click", () => this.ask());
    this.roomTools = el("span", { className: "cr-room-tools" });
    this.roomTools.append(this.askButton);
    this.roomTools.hidden = true;
    this.message = el("span", { className: "cr-message", role: "status", dataset: { testid: "classroom-message" } });
    bar.append(this.button, this.roomTools, this.message);

    this.join = el("aside", { className: "cr-join", "aria-label": "Join the class", dataset: { testid: "join-panel" } });
    this.join.hidden = true;
    document.querySelector("#app")?.append(this.join);
    this.blank = el("div", { className: "cr-blank", dataset: { testid: "blank" } });
    this.blank.hidden = true;
    this.blank.addEventListener("click", () => this.toggleBlank(false));
    document.body.append(this.blank);
    this.quiz = new QuizPanel({ mode: "presenter", reveal: () => this.reveal(), end: () => this.endQuiz() });
    document.querySelector("#main")?.prepend(this.quiz.root);
    onViewChange((params) => this.send(params));
  }

  say(text) {
    this.message.textContent = text;
  }

  async setPresenting(on) {
    this.presenting = on;
    document.body.classList.toggle("cr-presenting", on);
    document.documentElement.classList.toggle("cr-presenting-root", on);
    this.button.textContent = on ? "Exit presenting" : "Present";
    this.button.setAttribute("aria-pressed", String(on));
    this.join.hidden = !on;
    if (!on) this.toggleBlank(false);
    if (on && !this.room) await this.open();
    this.drawJoin();
  }

  /** Open a room (or take back this tab's room), then send the current view. */
  async open() {
    const token = teacherToken();
    if (!token) {
      this.say("Open the teacher link (/?token=…) to let the class follow.");
      return;
    }
    const kept = presenterRoom();
    if (kept) {
      try {
        await call("PUT", `/api/rooms/${kept.code}/state`, { body: viewOnly(viewState()), secret: kept.key });
        this.start(kept);
        return;
      } catch {
        keepPresenterRoom(null); // closed, expired or from another server: open a new one
      }
    }
    try {
      const created = await call("POST", "/api/rooms", { secret: token });
      this.start({ code: created.code, key: created.presenter_key, join_url: created.join_url });
      this.send(viewState());
    } catch (e) {
      this.say(e.status === 403 ? "This teacher link is not this server's (was it restarted with another token?)" : e.message);
    }
  }

  start(room) {
    this.room = room;
    keepPresenterRoom(room);
    this.roomTools.hidden = false;
    this.followers = 0;
    this.socket = new RoomSocket(room.code, {
      presenterKey: room.key,
      onMessage: (m) => this.heard(m),
      onStatus: (status) => {
        this.join.dataset.status = status;
      },
    });
    this.say(`Room ${room.code} is open.`);
    this.drawJoin();
  }

  heard(msg) {
    if ("followers" in msg) {
      this.followers = msg.followers;
      this.drawCount();
      this.quiz.setFollowers(msg.followers);
    }
    if ("quiz" in msg) this.quiz.show(msg.quiz);
    if (msg.votes) this.quiz.progress(msg.votes);
  }

  drawJoin() {
    if (!this.presenting) return;
    if (!this.room) {
      this.join.replaceChildren(el("p", { className: "cr-join-hint" }, this.message.textContent || "No room is open."));
      return;
    }
    const shown = this.room.join_url.replace(/^https?:\/\//, "");
    const local = /^https?:\/\/(127\.|localhost|\[::1\])/.test(this.room.join_url);
    const qr = el("img", { className: "cr-qr", src: `/api/rooms/${this.room.code}/qr.svg`, alt: `QR code of ${shown}` });
    qr.dataset.testid = "join-qr";
    this.count = el("p", { className: "cr-count", dataset: { testid: "follower-count" } });
    const address = el("p", { className: "cr-address", dataset: { testid: "join-address" } });
    const cut = shown.indexOf("/?");
    address.append(el("span", {}, shown.slice(0, cut)), el("wbr"), el("span", {}, shown.slice(cut)));
    const code = el("p", { className: "cr-code", dataset: { testid: "join-code" } }, this.room.code);
    const parts = [qr, el("p", { className: "cr-join-title" }, "Join on your phone"), address, code, this.count];
    if (local) parts.push(el("p", { className: "cr-warn" }, "Students cannot reach this: start with --host 0.0.0.0"));
    this.join.replaceChildren(...parts);
    this.drawCount();
  }

  drawCount() {
    if (!this.count) return;
    const n = this.followers ?? 0;
    this.count.textContent = `${n} following`;
    this.count.dataset.count = String(n);
  }

  /** PUT the view: at most one request in flight, the latest view wins. */
  async send(params) {
    if (!this.room) return;
    this.queued = viewOnly(params);
    if (this.sending) return;
    this.sending = true;
    try {
      while (this.queued) {
        const state = this.queued;
        this.queued = null;
        const started = performance.now();
        try {
          await call("PUT", `/api/rooms/${this.room.code}/state`, { body: state, secret: this.room.key });
        } catch (e) {
          this.say(`The class did not get this view: ${e.message}`);
        }
        const wait = MIN_PUT_GAP_MS - (performance.now() - started);
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
    } finally {
      this.sending = false;
    }
  }

  toggleBlank(on = this.blank.hidden) {
    this.blank.hidden = !on;
  }

  toggleNumbers() {
    document.body.classList.toggle("cr-numbers-hidden");
  }

  async ask() {
    const view = currentView();
    const tokens = view?.answer?.tokens;
    if (!this.room || !Array.isArray(tokens) || answerOf(view.answer, view.focus) === null) {
      this.say("A quiz needs a view with attention weights (the five steps, or the masks).");
      return;
    }
    this.quizView = { answer: view.answer, focus: view.focus };
    try {
      await call("POST", `/api/rooms/${this.room.code}/quiz`, {
        body: { tokens: tokens.map(String), focus: view.focus },
        secret: this.room.key,
      });
    } catch (e) {
      this.say(e.message);
    }
  }

  async reveal() {
    const answer = answerOf(this.quizView?.answer, this.quizView?.focus);
    if (answer === null) return;
    try {
      await call("POST", `/api/rooms/${this.room.code}/quiz/reveal`, { body: { answer }, secret: this.room.key });
    } catch (e) {
      this.say(e.message);
    }
  }

  async endQuiz() {
    try {
      await call("DELETE", `/api/rooms/${this.room.code}/quiz`, { secret: this.room.key });
    } catch (e) {
      this.say(e.message);
    }
  }
}
