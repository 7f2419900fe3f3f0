// A follower: the page follows the presenter's room (?room=CODE). It shows exactly the room's
// view (the first message of every connection carries it whole, so a late joiner or a page that
// reconnects is in step at once). A student who taps a control of the page leaves the teacher's
// view: the bar says "exploring" (not "live") and "Back to the teacher" jumps to where the
// presenter is. The projector's B (blank) and H (numbers hidden) reach every follower (the room
// state's `screen`), and the page says why it is blank or why the numbers are hidden. The quiz
// panel lets them answer once; a closed room says so and stops.

import { el } from "../dom.js";
import { t } from "../i18n.js";
import { applyViewState, classRole, onViewChange } from "../pageview.js";
import { QuizPanel } from "./quiz.js";
import { keepFollowedRoom, keepSeat, seatFor } from "./session.js";
import { RoomSocket } from "./socket.js";
import { withhold } from "./withhold.js";

// the bar's words are in the catalogs (classroom.follow.…), read when drawn: the page's own language
const STATUS_KEYS = new Set(["connecting", "live", "retrying", "waiting", "closed"]);
const say = (key, values) => t(`classroom.follow.${key}`, values);
const TOUCHED_MS = 1500; // a view change this soon after the student's own tap or key is theirs

/** The room's state without the projector's screen switch (not part of a view). */
function viewOf(state) {
  const view = { ...state };
  delete view.screen;
  return view;
}

/** Do two views differ in what a student sees (every parameter but predict-first, a student's own switch)? */
function differs(page, room) {
  for (const k of new Set([...Object.keys(page), ...Object.keys(room)])) {
    if (k === "predict") continue;
    if (String(page[k] ?? "") !== String(room[k] ?? "")) return true;
  }
  return false;
}

export class Follower {
  constructor(bar, code) {
    this.code = code;
    this.following = true;
    this.latest = null; // the presenter's latest view
    this.presenters = null; // the teacher's pages driving the room now (null: not told yet)
    this.screen = null; // "blank" | "hidden" | null
    this.applying = Promise.resolve();
    this.busy = 0; // views being applied now (their changes are not the student's)
    this.touched = -Infinity; // when the student last tapped or typed in the page (never yet)
    document.body.classList.add("cr-follower");
    const status = el("span", { className: "cr-status", role: "status", dataset: { testid: "follow-status" } });
    const label = el("span", { className: "cr-room" }, say("room", { code }));
    this.toggle = el("button", { type: "button", className: "cr-follow-toggle", dataset: { testid: "follow-toggle" } });
    this.toggle.addEventListener("click", () => this.setFollowing(!this.following));
    this.box = el("div", { className: "cr-follow", dataset: { testid: "follow-bar", following: "true" } });
    this.box.append(label, status, this.toggle);
    this.status = status;
    this.closedNote = el("p", { className: "cr-closed", role: "alert", dataset: { testid: "room-closed" } });
    this.closedNote.hidden = true;
    this.hiddenNote = el("p", { className: "cr-hidden-note", role: "status", dataset: { testid: "numbers-hidden-note" } });
    this.hiddenNote.textContent = say("hidden");
    this.hiddenNote.hidden = true;
    this.quiz = new QuizPanel({
      mode: "follower",
      vote: (choice, quizId) => this.vote(choice, quizId),
      changed: () => this.quizChanged(),
    });
    bar.append(this.box, this.closedNote);
    document.querySelector("#main")?.prepend(this.hiddenNote);
    document.querySelector("#main")?.prepend(this.quiz.root);
    this.blank = el("div", { className: "cr-blank cr-blank-follower", role: "status", dataset: { testid: "follower-blank" } });
    this.blank.append(el("p", {}, say("blank")));
    this.blank.hidden = true;
    document.body.append(this.blank);
    this.watchTouches();
    onViewChange((params) => this.viewChanged(params));
    this.renderToggle();
    this.socket = new RoomSocket(code, {
      onMessage: (m) => this.message(m),
      onStatus: (s, d) => this.onStatus(s, d),
      seat: () => seatFor(code), // a page that comes back keeps its seat, and its one vote
    });
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.socket.poke();
    });
  }

  /** The student's own taps and keys on the page (not on the classroom's bar or the quiz). */
  watchTouches() {
    const mark = (e) => {
      if (!e.isTrusted || e.target.closest?.(".classroom-bar, .cr-quiz, .cr-blank")) return;
      this.touched = performance.now();
    };
    for (const type of ["pointerdown", "keydown", "change"]) document.addEventListener(type, mark, true);
  }

  viewChanged(params) {
    if (!this.following || this.busy || !this.latest) return;
    if (performance.now() - this.touched > TOUCHED_MS) return; // the page settling, not the student
    if (!differs(params, this.latest)) return;
    if (this.quiz.open) {
      // during a question the page stays on the teacher's step: another step could show the answer
      this.apply(this.latest);
      return;
    }
    this.setFollowing(false);
  }

  /** A question pulls every page back to the teacher's step, and keeps it there until the answer. */
  quizChanged() {
    const open = this.quiz.open;
    if (open && !this.following) this.setFollowing(true);
    this.toggle.disabled = open || this.connection === "closed";
    this.toggle.title = open ? say("stayDuringQuestion") : "";
  }

  onStatus(status, detail) {
    this.connection = status;
    this.connectionDetail = detail;
    this.renderStatus();
    if (status === "closed") {
      this.closedNote.textContent = say("closed", { reason: detail });
      this.closedNote.hidden = false;
      this.toggle.disabled = true;
      this.setScreen(null);
      keepFollowedRoom(null);
    }
  }

  /**
   * "● live" only while this page shows the room's view and a teacher's page drives it: a room whose
   * presenter socket is gone (the projector's laptop asleep, a server that restarted and the teacher's
   * page not back yet) shows the last view it got, and says so.
   */
  renderStatus() {
    const status = this.connection ?? "connecting";
    const detail = this.connectionDetail;
    const away = status === "live" && this.presenters === 0;
    let shown = STATUS_KEYS.has(status) ? say(`status.${status}`) : status;
    if (status === "live" && !this.following) shown = say("exploring");
    else if (away) shown = say("away");
    else if (status === "live" && this.behind) shown = say("behind"); // an older view still drawing after a reconnection
    else if (status === "retrying" && detail) {
      shown = detail.endsWith("reconnecting") ? say("lostStore") : say("retryingWhy", { status: shown, reason: detail });
    }
    this.status.textContent = `● ${shown}`;
    this.box.dataset.status = status;
    this.box.dataset.teacher = away ? "away" : "here";
  }

  /** A view of the teacher's waits behind the one this page is still drawing (a slow phone after a
   * reconnection): the bar says so rather than "live". */
  setBehind(on) {
    if (this.behind === on) return;
    this.behind = on;
    this.renderStatus();
  }

  message(msg) {
    if (typeof msg.seat === "string" && msg.seat !== seatFor(this.code)) keepSeat(this.code, msg.seat);
    const hello = "followers" in msg && "seq" in msg; // a connection's first message: the room whole
    if (hello && !("quiz" in msg)) this.quiz.show(null); // no question open now (it ended while this page was away)
    if (typeof msg.presenters === "number") {
      this.presenters = msg.presenters;
      this.renderStatus();
    }
    if ("state" in msg && msg.state) {
      this.setScreen(msg.state.screen ?? null);
      this.latest = viewOf(msg.state);
      if (this.following) this.apply(this.latest);
    }
    if ("quiz" in msg) this.quiz.show(msg.quiz);
    if (msg.yours) this.quiz.voted(msg.yours); // a page that came back: the vote the server counted
    if (msg.voted) this.quiz.voted(msg.voted);
    if (msg.error && msg.error.type !== "read_only") this.quiz.error(msg.error);
    if (msg.error?.type === "room_full" || msg.error?.type === "address_full") {
      this.status.textContent = `● ${say(`full.${msg.error.type}`, { most: Number(msg.error.most) || 0 })}`;
    }
  }

  /** B and H of the projector: blank the page, or hold the numbers back (and say why). */
  setScreen(screen) {
    this.screen = screen;
    this.blank.hidden = screen !== "blank";
    this.hiddenNote.hidden = screen !== "hidden";
    withhold("teacher", screen === "hidden" || screen === "blank");
    document.body.dataset.screen = screen ?? "";
  }

  apply(state) {
    // one view at a time, the latest wins: a burst of clicks ends on the presenter's last view
    this.pending = state;
    this.busy += 1;
    this.setBehind(true); // until this view starts to be applied the page shows an older one
    this.applying = this.applying.then(async () => {
      try {
        if (this.pending !== state) return;
        this.setBehind(false);
        this.box.dataset.applied = "pending";
        await applyViewState(state);
        if (this.pending === state) this.box.dataset.applied = JSON.stringify(state);
      } finally {
        this.busy -= 1;
      }
    });
  }

  setFollowing(on) {
    this.following = on;
    this.renderToggle();
    if (on && this.latest) this.apply(this.latest);
  }

  renderToggle() {
    this.box.dataset.following = String(this.following);
    this.toggle.textContent = say(this.following ? "explore" : "backToTeacher");
    this.toggle.setAttribute("aria-pressed", String(!this.following));
    document.body.classList.toggle("cr-exploring", !this.following);
    classRole(this.following ? "follower" : null); // exploring on its own, the student is a learner alone
    this.renderStatus();
  }

  vote(choice, quizId) {
    return this.socket.send({ vote: { quiz: quizId, choice } });
  }
}
