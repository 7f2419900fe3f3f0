// A class question's words in this page's language. The server computes a question once for the
// whole room and sends its sentences as catalog messages with their values (app/classroom/
// questions.py: Say, Num, Word), so that every phone writes the same question in its reader's
// language: numbers as the language writes them, and the words of a built-in example as this
// page's table shows them ("gato" on a Spanish page). The English text the server sends beside
// them is the class report's; a question without messages (an older server) shows that text.
//
// Pure functions of the catalogs (i18n.js): tests/classroom/test_quiz_words.py runs them in node.

import { decimal, has, integer, locale, percent, t } from "../i18n.js";

/** A number value ({num, digits, style}) written as the language writes it. */
function number({ num, digits = 3, style = "fixed" }) {
  const x = Number(num);
  if (style === "fixed") return decimal(x, digits);
  if (style === "upto") return decimal(x, 0, digits);
  if (style === "percent") return percent(x, digits);
  if (style === "int") return integer(x);
  const options = style === "sig" ? { maximumSignificantDigits: digits } : { maximumFractionDigits: 0 };
  return new Intl.NumberFormat(locale(), options).format(x).replace(/-/g, "\u2212");
}

/**
 * A word of the view ({word, example?, at?}): word `at` of a built-in example as this language's
 * catalog carries the example (example.<id>.tokens, one word per English word), else as it is.
 */
export function wordOf(v) {
  if (typeof v === "string") return v;
  const key = `example.${v.example}.tokens`;
  if (v.example && has(key)) {
    const own = t(key).split(" "); // one word per word of the example (chapters/CONTRACT.md)
    if (Number.isInteger(v.at) && v.at >= 0 && v.at < own.length) return own[v.at];
  }
  return String(v.word);
}

function value(v) {
  if (v === null || typeof v !== "object") return v;
  if ("num" in v) return number(v);
  if ("word" in v) return wordOf(v);
  return String(v);
}

/** A message ({key, values}) in this page's language. */
export function said(message) {
  const values = Object.fromEntries(Object.entries(message.values ?? {}).map(([k, v]) => [k, value(v)]));
  return t(message.key, values);
}

/** An option's label: a message, or a word. */
export const optionText = (o) => ("key" in o ? said(o) : wordOf(o));

/**
 * The question as this page shows it: { text, options, grid: {rows, cols} | null, explain } (explain
 * once revealed), from its messages where the server sent them, else its English text.
 */
export function questionWords(quiz) {
  const say = quiz.say;
  const revealed = "answer" in quiz;
  if (!say) {
    return { text: quiz.text, options: quiz.options, grid: quiz.grid ?? null, explain: revealed ? (quiz.answer.explain ?? "") : "" };
  }
  const grid = say.grid ? { rows: say.grid.rows.map(wordOf), cols: say.grid.cols.map(wordOf) } : (quiz.grid ?? null);
  const explain = revealed ? (quiz.answer.say ? said(quiz.answer.say) : (quiz.answer.explain ?? "")) : "";
  return { text: said(say.text), options: say.options.map(optionText), grid, explain };
}
