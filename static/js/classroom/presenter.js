// The presenter: the projector view (Present, ?present=1), the room the class follows, and the quiz.
//
// With the teacher token (from the teacher link) Present opens a room: the page PUTs its view
// state on every change of the view (pageview.js onViewChange), shows the join address in large type, its
// QR code (drawn by the server) and the number of followers (the panel folds away once students
// have joined). B blanks the screen, H hides the numbers (predict first): both on every
// follower's page too (the state's `screen`). PageDown / PageUp keep walking the lesson. A line
// says where the class is (chapter · step · mask); the side panels fit their boxes (fit.js). The
// Room menu (roommenu.js): the quiz summary and its CSV, reset the room, close it.

import { call } from "../api.js";
import { el } from "../dom.js";
import { applyViewState, currentView, onViewChange, presenting, reframe, viewState } from "../pageview.js";
import { fitPanels, PANELS } from "./fit.js";
import { answerOf, QuizPanel } from "./quiz.js";
import { RoomMenu } from "./roommenu.js";
import { keepPresenterRoom, keepQuizAnswer, presenterRoom, quizAnswer, teacherToken, viewOnly } from "./session.js";
import { RoomSocket } from "./socket.js";
import { withhold } from "./withhold.js";

const $ = (id) => document.getElementById(id);

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
    this.menu = new RoomMenu({ room: () => this.room, say: (text) => this.say(text), closed: () => this.closed() });
    this.roomTools.append(this.askButton, this.menu.root);
    this.roomTools.hidden = true;
    this.where = el("p", { className: "cr-where", dataset: { testid: "projector-where" } });
    this.message = el("span", { className: "cr-message", role: "status", dataset: { testid: "classroom-message" } });
    bar.append(this.button, this.roomTools, this.message);
    document.querySelector(".topbar")?.append(this.where);

    this.join = el("aside", { className: "cr-join", "aria-label": "Join the class", dataset: { testid: "join-panel" } });
    this.join.hidden = true;
    document.querySelector("#app")?.append(this.join);
    this.blank = el("div", { className: "cr-blank", dataset: { testid: "blank" } });
    this.blank.hidden = true;
    this.blank.addEventListener("click", () => this.toggleBlank(false));
    document.body.append(this.blank);
    this.quiz = new QuizPanel({ mode: "presenter", reveal: () => this.reveal(), end: () => this.endQuiz() });
    document.querySelector("#main")?.prepend(this.quiz.root);
    onViewChange((params) => {
      this.send(params);
      this.drawWhere(params);
      this.scheduleFit();
    });
    window.addEventListener("resize", () => {
      this.scheduleFit();
      this.reframe();
    });
    // the panels change when a chapter draws (often after the view change): fit them again then
    this.fitting = 0;
    this.watch = new MutationObserver(() => this.scheduleFit());
    for (const panel of document.querySelectorAll(PANELS)) this.watch.observe(panel, { childList: true, subtree: true, characterData: true });
  }

  scheduleFit() {
    if (!this.presenting || this.fitting) return;
    this.fitting = requestAnimationFrame(() => {
      this.fitting = 0;
      this.drawWhere();
      this.fit();
    });
  }

  /** The room was closed (Room → Close the room): no room, no tools, the projector view ends. */
  closed() {
    this.socket?.stop();
    this.socket = null;
    this.room = null;
    keepPresenterRoom(null);
    this.quiz.show(null);
    this.roomTools.hidden = true;
    this.followers = 0;
    if (this.presenting) this.setPresenting(false);
  }

  /** chapter · step · mask: where the class is, in one line. */
  drawWhere(params = viewState()) {
    const chapter = ($("chapter-name")?.textContent || params.chapter || "").trim();
    const title = document.querySelector(params.chapter === "steps" || params.chapter === "masks" ? "#step-title" : "#chapter-title");
    const parts = [chapter, (title?.textContent || params.step || "").trim()];
    if (params.chapter === "steps" || params.chapter === "masks") parts.push(`${params.mask ?? "full"} mask`);
    this.where.textContent = parts.filter(Boolean).join(" · ");
  }

  /** The 3D views re-framed to their content (the projector's canvas has another shape). */
  reframe() {
    if (!this.presenting) return;
    requestAnimationFrame(() => reframe());
  }

  say(text) {
    this.message.textContent = text;
  }

  /** `adopt`: take up the kept room's view (a bare /?present=1 reload) instead of sending this page's. */
  async setPresenting(on, { adopt = false } = {}) {
    this.presenting = on;
    presenting(on); // the view draws what a projector can show (attention/derive.js)
    document.body.classList.toggle("cr-presenting", on);
    document.documentElement.classList.toggle("cr-presenting-root", on);
    this.button.textContent = on ? "Exit presenting" : "Present";
    this.button.setAttribute("aria-pressed", String(on));
    this.join.hidden = !on;
    if (!on) this.toggleBlank(false);
    if (on && !this.room) await this.open(adopt);
    this.drawJoin();
    this.drawWhere();
    this.fit();
    this.reframe();
  }

  /** Lay the side panels out (fit.js); its own folds and tabs are not changes to lay out again. */
  fit() {
    const widths = fitPanels(this.presenting);
    this.watch.takeRecords();
    if (widths !== this.widths) this.reframe(); // the 3D view got another width
    this.widths = widths;
  }

  /** Open a room (or take back this tab's room), then send the current view (or adopt the room's). */
  async open(adopt = false) {
    const token = teacherToken();
    if (!token) {
      this.say("Open the teacher link (/?token=…) to let the class follow.");
      return;
    }
    const kept = presenterRoom();
    let stale = false;
    if (kept) {
      try {
        const room = adopt ? await call("GET", `/api/rooms/${kept.code}`) : null;
        if (room?.state) {
          // the projector was reloaded: the class stays where it is, and so does the screen
          // (`live`: tokens the old page was writing, chapter 10; that writing ended with the old page)
          const { screen, live, ...view } = room.state;
          await applyViewState(view);
          stale = Boolean(live);
          if (screen === "hidden") this.toggleNumbers(true);
          if (screen === "blank") this.blank.hidden = false;
        } else {
          await call("PUT", `/api/rooms/${kept.code}/state`, { body: viewOnly(viewState()), secret: kept.key });
        }
        this.start(kept);
        if (stale) this.send(viewState()); // the class stops waiting for those tokens
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
    this.fold = el("button", { type: "button", className: "cr-fold", dataset: { testid: "join-fold" } });
    this.fold.addEventListener("click", () => this.setFolded(!this.folded));
    this.join.replaceChildren(this.fold, ...parts);
    this.setFolded(this.folded ?? false);
    this.drawCount();
  }

  /** The join panel folded to a strip (the code and the count stay), once the class has joined. */
  setFolded(on) {
    this.folded = on;
    this.join.classList.toggle("cr-folded", on);
    this.join.dataset.folded = String(on);
    if (this.fold) {
      this.fold.textContent = on ? "QR" : "Hide QR";
      this.fold.setAttribute("aria-expanded", String(!on));
      this.fold.title = on ? "Show the QR code and the address again" : "Fold the join panel (the code stays)";
    }
    this.scheduleFit();
    this.reframe();
  }

  drawCount() {
    if (!this.count) return;
    const n = this.followers ?? 0;
    this.count.textContent = `${n} following`;
    this.count.dataset.count = String(n);
    if (this.fold) this.fold.hidden = n === 0; // foldable once students have joined
  }

  /** The projector's B / H for the followers: "blank", "hidden" or nothing. */
  screen() {
    if (!this.blank.hidden) return "blank";
    return document.body.classList.contains("cr-numbers-hidden") ? "hidden" : null;
  }

  /** PUT the view: at most one request in flight, the latest view wins. */
  async send(params) {
    if (!this.room) return;
    this.queued = viewOnly(params);
    const screen = this.screen();
    if (screen) this.queued.screen = screen;
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
    if (this.blank.hidden === !on) return;
    this.blank.hidden = !on;
    this.send(viewState());
  }

  toggleNumbers(on = !document.body.classList.contains("cr-numbers-hidden")) {
    document.body.classList.toggle("cr-numbers-hidden", on);
    withhold("numbers", on);
    this.send(viewState());
  }

  async ask() {
    const view = currentView();
    const tokens = view?.answer?.tokens;
    const answer = answerOf(view?.answer, view?.focus);
    if (!this.room || !Array.isArray(tokens) || answer === null) {
      this.say("A quiz needs a view with attention weights (the five steps, or the masks).");
      return;
    }
    // the answer is read now, before the page withholds the weights, and kept for this tab (a
    // reloaded projector can still reveal it)
    try {
      const asked = await call("POST", `/api/rooms/${this.room.code}/quiz`, {
        body: { tokens: tokens.map(String), focus: view.focus },
        secret: this.room.key,
      });
      keepQuizAnswer(asked.id, answer);
    } catch (e) {
      this.say(e.message);
    }
  }

  async reveal() {
    const answer = quizAnswer(this.quiz.quiz?.id);
    if (answer === null) {
      this.say("This tab did not ask this question, so it does not know the answer: end the quiz and ask again.");
      return;
    }
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
