// The worked arithmetic for the focused query, as lines of text built from the server's
// q, k, v and stages. Only the strings are made here; every result comes from the API.

import { fixed3, short, vector } from "./format.js";
import { andList, language, percent as share, t } from "./i18n.js";

const TERMS = 3; // dot products longer than this are shown in part

function dotTerms(q, k) {
  const terms = q.slice(0, TERMS).map((x, i) => `${short(x)}·${short(k[i])}`);
  if (q.length > TERMS) terms.push(t("arith.moreTerms", { n: q.length }));
  return terms.join(" + ");
}

/** A share as a percentage with one decimal ("89.5 %" in English, the language's own form elsewhere). */
function percent(w) {
  return language() === "en" ? `${(w * 100).toFixed(1)}\u202f%` : share(w, 1);
}

/** What a mean is over: "heads" or "layers" (the API's mean_over), said in the page's language. */
function meanOver(names) {
  return andList(names.map((name) => t("arith.over", { name })));
}

/**
 * { title, lines: [{ key, text, hidden }], check } for step `step` of response `data`,
 * focused on query row `i`.
 */
export function arithmetic(step, data, i) {
  const tokens = data.tokens;
  const who = tokens[i];
  const q = data.q[i];
  const rootDk = `√${data.d_k}`;
  const n = tokens.length;
  const lines = [];
  let title = "";
  let check = "";
  const hidden = (j) => Boolean(step.masked) && data.masked[i][j] === null;
  const over = data.mean_over?.length ? meanOver(data.mean_over) : "";
  if (over) return meanArithmetic(step, data, i, over, hidden);
  if (data.merged) return mergedArithmetic(step, data, i, hidden);
  switch (step.arith) {
    case "dot":
      title = t("arith.dot.title", { who, q: vector(q) });
      for (let j = 0; j < n; j++) {
        lines.push({ key: tokens[j], text: `${dotTerms(q, data.k[j])} = ${short(data.scores[i][j])}` });
      }
      break;
    case "scale":
      title = t("arith.scale.title", { who, root: rootDk, value: short(Math.sqrt(data.d_k)) });
      for (let j = 0; j < n; j++) {
        lines.push({ key: tokens[j], text: `${short(data.scores[i][j])} / ${rootDk} = ${fixed3(data.scaled[i][j])}` });
      }
      break;
    case "mask":
      title = data.mask === "causal" ? t("arith.mask.causal", { who }) : t("arith.mask.full");
      for (let j = 0; j < n; j++) {
        lines.push(
          hidden(j)
            ? { key: tokens[j], text: t("arith.mask.later"), hidden: true }
            : { key: tokens[j], text: t("arith.mask.visible", { value: fixed3(data.masked[i][j]) }) },
        );
      }
      break;
    case "softmax": {
      title = t("arith.softmax.title", { who });
      let sum = 0;
      const parts = [];
      for (let j = 0; j < n; j++) {
        const w = data.weights[i][j];
        sum += w;
        parts.push(fixed3(w));
        lines.push(
          hidden(j)
            ? { key: tokens[j], text: t("arith.softmax.hidden"), hidden: true }
            : { key: tokens[j], text: `${fixed3(data.masked[i][j])} → ${fixed3(w)}  (${percent(w)})` },
        );
      }
      check = t("arith.rowCheck", { sum: `${parts.join(" + ")} = ${fixed3(sum)}` });
      break;
    }
    case "mix": {
      title = t("arith.mix.title", { who });
      for (let j = 0; j < n; j++) {
        const w = data.weights[i][j];
        lines.push({ key: tokens[j], text: `${fixed3(w)} × ${vector(data.v[j])}`, hidden: hidden(j) });
      }
      check = `z = ${vector(data.output[i], 4)}`;
      break;
    }
    default:
      break;
  }
  return { title, lines, check };
}

/**
 * A mean over heads (or layers) is a mean of each stage: q̄·k̄ is not the mean score and the
 * softmax of a mean score is not the mean weight, so the panel says what was averaged instead
 * of showing arithmetic that would not add up.
 */
function meanArithmetic(step, data, i, over, hidden) {
  const tokens = data.tokens;
  const who = tokens[i];
  const n = tokens.length;
  const lines = [];
  let title = "";
  let check = "";
  const stage = { dot: "scores", scale: "scaled", mask: "masked", softmax: "weights", mix: "weights" }[step.arith];
  const what = { dot: "q·k", scale: `q·k / √${data.d_k}` }[step.arith] ?? t(step.arith === "mask" ? "arith.mean.masked" : "arith.mean.weights");
  title = t("arith.mean.title", { who, over, what });
  let sum = 0;
  for (let j = 0; j < n; j++) {
    const x = data[stage][i][j];
    if (x !== null) sum += x;
    lines.push(
      hidden(j)
        ? { key: tokens[j], text: t("arith.mean.hidden"), hidden: true }
        : { key: tokens[j], text: t("arith.mean.value", { value: step.arith === "softmax" || step.arith === "mix" ? fixed3(x) : short(x) }) },
    );
  }
  if (step.arith === "softmax") check = t("arith.mean.rowCheck", { sum: fixed3(sum) });
  if (step.arith === "mix") check = t("arith.mean.z", { over, z: vector(data.output[i], 4) });
  return { title, lines, check };
}

/** Merged word pieces (weights only, see model.js mergeView): which pieces each number adds up. */
function mergedArithmetic(step, data, i, hidden) {
  const { tokens, merged } = data;
  const who = tokens[i];
  const qPieces = merged.pieces[i];
  const lines = [];
  let sum = 0;
  const of = qPieces.length > 1 ? t("arith.merged.of", { n: qPieces.length, pieces: qPieces.join(" ") }) : "";
  for (let j = 0; j < tokens.length; j++) {
    const w = data.weights[i][j];
    sum += w;
    const kPieces = merged.groups[j];
    let text = fixed3(w);
    if (kPieces.length > 1) {
      const parts = kPieces.map((b) => fixed3(merged.rows[i].reduce((s, row) => s + row[b], 0) / merged.rows[i].length));
      text = `${parts.join(" + ")} = ${fixed3(w)}  (${merged.pieces[j].join(" ")})`;
    }
    lines.push({ key: tokens[j], text, hidden: hidden(j) });
  }
  if (step.arith === "mix") {
    return {
      title: t("arith.merged.z", { who, of }),
      lines,
      check: `z = ${vector(data.output[i], 4)}`,
    };
  }
  return {
    title: t("arith.merged.weights", { who, of }),
    lines,
    check: t("arith.rowCheck", { sum: fixed3(sum) }),
  };
}
