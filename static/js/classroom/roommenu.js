// The presenter's Room menu: the class's quiz so far (one row per question: the query, asked,
// answered, right, the answers per word) and its CSV, Reset the room (no quiz, an empty summary;
// the students and the view stay), Close the room (every student's page is told).
//
//   new RoomMenu({ room() → { code, key } | null, say(text), closed() })   .root is the <details>

import { call, getBlob } from "../api.js";
import { el } from "../dom.js";

export class RoomMenu {
  constructor({ room, say, closed }) {
    this.room = room;
    this.say = say;
    this.closed = closed;
    const details = el("details", { className: "cr-room-menu", dataset: { testid: "room-menu" } });
    details.append(el("summary", {}, "Room"));
    const panel = el("div", { className: "cr-room-panel" });
    const button = (text, testid, fn) => {
      const b = el("button", { type: "button", dataset: { testid } }, text);
      b.addEventListener("click", fn);
      return b;
    };
    this.summaryBox = el("div", { className: "cr-summary", dataset: { testid: "quiz-summary" } });
    const csvRow = el("p", { className: "cr-lessons-row" });
    csvRow.append(button("Download CSV", "quiz-csv", () => this.download()));
    const roomRow = el("p", { className: "cr-lessons-row" });
    roomRow.append(button("Reset the room", "room-reset", () => this.reset()), button("Close the room", "room-close", () => this.close()));
    const help = "Reset: no quiz running, the quiz summary starts again (students stay). Close: every student's page is told the room has closed.";
    panel.append(el("h3", {}, "The class's quiz"), this.summaryBox, csvRow, el("h3", {}, "The room"), el("p", { className: "cr-room-help" }, help), roomRow);
    details.append(panel);
    details.addEventListener("toggle", () => details.open && this.drawSummary());
    this.root = details;
  }

  async drawSummary() {
    const room = this.room();
    if (!room) return;
    let s;
    try {
      s = await call("GET", `/api/rooms/${room.code}/quiz/summary`, { secret: room.key });
    } catch (e) {
      this.summaryBox.replaceChildren(el("p", {}, e.message));
      return;
    }
    if (!s.questions.length) {
      this.summaryBox.replaceChildren(el("p", { dataset: { testid: "quiz-summary-empty" } }, "No question has ended yet."));
      return;
    }
    const row = (cells, tag, props = {}) => {
      const tr = el("tr", props);
      tr.append(...cells.map((text) => el(tag, tag === "th" ? { scope: "col" } : {}, String(text))));
      return tr;
    };
    const thead = el("thead");
    thead.append(row(["#", "query", "asked", "answered", "right", "answers per word"], "th"));
    const tbody = el("tbody");
    for (const q of s.questions) {
      const spread = q.tokens.map((w, j) => `${w} ${q.counts[j]}`).join(" · ");
      const right = q.right === null ? "not revealed" : `${q.right} (${q.tokens[q.answer]})`;
      tbody.append(row([q.number, q.query, q.asked, q.answered, right, spread], "td", { dataset: { testid: `quiz-summary-row-${q.number}` } }));
    }
    const table = el("table", { className: "cr-summary-table" });
    table.append(thead, tbody);
    const total = `${s.asked} question${s.asked === 1 ? "" : "s"}, ${s.answers} answers, ${s.right} of ${s.answers_revealed} right where the answer was revealed.`;
    this.summaryBox.replaceChildren(table, el("p", { dataset: { testid: "quiz-summary-total" } }, total));
  }

  /** The CSV through api.js (the key goes in a header, never in a link), saved as quiz-CODE.csv. */
  async download() {
    const room = this.room();
    if (!room) return;
    try {
      const url = URL.createObjectURL(await getBlob(`/api/rooms/${room.code}/quiz/summary.csv`, { secret: room.key }));
      const a = el("a", { href: url, download: `quiz-${room.code}.csv` });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (e) {
      this.say(`No CSV: ${e.message}`);
    }
  }

  async reset() {
    const room = this.room();
    if (!room || !window.confirm("Reset the room? The quiz summary starts again; the students stay.")) return;
    try {
      await call("POST", `/api/rooms/${room.code}/reset`, { secret: room.key });
      this.say(`Room ${room.code} is reset.`);
      this.drawSummary();
    } catch (e) {
      this.say(e.message);
    }
  }

  async close() {
    const room = this.room();
    if (!room || !window.confirm("Close the room? Every student's page is told it has closed.")) return;
    try {
      await call("DELETE", `/api/rooms/${room.code}`, { secret: room.key });
    } catch (e) {
      if (e.status !== 404) {
        this.say(e.message);
        return; // 404: closed already (expired, or from another tab): forget it all the same
      }
    }
    this.root.open = false;
    this.closed();
    this.say(`Room ${room.code} is closed. Present opens a new one.`);
  }
}
