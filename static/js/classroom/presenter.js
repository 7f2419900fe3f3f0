// The presenter: the projector view (Present, ?present=1), the teacher's own window (?teacher=1), the
// room the class follows, and the quiz.
//
// With the teacher token (from the teacher link) Present opens a room: the page PUTs its view state on
// every change of the view (pageview.js onViewChange), shows the join address in large type, its QR
// code (drawn by the server) and the number of followers (the panel folds away once students have
// joined), and opens the teacher's window beside it (teacher.js: the notes, the next step, the vote
// count and the controls; it never shows on the projector). Both windows drive the room and follow it:
// a view one of them sends comes back to the other over the room's socket and is applied there, so
// they stay in step (on one computer, or with the teacher's phone as a remote: ?teacher=1 there).
// B blanks the screen, H hides the numbers: both on every follower's page too (the state's
// `screen`). PageDown / PageUp keep walking the lesson; while the class answers a question they wait
// (the step that follows would show the answer). The side panels fit their boxes (fit.js). The Room
// menu (roommenu.js): the class report and its CSV, reset the room, close it.

import { isTextField } from "../keys.js";
import { el } from "../dom.js";
import { t, withLang } from "../i18n.js";
import { applyViewState, onViewChange, presenting, reframe, viewState } from "../pageview.js";
import { call } from "../api.js";
import { fitPanels, PANELS } from "./fit.js";
import { loadQuestions, questionAt, whyNone } from "./questions.js";
import { QuizPanel } from "./quiz.js";
import { RoomMenu } from "./roommenu.js";
import { keepPresenterRoom, keepTeacherToken, presenterRoom, teacherToken, viewOnly } from "./session.js";
import { RoomSocket } from "./socket.js";
import { withhold } from "./withhold.js";

const $ = (id) => document.getElementById(id);

const MIN_PUT_GAP_MS = 60; // ≤ 16 changes a second reach the server (its limit is 20)
const RETRY_MS = 500; // a view the server could not take now is sent again this often
// what the join panel says of the room's link (drawLink)
// (its words and every other line of this bar are in the catalogs: classroom.present.…)
const LINK_KEYS = new Set(["live", "unsent", "waiting", "closed", "connecting"]);
const say = (key, values) => t(`classroom.present.${key}`, values);
const EMPTY_ROOM_WAIT_MS = 1200; // an emptied room: how long a window waits for another window's newer view
const FIT_WHILE_WRITING_MS = 500; // the projector's panels laid out again at most this often while Write streams
export const CHANNEL = "a3d-teacher"; // the teacher's windows on one computer find each other here
const NAV_KEYS = new Set(["PageDown", "PageUp", "ArrowLeft", "ArrowRight"]);
const NAV_CLICKS = "#prev-step, #next-step, #next-chapter, #step-list button, #contents a, [data-testid=lesson-play], [data-testid=teacher-next], [data-testid=teacher-back]";

/** A view state as one comparable string (keys sorted, every value a string, as the server keeps it). */
export function canonical(state) {
  const entries = Object.entries(state ?? {})
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => [k, String(v)])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify(entries);
}

/** A deck as the room sends it back: none (no lesson) or its four fields. */
const deckKey = (deck) => (deck?.lesson ? canonical({ lesson: deck.lesson, title: deck.title ?? "", index: deck.index ?? 0, count: deck.count ?? 0 }) : "none");

/** Was `key` in `sent` (sent by this window lately: the room echoing it)? Forgets it, and what is older than 10 s. */
function ownEcho(sent, key) {
  const now = performance.now();
  for (const [k, at] of sent) if (now - at > 10_000) sent.delete(k);
  return sent.delete(key);
}

export class Presenter {
  /** `teacher`: this page is the teacher's window (notes and controls), not the projector. */
  constructor(bar, { teacher = false } = {}) {
    this.teacher = teacher;
    this.room = null;
    this.socket = null;
    this.presenting = false;
    this.sending = false;
    this.queued = null;
    this.applying = 0; // room views being applied now: their changes are not sent back
    this.sent = new Map(); // views this window sent → when, until the room echoes them (or 10 s pass)
    this.lastRoom = null; // the last view taken from the room
    this.adoptNext = teacher; // the teacher's window takes the room's view when it joins
    this.adopted = !teacher; // … and sends nothing before (its own opening view would move the class)
    this.questions = null;
    this.deck = null; // the lesson the teacher's windows play ({lesson, title, index, count})
    this.deckWaiting = undefined; // the deck to send once the one on its way is taken (putDeck)
    this.deckSending = false;
    this.decksSent = new Map(); // decks this window sent → when, until the room echoes them (or 10 s pass)
    this.listeners = { deck: [], room: [], quiz: [], view: [] };
    this.whenSent = []; // flush()'s waiters
    this.lastTokens = null; // a writing's last tokens, to send before its end
    this.welcomes = 0; // first messages of this window's room sockets so far
    this.roomViews = 0; // views the room has sent since (each window's, echoed to all)
    this.wake = null; // ends send()'s wait between two tries
    this.fittedAt = -Infinity;
    this.button = el("button", { type: "button", className: "cr-present", dataset: { testid: "present" } }, say("present"));
    this.button.setAttribute("aria-pressed", "false");
    this.button.addEventListener("click", () => this.setPresenting(!this.presenting, { openTeacher: true }));
    this.button.hidden = !teacherToken() && !teacher; // a student's page has nothing to present (the teacher link brings the token)
    this.teacherButton = el("button", { type: "button", dataset: { testid: "open-teacher" } }, say("teacherWindow"));
    this.teacherButton.title = say("teacherWindowTitle");
    this.teacherButton.addEventListener("click", () => this.openTeacher());
    this.teacherButton.hidden = true;
    this.askButton = el("button", { type: "button", dataset: { testid: "quiz-ask" } }, say("ask"));
    this.askButton.addEventListener("click", () => this.ask());
    this.askWhy = el("span", { className: "cr-ask-why", id: `cr-ask-why-${teacher ? "t" : "p"}`, dataset: { testid: "quiz-ask-why" } });
    this.askButton.setAttribute("aria-describedby", this.askWhy.id);
    this.roomTools = el("span", { className: "cr-room-tools" });
    this.menu = new RoomMenu({ room: () => this.room, say: (text) => this.say(text), closed: () => this.closed() });
    this.roomTools.append(this.askButton, this.askWhy, this.menu.root);
    this.roomTools.hidden = true;
    this.where = el("p", { className: "cr-where", dataset: { testid: "projector-where" } });
    this.message = el("span", { className: "cr-message", role: "status", dataset: { testid: "classroom-message" } });
    if (!teacher) bar.append(this.button, this.teacherButton);
    bar.append(this.roomTools, this.message);
    document.querySelector(".topbar")?.append(this.where);

    this.join = el("aside", { className: "cr-join", "aria-label": say("joinLabel"), dataset: { testid: "join-panel" } });
    this.join.hidden = true;
    document.querySelector("#app")?.append(this.join);
    this.blank = el("div", { className: "cr-blank", dataset: { testid: "blank" } });
    this.blank.hidden = true;
    this.blank.addEventListener("click", () => this.toggleBlank(false));
    document.body.append(this.blank);
    this.quiz = new QuizPanel({
      mode: "presenter",
      reveal: () => this.reveal(),
      end: () => this.endQuiz(),
      changed: (quiz) => {
        this.updateAsk();
        this.emit("quiz", quiz);
      },
    });
    document.querySelector("#main")?.prepend(this.quiz.root);
    onViewChange((params) => {
      if (!this.applying) this.send(params);
      this.drawWhere(params);
      this.scheduleFit();
      this.updateAsk(params);
      this.emit("view", params);
    });
    window.addEventListener("resize", () => {
      this.scheduleFit();
      this.reframe();
    });
    // the panels change when a chapter draws (often after the view change): fit them again then
    this.fitting = 0;
    this.watch = new MutationObserver(() => this.scheduleFit());
    for (const panel of document.querySelectorAll(PANELS)) this.watch.observe(panel, { childList: true, subtree: true, characterData: true });
    this.guardSteps();
    this.listenToWindows();
    loadQuestions()
      .then((list) => {
        this.questions = list;
        this.updateAsk();
      })
      .catch((e) => this.say(say("questionsFailed", { reason: e.message })));
    this.updateAsk();
  }

  on(what, cb) {
    this.listeners[what].push(cb);
  }

  emit(what, value) {
    for (const cb of this.listeners[what]) cb(value);
  }

  /**
   * Lay the panels out again at the next frame. While the Write panel streams (each token changes
   * it) at most every FIT_WHILE_WRITING_MS: a layout pass measures every box of the panel many
   * times, and one per token left the projector's page no time to show the tokens as they came.
   */
  scheduleFit() {
    if (!this.presenting || this.fitting) return;
    this.fitting = true;
    const writing = document.querySelector('#chapter-panel[data-writing="true"]');
    const wait = writing ? this.fittedAt + FIT_WHILE_WRITING_MS - performance.now() : 0;
    const now = () =>
      requestAnimationFrame(() => {
        this.fitting = false;
        this.drawWhere();
        this.fit();
        this.fittedAt = performance.now();
      });
    if (wait > 0) setTimeout(now, wait);
    else now();
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
    this.emit("room", null);
    if (this.presenting) this.setPresenting(false);
  }

  /** chapter · step · mask: where the class is, in one line. */
  drawWhere(params = viewState()) {
    const chapter = ($("chapter-name")?.textContent || params.chapter || "").trim();
    const title = document.querySelector(params.chapter === "steps" || params.chapter === "masks" ? "#step-title" : "#chapter-title");
    const parts = [chapter, (title?.textContent || params.step || "").trim()];
    if (params.chapter === "steps" || params.chapter === "masks") parts.push(say("mask", { mask: params.mask ?? "full" }));
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

  /** `adopt`: take up the kept room's view (a bare /?present=1 reload) instead of sending this page's.
   *  `openTeacher`: Present was pressed: open the teacher's window beside the projector. */
  async setPresenting(on, { adopt = false, openTeacher = false } = {}) {
    this.presenting = on;
    presenting(on); // the view draws what a projector can show (attention/derive.js)
    document.body.classList.toggle("cr-presenting", on);
    document.documentElement.classList.toggle("cr-presenting-root", on);
    this.button.textContent = on ? say("exit") : say("present");
    this.button.setAttribute("aria-pressed", String(on));
    this.teacherButton.hidden = !on;
    if (on) this.button.hidden = false; // /?present=1 without the token: the way out, and a page that says why
    this.join.hidden = !on;
    if (!on) this.toggleBlank(false);
    if (on && openTeacher) this.openTeacher(); // first: a browser lets a click open a window, not a later promise
    if (on && !this.room) await this.open(adopt);
    this.drawJoin();
    this.drawWhere();
    this.fit();
    this.reframe();
    this.emit("room", this.room);
  }

  /** The teacher's window: this page without the projector, with the notes and the controls, in the
   *  projector's language when its address names one (?lang=; a language picked in the menu is kept for both). */
  openTeacher() {
    const opened = window.open("/" + withLang("?teacher=1"), "a3d-teacher", "popup=yes,width=1100,height=800");
    if (!opened) this.say(say("popupBlocked"));
    return opened;
  }

  /** Lay the side panels out (fit.js); its own folds and tabs are not changes to lay out again. */
  fit() {
    const widths = fitPanels(this.presenting);
    this.watch.takeRecords();
    if (widths !== this.widths) this.reframe(); // the 3D view got another width
    this.widths = widths;
  }

  /**
   * Open a room, or take back this tab's room (a reload, a server restart): its socket's first message
   * brings the room's view, and heard() sends this page's view if the room's differs (or, `adopt`,
   * takes up the room's view: a bare /?present=1 reload). A room lost with its store is opened
   * again with the same code and key (reopen()), so the class's pages carry on in it.
   */
  async open(adopt = false) {
    const token = teacherToken();
    if (!token) {
      this.say(say("needToken"));
      return;
    }
    const kept = presenterRoom();
    if (kept) {
      if (adopt) this.adoptNext = true; // a bare /?present=1 reload: the class stays where it is
      this.start(kept);
      return;
    }
    try {
      const created = await call("POST", "/api/rooms", { secret: token });
      this.start({ code: created.code, key: created.presenter_key, join_url: created.join_url });
      this.send(viewState()); // the room's first view, before the teacher's window (opening now) joins
    } catch (e) {
      this.say(e.status === 403 ? say("wrongToken") : e.message);
    }
  }

  start(room) {
    this.room = room;
    this.welcomes = 0;
    keepPresenterRoom(room);
    this.roomTools.hidden = false;
    this.followers = 0;
    this.socket = new RoomSocket(room.code, {
      presenterKey: room.key,
      maxDelay: 1000, // one page: it may try often, and the class waits for it
      waitAlways: true,
      onMessage: (m) => this.heard(m),
      onStatus: (status, detail) => this.connection(status, detail),
    });
    this.say(say("opened", { code: room.code }));
    this.drawJoin();
    this.updateAsk();
    this.tellWindows();
    this.emit("room", room);
  }

  /** The room's socket: live, reconnecting, the room missing (open it again) or closed elsewhere. */
  connection(status, detail) {
    this.join.dataset.status = status;
    this.status = status;
    this.linkStatus = { status, detail };
    this.drawLink();
    if (status === "waiting" && this.room?.key !== teacherToken()) this.reopen(); // not a remote driving with the token
    if (status === "closed" && this.room) {
      const code = this.room.code;
      this.closed();
      this.say(detail ? say("closedWhy", { code, reason: detail }) : say("closed", { code }));
    }
    this.emit("room", this.room);
  }

  /** The room is not on the server (its store restarted empty): open it again, same code, same key. */
  async reopen() {
    const room = this.room;
    if (!room || this.reopening) return;
    this.reopening = true;
    try {
      await call("PUT", `/api/rooms/${room.code}`, { body: { presenter_key: room.key }, secret: teacherToken() ?? "" });
      this.say(say("reopened", { code: room.code }));
      this.socket?.poke();
    } catch (e) {
      if (e.status === 409 || e.status === 403 || e.status === 401) {
        this.closed();
        this.say(say("reopenFailed", { code: room.code, reason: e.message }));
      } // else: the server is away still; the socket's next try asks again
    } finally {
      this.reopening = false;
    }
  }

  /** A view as the room should hold it: with B / H (the projector's own; the teacher's window's as it
   *  last told the room). */
  withScreen(params) {
    const view = viewOnly(params);
    const screen = this.teacher ? (this.screenShown ?? null) : this.screen();
    if (screen) view.screen = screen;
    return view;
  }

  /**
   * A connection's first message: the room's view as the server kept it. A window that joins to follow
   * (the teacher's window, or a bare /?present=1 reload: `adoptNext`) takes it up. Otherwise:
   * - a view of this window's that the room could not take (the server or its store was down) goes at
   *   once, and wins: it is the teacher's latest change;
   * - a room that shows nothing (a store that restarted empty) gets this window's view, unless another
   *   window's comes first (one whose change could not be sent: the newest);
   * - a view of this window's that the room took and has not echoed yet: the echo follows, nothing to do
   *   (the hello may have been read before it);
   * - else a room that shows another view was moved by another of the teacher's windows while this one
   *   was away: this window follows it (so a stale window never moves the class back).
   * Once the room shows this window's view its socket says {"driving": true}: the phones say "live".
   */
  async welcomed(state) {
    const socket = this.socket;
    const again = this.welcomes > 0; // a reconnection (the first hello of a new room: no other window yet)
    this.welcomes += 1;
    if (this.adoptNext) {
      if (!state && this.teacher) return; // the projector's view starts the room: the window takes that up
      await this.adopt(state);
    } else {
      const room = state ? canonical(state) : null;
      if (state) ownEcho(this.sent, room); // the view this window sent, or older
      const mine = canonical(this.withScreen(viewState()));
      if (this.sending) this.wake?.(); // the room could not take it: it goes now
      else if (room === mine) this.lastRoom = room;
      else if (this.sent.size) {
        // a view of this window's, taken: its echo follows
      } else if (!state) {
        this.lastRoom = null;
        const heard = this.roomViews;
        if (again) await new Promise((r) => setTimeout(r, EMPTY_ROOM_WAIT_MS));
        if (socket === this.socket && this.roomViews === heard) this.send(viewState());
      } else await this.follow(state);
    }
    await this.drives(socket);
  }

  /** Take up the room's view (a window that joins to follow): then this window may send its own. */
  async adopt(state) {
    this.adoptNext = false;
    if (state) {
      // a reloaded projector takes the room's view but not `live`: the tokens its old page was writing
      // (chapter 10), a writing that ended with that page; its view without them tells the class so
      const { live, ...view } = state;
      await this.follow(this.teacher ? state : view);
      if (live && !this.teacher) {
        this.lastRoom = null; // the room still shows those tokens
        this.adopted = true;
        this.send(viewState());
      }
    }
    this.adopted = true;
  }

  /** Once the room shows this window's view, its socket says so: the phones may say "live" again. */
  async drives(socket) {
    await this.flush(Infinity);
    if (socket === this.socket && this.adopted) socket?.send({ driving: true });
  }

  heard(msg) {
    const hello = "followers" in msg && "seq" in msg; // a connection's first message: the room whole
    if (hello) {
      if (!("quiz" in msg)) this.quiz.show(null); // no question open there (a restarted store lost it)
      this.welcomed(msg.state ?? null);
    } else if ("state" in msg && msg.state) {
      this.roomViews += 1;
      if (this.adoptNext) this.adopt(msg.state).then(() => this.drives(this.socket));
      else this.follow(msg.state); // another of the teacher's windows moved the class (or this one's echo)
    }
    if ("followers" in msg) {
      this.followers = msg.followers;
      this.drawCount();
      this.quiz.setFollowers(msg.followers);
      this.emit("room", this.room);
    }
    if ("quiz" in msg) this.quiz.show(msg.quiz);
    if (msg.votes) this.quiz.progress(msg.votes);
    // this window's own deck coming back is not news (putDeck told this window already); taken as a step,
    // the echo of an earlier view's deck took the lesson back to that view while the clicker ran ahead
    if ("deck" in msg && !ownEcho(this.decksSent, deckKey(msg.deck))) {
      this.deck = msg.deck ?? null;
      this.emit("deck", this.deck);
    }
  }

  /** Apply a view the room holds (sent by another of the teacher's windows), without sending it back. */
  async follow(state) {
    const key = canonical(state);
    if (ownEcho(this.sent, key)) return; // this window's own view, echoed
    const { screen, ...view } = state;
    this.applyScreen(screen ?? null);
    if (canonical(viewOnly(viewState())) === canonical(view)) return;
    this.lastRoom = key;
    this.applying += 1;
    try {
      await applyViewState(view);
    } finally {
      this.applying -= 1;
    }
    const here = viewOnly(viewState());
    if (state.screen) here.screen = state.screen;
    this.lastRoom = canonical(here);
  }

  drawJoin() {
    if (!this.presenting) return;
    if (!this.room) {
      this.join.replaceChildren(el("p", { className: "cr-join-hint" }, this.message.textContent || say("noRoom")));
      return;
    }
    const shown = this.room.join_url.replace(/^https?:\/\//, "");
    const local = /^https?:\/\/(127\.|localhost|\[::1\])/.test(this.room.join_url);
    const qr = el("img", { className: "cr-qr", src: `/api/rooms/${this.room.code}/qr.svg`, alt: say("qrAlt", { address: shown }) });
    qr.dataset.testid = "join-qr";
    this.count = el("p", { className: "cr-count", dataset: { testid: "follower-count" } });
    const address = el("p", { className: "cr-address", dataset: { testid: "join-address" } });
    const cut = shown.indexOf("/?");
    address.append(el("span", {}, shown.slice(0, cut)), el("wbr"), el("span", {}, shown.slice(cut)));
    const code = el("p", { className: "cr-code", dataset: { testid: "join-code" } }, this.room.code);
    this.link = el("p", { className: "cr-link", role: "status", dataset: { testid: "presenter-status" } });
    const parts = [qr, el("p", { className: "cr-join-title" }, say("joinTitle")), address, code, this.count, this.link];
    if (local) parts.push(el("p", { className: "cr-warn" }, say("localOnly")));
    this.fold = el("button", { type: "button", className: "cr-fold", dataset: { testid: "join-fold" } });
    this.fold.addEventListener("click", () => this.setFolded(!this.folded));
    this.join.replaceChildren(this.fold, ...parts);
    this.setFolded(this.folded ?? false);
    this.drawCount();
    this.drawLink();
  }

  /** The join panel folded to a strip (the code and the count stay), once the class has joined. */
  setFolded(on) {
    this.folded = on;
    this.join.classList.toggle("cr-folded", on);
    this.join.dataset.folded = String(on);
    if (this.fold) {
      this.fold.textContent = on ? say("showQr") : say("hideQr");
      this.fold.setAttribute("aria-expanded", String(!on));
      this.fold.title = on ? say("showQrTitle") : say("hideQrTitle");
    }
    this.scheduleFit();
    this.reframe();
  }

  drawCount() {
    if (!this.count) return;
    const n = this.followers ?? 0;
    this.count.textContent = say("following", { n });
    this.count.dataset.count = String(n);
    if (this.fold) this.fold.hidden = n === 0; // foldable once students have joined
  }

  /** The projector's B / H for the followers: "blank", "hidden" or nothing. */
  screen() {
    if (!this.blank.hidden) return "blank";
    return document.body.classList.contains("cr-numbers-hidden") ? "hidden" : null;
  }

  /** B / H as the room has them (another of the teacher's windows pressed them): shown here, not sent. */
  applyScreen(screen) {
    this.blank.hidden = !(screen === "blank" && this.presenting);
    document.body.classList.toggle("cr-numbers-hidden", screen === "hidden");
    withhold("numbers", screen === "hidden");
    this.screenShown = screen;
  }

  /**
   * PUT the view: at most one request in flight, the latest view wins. A view the server could not
   * take now (it is away, restarting, its room store is away, the room is being opened again) is
   * sent again every RETRY_MS until it is taken or a newer one replaces it.
   */
  async send(params) {
    if (!this.room || !this.adopted) return;
    const state = this.withScreen(params);
    if (canonical(state) === this.lastRoom) return; // the room's view already (just applied, or sent)
    this.lastRoom = canonical(state);
    // a newer view replaces the one waiting, but a writing's last tokens (Write's `live`) go before
    // its end: the class sees every token at once, not only when the text's numbers have loaded
    if (this.queued?.live && !state.live) this.lastTokens = this.queued;
    this.queued = state;
    if (this.sending) return;
    this.sending = true;
    try {
      await null; // views changed together (Write's tokens read in one go) go as one: the newest
      while ((this.lastTokens || this.queued) && this.room) {
        const next = this.lastTokens ?? this.queued;
        if (next === this.lastTokens) this.lastTokens = null;
        else this.queued = null;
        const started = performance.now();
        let wait = MIN_PUT_GAP_MS;
        this.sent.set(canonical(next), performance.now());
        try {
          await call("PUT", `/api/rooms/${this.room.code}/state`, { body: next, secret: this.room.key });
          this.unsent = null;
        } catch (e) {
          this.sent.delete(canonical(next));
          const again = e.status === undefined || e.status === 404 || e.status === 429 || e.status >= 500;
          this.unsent = again ? e.message : null;
          if (again) {
            this.queued ??= next; // unless a newer view is waiting already
            wait = RETRY_MS;
          } else {
            this.lastRoom = null; // not the room's view: the next change is sent
            this.say(say("notSent", { reason: e.message }));
          }
        }
        this.drawLink();
        wait -= performance.now() - started;
        if (wait > 0) {
          await new Promise((r) => {
            this.wake = r; // welcomed(): the room is back, try now
            setTimeout(r, wait);
          });
        }
        this.wake = null;
      }
    } finally {
      this.sending = false;
      for (const resolve of this.whenSent.splice(0)) resolve();
    }
  }

  /** Resolves once no view is waiting to be sent (sent, or refused for good), or after `ms`: a question
   *  is asked about the room's view, and the room shows this window's once it resolves in time. */
  flush(ms = 5000) {
    if (!this.sending) return Promise.resolve();
    return new Promise((resolve) => {
      this.whenSent.push(resolve);
      if (ms !== Infinity) setTimeout(resolve, ms);
    });
  }

  /** One line in the join panel: is the class seeing this page's view? */
  drawLink() {
    if (!this.link) return;
    const { status, detail } = this.linkStatus ?? { status: "connecting" };
    const key = status === "live" && this.unsent ? "unsent" : status;
    this.link.textContent = LINK_KEYS.has(key) ? say(`link.${key}`) : detail ? say("link.reconnectingWhy", { reason: detail }) : say("link.reconnecting");
    this.link.dataset.status = key;
  }

  toggleBlank(on = this.blank.hidden) {
    if (this.teacher) {
      // the teacher's window does not go black: it tells the projector (and the class)
      this.screenShown = on ? "blank" : this.screenShown === "blank" ? null : this.screenShown;
      this.send(viewState());
      this.emit("room", this.room);
      return;
    }
    if (this.blank.hidden === !on) return;
    this.blank.hidden = !on;
    this.send(viewState());
  }

  toggleNumbers(on = !document.body.classList.contains("cr-numbers-hidden")) {
    document.body.classList.toggle("cr-numbers-hidden", on);
    withhold("numbers", on);
    if (this.teacher) this.screenShown = on ? "hidden" : this.screenShown === "hidden" ? null : this.screenShown;
    this.send(viewState());
    this.emit("room", this.room);
  }

  /** The question of the current step, or null. */
  question(params = viewState()) {
    return questionAt(this.questions, { chapter: params.chapter ?? "steps", step: params.step });
  }

  /** Ask the class is enabled where the step has a question; otherwise it is disabled and says why. */
  updateAsk(params = viewState()) {
    const q = this.question(params);
    let why = "";
    if (!this.room) why = say("askNoRoom");
    else if (this.quiz.open) why = say("askOpen");
    else if (!q) why = whyNone(this.questions, { chapter: params.chapter ?? "steps", step: params.step });
    this.askButton.disabled = Boolean(why);
    this.askButton.dataset.question = q?.id ?? "";
    this.askButton.title = q ? say("askTitle", { title: q.title }) : why;
    this.askWhy.textContent = why;
    this.askWhy.hidden = !why;
    this.emit("quiz", this.quiz.quiz);
  }

  async ask() {
    const q = this.question();
    if (!this.room || !q) {
      this.updateAsk();
      this.say(this.askWhy.textContent);
      return;
    }
    this.askButton.disabled = true;
    try {
      await this.flush(); // the server asks about the room's view: it must be this one
      await call("POST", `/api/rooms/${this.room.code}/quiz`, { body: { question: q.id }, secret: this.room.key });
    } catch (e) {
      this.say(e.message);
    } finally {
      this.updateAsk();
    }
  }

  async reveal() {
    try {
      await call("POST", `/api/rooms/${this.room.code}/quiz/reveal`, { secret: this.room.key });
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

  /** The lesson the teacher's windows play, for both of them (the server tells presenters only). One
   *  request at a time, the newest deck waiting for it: sent together, an earlier view's deck could
   *  reach the room last and leave the other window on that view's note. */
  async putDeck(deck) {
    this.deck = deck?.lesson ? deck : null;
    this.emit("deck", this.deck); // this window's panels at once; the other window hears it from the room
    this.deckWaiting = deck ?? { lesson: null };
    if (this.deckSending) return;
    this.deckSending = true;
    try {
      while (this.deckWaiting !== undefined && this.room) {
        const next = this.deckWaiting;
        this.deckWaiting = undefined;
        this.decksSent.set(deckKey(next), performance.now());
        try {
          await call("PUT", `/api/rooms/${this.room.code}/deck`, { body: next, secret: this.room.key });
        } catch (e) {
          this.decksSent.delete(deckKey(next));
          this.say(say("deckFailed", { reason: e.message }));
        }
      }
    } finally {
      this.deckSending = false;
    }
  }

  /** While the class answers, the clicker and the step buttons wait: the next step would show the answer. */
  guardSteps() {
    const stop = (e) => {
      if (!this.quiz.open) return;
      e.preventDefault();
      e.stopImmediatePropagation();
      this.say(say("wait"));
      this.emit("quiz", this.quiz.quiz);
    };
    window.addEventListener(
      "keydown",
      (e) => {
        if (NAV_KEYS.has(e.key) && !e.ctrlKey && !e.metaKey && !e.altKey && !isTextField(e.target)) stop(e);
      },
      true,
    );
    document.addEventListener("click", (e) => e.target.closest?.(NAV_CLICKS) && stop(e), true);
  }

  /** The teacher's windows on this computer find each other (BroadcastChannel): the projector hands
   *  its room to the teacher's window that asks, and tells it of a new room. */
  listenToWindows() {
    if (!("BroadcastChannel" in window)) return;
    this.channel = new BroadcastChannel(CHANNEL);
    this.channel.addEventListener("message", (e) => {
      const m = e.data ?? {};
      if (m.want === "room" && this.room && !this.teacher) this.tellWindows();
      if (m.token && this.teacher && !teacherToken()) keepTeacherToken(m.token);
      if (m.room && this.teacher && (!this.room || this.room.code !== m.room.code)) {
        this.socket?.stop();
        this.adoptNext = true;
        this.start(m.room);
      }
    });
    if (this.teacher) this.channel.postMessage({ want: "room" });
  }

  tellWindows() {
    if (this.channel && this.room && !this.teacher) this.channel.postMessage({ room: this.room, token: teacherToken() });
  }
}
