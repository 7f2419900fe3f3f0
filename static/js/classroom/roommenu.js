// The presenter's Room menu: the class report so far (report.js: one row per question, where it was
// asked, how many answered, % right, the most common wrong answer, the time; the change from the first
// time a question was asked to the last), its CSV and a printable page, the reports kept of earlier
// classes (after their rooms closed, per saved lesson), Reset the room (no quiz, a new report; the
// students and the view stay), Close the room (every student's page is told).
//
//   new RoomMenu({ room() → { code, key } | null, say(text), closed() })   .root is the <details>

import { el } from "../dom.js";
import { call, getBlob } from "../api.js";
import { showHandout } from "./lesson-handout.js";
import { printableReport, reportTable } from "./report.js";
import { teacherToken } from "./session.js";

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
    csvRow.append(button("Download CSV", "quiz-csv", () => this.download()), button("Printable page", "report-print", () => this.print()));
    this.keptBox = el("div", { className: "cr-summary", dataset: { testid: "reports-kept" } });
    const roomRow = el("p", { className: "cr-lessons-row" });
    roomRow.append(button("Reset the room", "room-reset", () => this.reset()), button("Close the room", "room-close", () => this.close()));
    const help = "Reset: no question running, a new class report (students stay; the report so far is kept). Close: every student's page is told the room has closed.";
    panel.append(
      el("h3", {}, "The class report"),
      this.summaryBox,
      csvRow,
      el("h3", {}, "Earlier classes"),
      this.keptBox,
      el("h3", {}, "The room"),
      el("p", { className: "cr-room-help" }, help),
      roomRow,
    );
    details.append(panel);
    details.addEventListener("toggle", () => {
      if (!details.open) return;
      this.drawSummary();
      this.drawKept();
    });
    this.root = details;
  }

  async drawSummary() {
    const room = this.room();
    if (!room) return;
    try {
      this.report = await call("GET", `/api/rooms/${room.code}/quiz/summary`, { secret: room.key });
    } catch (e) {
      this.summaryBox.replaceChildren(el("p", {}, e.message));
      return;
    }
    if (!this.report.rows.length) {
      this.summaryBox.replaceChildren(el("p", { dataset: { testid: "quiz-summary-empty" } }, "No question has ended yet."));
      return;
    }
    this.summaryBox.replaceChildren(...reportTable(this.report.rows, this.report.totals));
  }

  /** The reports kept in the database (earlier classes, also of closed rooms), newest first. */
  async drawKept() {
    if (!teacherToken()) {
      this.keptBox.replaceChildren(el("p", {}, "Open the teacher link to see the reports of earlier classes."));
      return;
    }
    let kept;
    try {
      kept = await call("GET", "/api/reports", { secret: teacherToken() });
    } catch (e) {
      this.keptBox.replaceChildren(el("p", {}, e.message));
      return;
    }
    if (!kept.length) {
      this.keptBox.replaceChildren(el("p", {}, "None yet: a class's report is kept as soon as its first question ends."));
      return;
    }
    const list = el("ul", { className: "cr-kept" });
    for (const r of kept.slice(0, 20)) {
      const li = el("li", { dataset: { testid: `report-kept-${r.id}` } });
      const what = r.lesson_title ? `“${r.lesson_title}”` : "no saved lesson";
      li.append(el("span", {}, `${r.started.slice(0, 16).replace("T", " ")} · room ${r.room} · ${what} · ${r.questions} question${r.questions === 1 ? "" : "s"} `));
      const csv = el("button", { type: "button", dataset: { testid: `report-kept-csv-${r.id}` } }, "CSV");
      csv.addEventListener("click", () => this.save(`/api/reports/${r.id}.csv`, teacherToken(), `class-report-${r.id}.csv`));
      const print = el("button", { type: "button", dataset: { testid: `report-kept-print-${r.id}` } }, "Print");
      print.addEventListener("click", async () => {
        const report = await call("GET", `/api/reports/${r.id}`, { secret: teacherToken() });
        this.root.open = false;
        showHandout(printableReport(`Class report · room ${r.room} · ${what}`, report));
      });
      li.append(csv, print);
      list.append(li);
    }
    this.keptBox.replaceChildren(list);
  }

  /** The class report so far, as a page to print (or save as PDF). */
  async print() {
    const room = this.room();
    if (!room) return;
    await this.drawSummary();
    if (!this.report) return;
    this.root.open = false;
    showHandout(printableReport(`Class report · room ${room.code}`, { ...this.report, started: new Date().toISOString().slice(0, 16) }));
  }

  /** The CSV through api.js (the key goes in a header, never in a link), saved as class-CODE.csv. */
  async download() {
    const room = this.room();
    if (room) await this.save(`/api/rooms/${room.code}/quiz/summary.csv`, room.key, `class-${room.code}.csv`);
  }

  async save(path, secret, name) {
    try {
      const url = URL.createObjectURL(await getBlob(path, { secret }));
      const a = el("a", { href: url, download: name });
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
    if (!room || !window.confirm("Reset the room? A new class report starts (the one so far is kept); the students stay.")) return;
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
