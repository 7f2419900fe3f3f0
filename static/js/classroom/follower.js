// A follower: the page follows the presenter's room (?room=CODE), or the student explores on
// their own and "Follow again" jumps back to where the presenter is. The quiz panel lets them
// answer once; a closed room says so and stops.

import { el } from "../dom.js";
import { applyViewState } from "../hub.js";
import { QuizPanel } from "./quiz.js";
import { keepFollowedRoom } from "./session.js";
import { RoomSocket } from "./socket.js";

const STATUS_TEXT = {
  connecting: "connecting…",
  live: "live",
  retrying: "connection lost: reconnecting…",
  closed: "closed",
};

export class Follower {
  constructor(bar, code) {
    this.code = code;
    this.following = true;
    this.latest = null; // the presenter's latest state
    this.applying = Promise.resolve();
    document.body.classList.add("cr-follower");
    const status = el("span", { className: "cr-status", role: "status", dataset: { testid: "follow-status" } });
    const label = el("span", { className: "cr-room" }, `Room ${code}`);
    this.toggle = el("button", { type: "button", className: "cr-follow-toggle", dataset: { testid: "follow-toggle" } });
    this.toggle.addEventListener("click", () => this.setFollowing(!this.following));
    this.box = el("div", { className: "cr-follow", dataset: { testid: "follow-bar", following: "true" } });
    this.box.append(label, status, this.toggle);
    this.status = status;
    this.closedNote = el("p", { className: "cr-closed", role: "alert", dataset: { testid: "room-closed" } });
    this.closedNote.hidden = true;
    this.quiz = new QuizPanel({ mode: "follower", vote: (choice, quizId) => this.vote(choice, quizId) });
    bar.append(this.box, this.closedNote);
    document.querySelector("#main")?.prepend(this.quiz.root);
    this.renderToggle();
    this.socket = new RoomSocket(code, { onMessage: (m) => this.message(m), onStatus: (s, d) => this.onStatus(s, d) });
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.socket.poke();
    });
  }

  onStatus(status, detail) {
    this.status.textContent = `● ${STATUS_TEXT[status] ?? status}` + (detail && status !== "closed" ? ` (${detail})` : "");
    this.box.dataset.status = status;
    if (status === "closed") {
      this.closedNote.textContent = `This room is closed: ${detail}. The page stays as it was; you can keep exploring.`;
      this.closedNote.hidden = false;
      this.toggle.disabled = true;
      keepFollowedRoom(null);
    }
  }

  message(msg) {
    if ("state" in msg && msg.state) {
      this.latest = msg.state;
      if (this.following) this.apply(msg.state);
    }
    if ("quiz" in msg) this.quiz.show(msg.quiz);
    if (msg.voted) this.quiz.voted(msg.voted);
    if (msg.error && msg.error.type !== "read_only") this.quiz.error(msg.error.msg);
    if (msg.error?.type === "room_full") this.status.textContent = `● ${msg.error.msg}`;
  }

  apply(state) {
    // one view at a time, the latest wins: a burst of clicks ends on the presenter's last view
    this.pending = state;
    this.applying = this.applying.then(async () => {
      if (this.pending !== state) return;
      this.box.dataset.applied = "pending";
      await applyViewState(state);
      if (this.pending === state) this.box.dataset.applied = JSON.stringify(state);
    });
  }

  setFollowing(on) {
    this.following = on;
    this.renderToggle();
    if (on && this.latest) this.apply(this.latest);
  }

  renderToggle() {
    this.box.dataset.following = String(this.following);
    this.toggle.textContent = this.following ? "Explore on my own" : "Follow again";
    this.toggle.setAttribute("aria-pressed", String(!this.following));
    document.body.classList.toggle("cr-exploring", !this.following);
  }

  vote(choice, quizId) {
    return this.socket.send({ vote: { quiz: quizId, choice, voter: this.quiz.voter } });
  }
}
