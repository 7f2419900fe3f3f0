// The presenter's Room menu: the class report so far (report.js: one row per question, where it was
// asked, how many answered, % right, the most common wrong answer, the time; the change from the first
// time a question was asked to the last), its CSV and a printable page, the reports kept of earlier
// classes (after their rooms closed, per saved lesson), Reset the room (no quiz, a new report; the
// students and the view stay), Close the room (every student's page is told).
//
//   new RoomMenu({ room() → { code, key } | null, say(text), closed() })   .root is the <details>

import { el } from "../dom.js";
import { t } from "../i18n.js";
import { call, getBlob } from "../api.js";
import { showHandout } from "./lesson-handout.js";
import { printableReport, reportTable } from "./report.js";
import { teacherToken } from "./session.js";

/** A line of the Room menu (classroom.room.…): its words are in the catalogs, read when drawn. */
const word = (key, values) => t(`classroom.room.${key}`, values);

export class RoomMenu {
  constructor({ room, say, closed }) {
    this.room = room;
    this.say = say;
    this.closed = closed;
    const details = el("details", { className: "cr-room-menu", dataset: { testid: "room-menu" } });
    details.append(el("summary", {}, word("summary")));
    const panel = el("div", { className: "cr-room-panel" });
    const button = (text, testid, fn) => {
      const b = el("button", { type: "button", dataset: { testid } }, text);
      b.addEventListener("click", fn);
      return b;
    };
    this.summaryBox = el("div", { className: "cr-summary", dataset: { testid: "quiz-summary" } });
    const csvRow = el("p", { className: "cr-lessons-row" });
    csvRow.append(button(word("csv"), "quiz-csv", () => this.download()), button(word("print"), "report-print", () => this.print()));
    this.keptBox = el("div", { className: "cr-summary", dataset: { testid: "reports-kept" } });
    const roomRow = el("p", { className: "cr-lessons-row" });
    roomRow.append(button(word("reset"), "room-reset", () => this.reset()), button(word("close"), "room-close", () => this.close()));
    const help = word("help");
    panel.append(
      el("h3", {}, word("reportTitle")),
      this.summaryBox,
      csvRow,
      el("h3", {}, word("earlier")),
      this.keptBox,
      el("h3", {}, word("roomTitle")),
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
      this.summaryBox.replaceChildren(el("p", { dataset: { testid: "quiz-summary-empty" } }, t("classroom.report.none")));
      return;
    }
    this.summaryBox.replaceChildren(...reportTable(this.report.rows, this.report.totals));
  }

  /** The reports kept in the database (earlier classes, also of closed rooms), newest first. */
  async drawKept() {
    if (!teacherToken()) {
      this.keptBox.replaceChildren(el("p", {}, word("needToken")));
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
      this.keptBox.replaceChildren(el("p", {}, word("noneKept")));
      return;
    }
    const list = el("ul", { className: "cr-kept" });
    for (const r of kept.slice(0, 20)) {
      const li = el("li", { dataset: { testid: `report-kept-${r.id}` } });
      const what = r.lesson_title ? t("format.quote", { text: r.lesson_title }) : word("noLesson");
      li.append(el("span", {}, `${word("kept", { when: r.started.slice(0, 16).replace("T", " "), room: r.room, what, n: r.questions })} `));
      const csv = el("button", { type: "button", dataset: { testid: `report-kept-csv-${r.id}` } }, word("keptCsv"));
      csv.addEventListener("click", () => this.save(`/api/reports/${r.id}.csv`, teacherToken(), `class-report-${r.id}.csv`));
      const print = el("button", { type: "button", dataset: { testid: `report-kept-print-${r.id}` } }, word("keptPrint"));
      print.addEventListener("click", async () => {
        const report = await call("GET", `/api/reports/${r.id}`, { secret: teacherToken() });
        this.root.open = false;
        showHandout(printableReport(word("printTitleLesson", { room: r.room, what }), report));
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
    showHandout(printableReport(word("printTitle", { room: room.code }), { ...this.report, started: new Date().toISOString().slice(0, 16) }));
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
      this.say(word("csvFailed", { reason: e.message }));
    }
  }

  async reset() {
    const room = this.room();
    if (!room || !window.confirm(word("resetConfirm"))) return;
    try {
      await call("POST", `/api/rooms/${room.code}/reset`, { secret: room.key });
      this.say(word("resetDone", { code: room.code }));
      this.drawSummary();
    } catch (e) {
      this.say(e.message);
    }
  }

  async close() {
    const room = this.room();
    if (!room || !window.confirm(word("closeConfirm"))) return;
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
    this.say(word("closed", { code: room.code }));
  }
}
