// A printable handout of a lesson: for each view its picture (the 3D view as drawn), its numbers
// (the table of the step's array) and, in the teacher's handout, its note; the students' handout has
// no note (a note may hold a question's answer). Shown over the page with a Print button; the print
// style sheet (lessons.css) prints the handout alone, one view per page.
import { el } from "../dom.js";
import { decimal, integer, language, t as tr } from "../i18n.js";
import { scenePicture } from "../export/snapshot.js";
import { arrayNames, arrayTable } from "../export/table-data.js";
import { eachView, viewSummary } from "./lesson-views.js";

const MAX_CELLS = 12; // rows and columns of a view's table on paper

// in the page's language (English: JavaScript's own forms, as the tests read them)
const number = (x) =>
  x === null || x === undefined ? "−∞" : Math.abs(x) >= 1000 ? x.toExponential(2) : language() === "en" ? x.toFixed(3) : decimal(x, 3);

/** The view's numbers as a table: the step's array (its first head), at most MAX_CELLS × MAX_CELLS. */
export function numbersTable(shown) {
  const answer = shown?.answer;
  const names = arrayNames(answer);
  if (!names.length) return null;
  const name = names.includes(shown.stage) ? shown.stage : names.includes("weights") ? "weights" : names[0];
  const t = arrayTable(answer, name);
  const rows = t.matrix.slice(0, MAX_CELLS);
  const cols = t.cols.slice(0, MAX_CELLS);
  const table = el("table", { className: "handout-numbers", dir: "ltr", dataset: { testid: "handout-numbers", array: name } });
  const cut = t.matrix.length > MAX_CELLS || t.cols.length > MAX_CELLS;
  table.append(el("caption", {}, tr("handout.caption", { name, heads: t.heads ? "yes" : "no", cut: cut ? "yes" : "no", max: integer(MAX_CELLS) })));
  const head = el("tr");
  head.append(el("th", {}, ""), ...cols.map((c) => el("th", { scope: "col" }, c)));
  table.append(head);
  rows.forEach((row, i) => {
    const tr = el("tr");
    tr.append(el("th", { scope: "row" }, t.rows[i] ?? String(i)), ...row.slice(0, MAX_CELLS).map((x) => el("td", {}, number(x))));
    table.append(tr);
  });
  return table;
}

function picture(shown) {
  if (!shown?.canvas && !shown?.renderScene) return null;
  try {
    return scenePicture(shown, 1).toDataURL("image/png");
  } catch {
    return null; // a view without a drawable scene
  }
}

/** The handout's element (not yet shown): one <section> per view; `notes`: the teacher's (false: the students'). */
export async function buildHandout(lesson, progress, { notes = true } = {}) {
  const root = el("article", { className: "lesson-handout", dataset: { testid: "lesson-handout", notes: String(notes) } });
  root.append(el("h1", {}, notes ? tr("handout.teacherTitle", { title: lesson.title }) : lesson.title));
  await eachView(lesson, (view, shown, i) => {
    const section = el("section", { className: "handout-view", dataset: { testid: "handout-view" } });
    const title = shown?.title ?? viewSummary(view.state);
    section.append(el("h2", {}, tr("handout.viewTitle", { k: integer(i + 1), n: integer(lesson.views.length), title })));
    if (notes && view.note) section.append(el("p", { className: "handout-note", dataset: { testid: "handout-note" } }, view.note));
    const src = picture(shown);
    if (src) section.append(el("img", { className: "handout-picture", src, alt: tr("handout.picture", { k: integer(i + 1) }), dataset: { testid: "handout-picture" } }));
    const numbers = numbersTable(shown);
    if (numbers) section.append(numbers);
    root.append(section);
  }, progress);
  return root;
}

/** Show the handout over the page, with Print and Close. */
export function showHandout(handout) {
  const tools = el("p", { className: "handout-tools" });
  const print = el("button", { type: "button", dataset: { testid: "handout-print" } }, tr("handout.print"));
  const close = el("button", { type: "button", dataset: { testid: "handout-close" } }, tr("handout.close"));
  print.addEventListener("click", () => window.print());
  close.addEventListener("click", () => {
    handout.remove();
    document.body.classList.remove("has-handout");
  });
  tools.append(print, close);
  handout.prepend(tools);
  document.querySelector(".lesson-handout")?.remove();
  document.body.append(handout);
  document.body.classList.add("has-handout");
  print.focus();
}
