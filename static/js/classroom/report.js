// The class report, drawn: one row per question (where it was asked, how many were in the room, how
// many answered, % right, the most common wrong answer, the time to answer), the change between the
// first and the last time the same question was asked (pre / post), and a printable page of it.
// The numbers are the server's (app/classroom/report.py: GET …/quiz/summary, GET /api/reports/{id}).
//
//   reportTable(rows, totals)        the table and its totals line, for the Room menu
//   printableReport(title, report)   an <article> for showHandout(): the table, and each question in full

import { CHAPTERS } from "../chapters/index.js";
import { el } from "../dom.js";
import { decimal, integer, language, t } from "../i18n.js";

/** A message of the report (classroom.report.…): its words are in the catalogs, read when drawn. */
const say = (key, values) => t(`classroom.report.${key}`, values);

const pct = (x) => (x === null || x === undefined ? "—" : say("percent", { n: integer(Math.round(x)) }));
const seconds = (s) => (s === null || s === undefined ? "—" : say("seconds", { s: language() === "en" ? s.toFixed(s < 10 ? 1 : 0) : decimal(s, s < 10 ? 1 : 0) }));
const chapterName = (id) => {
  const i = CHAPTERS.findIndex((c) => c.id === id);
  return i >= 0 ? say("chapter", { n: i + 1, title: CHAPTERS[i].title }) : id;
};

function cells(tag, values) {
  const tr = el("tr");
  tr.append(...values.map((v) => el(tag, tag === "th" ? { scope: "col" } : {}, String(v))));
  return tr;
}

const HEAD = ["number", "where", "question", "inRoom", "answered", "right", "wrong", "time", "prePost"]; // keys of classroom.report.head.…

function rowCells(r) {
  const change = r.pre_post === "post" && r.change !== null ? say("post", { sign: r.change >= 0 ? "+" : "", n: Math.round(r.change) }) : r.pre_post ? say(`prePost.${r.pre_post}`) : r.pre_post;
  const wrong = r.common_wrong ? `${r.common_wrong} (${r.common_wrong_count})` : "—";
  return [
    r.number,
    say("where", { chapter: chapterName(r.chapter), step: r.step }),
    r.text,
    r.in_room,
    r.answered,
    r.revealed ? pct(r.percent_right) : say("notRevealed", { percent: pct(r.percent_right) }),
    wrong,
    seconds(r.median_seconds),
    change || "",
  ];
}

export function totalsText(totals) {
  if (!totals.questions) return say("none");
  return say("totals", { questions: totals.questions, answers: totals.answers, percent: pct(totals.percent_right) });
}

/** The pairs of the same question asked before and after (pre → post). */
export function prePost(rows) {
  return rows
    .filter((r) => r.pre_post === "post")
    .map((post) => {
      const pre = rows.find((r) => r.pre_post === "pre" && r.question === post.question && r.text === post.text);
      return pre ? { pre, post } : null;
    })
    .filter(Boolean);
}

export function reportTable(rows, totals) {
  const table = el("table", { className: "cr-summary-table", dataset: { testid: "class-report-table" } });
  const thead = el("thead");
  thead.append(cells("th", HEAD.map((k) => say(`head.${k}`))));
  const tbody = el("tbody");
  for (const r of rows) {
    const tr = cells("td", rowCells(r));
    tr.dataset.testid = `class-report-row-${r.number}`;
    tbody.append(tr);
  }
  table.append(thead, tbody);
  const parts = [table, el("p", { dataset: { testid: "class-report-total" } }, totalsText(totals))];
  for (const { pre, post } of prePost(rows)) {
    const line = say("prePostLine", { text: post.text, pre: pct(pre.percent_right), post: pct(post.percent_right), a: pre.number, b: post.number });
    parts.push(el("p", { className: "cr-prepost", dataset: { testid: "class-report-prepost" } }, line));
  }
  return parts;
}

/** A printable page of a report: the table, then each question with its options and their counts. */
export function printableReport(title, report) {
  const root = el("article", { className: "lesson-handout class-report", dataset: { testid: "class-report-print" } });
  root.append(el("h1", {}, title));
  const when = report.started ? say("started", { when: report.started.replace("T", " ").replace("+00:00", " UTC") }) : "";
  if (when) root.append(el("p", {}, when));
  root.append(...reportTable(report.rows, report.totals));
  for (const r of report.rows) {
    const section = el("section", { className: "handout-view" });
    section.append(el("h2", {}, `${r.number}. ${r.text}`));
    section.append(el("p", {}, say("questionLine", { chapter: chapterName(r.chapter), step: r.step, answered: r.answered, inRoom: r.in_room, percent: pct(r.percent_right) })));
    const list = el("table", { className: "handout-numbers" });
    list.append(cells("th", [say("answer"), say("votes"), ""]));
    r.options.forEach((o, j) => {
      if (r.kind === "cell" && !r.counts[j] && !r.right.includes(j)) return; // a grid: the cells that matter
      list.append(cells("td", [o, r.counts[j], r.right.includes(j) ? say("rightMark") : ""]));
    });
    section.append(list);
    if (r.explain) section.append(el("p", { className: "handout-note" }, r.explain));
    root.append(section);
  }
  return root;
}
