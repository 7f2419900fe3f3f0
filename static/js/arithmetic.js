// The worked arithmetic for the focused query, as lines of text built from the server's
// q, k, v and stages. Only the strings are made here; every result comes from the API.

import { fixed3, short, vector } from "./format.js";

const TERMS = 3; // dot products longer than this are shown in part

function dotTerms(q, k) {
  const terms = q.slice(0, TERMS).map((x, i) => `${short(x)}·${short(k[i])}`);
  if (q.length > TERMS) terms.push(`… (${q.length} terms)`);
  return terms.join(" + ");
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
  switch (step.arith) {
    case "dot":
      title = `q of “${who}” = ${vector(q)} against every key`;
      for (let j = 0; j < n; j++) {
        lines.push({ key: tokens[j], text: `${dotTerms(q, data.k[j])} = ${short(data.scores[i][j])}` });
      }
      break;
    case "scale":
      title = `Scores of “${who}” divided by ${rootDk} = ${short(Math.sqrt(data.d_k))}`;
      for (let j = 0; j < n; j++) {
        lines.push({ key: tokens[j], text: `${short(data.scores[i][j])} / ${rootDk} = ${fixed3(data.scaled[i][j])}` });
      }
      break;
    case "mask":
      title = data.mask === "causal" ? `Causal mask: “${who}” may not see later words` : "Full mask: every key stays visible";
      for (let j = 0; j < n; j++) {
        lines.push(
          hidden(j)
            ? { key: tokens[j], text: `comes later → −∞ (hidden)`, hidden: true }
            : { key: tokens[j], text: `${fixed3(data.masked[i][j])} (visible)` },
        );
      }
      break;
    case "softmax": {
      title = `Weights of “${who}”: e^score / Σ e^score over its row`;
      let sum = 0;
      const parts = [];
      for (let j = 0; j < n; j++) {
        const w = data.weights[i][j];
        sum += w;
        parts.push(fixed3(w));
        lines.push(
          hidden(j)
            ? { key: tokens[j], text: `−∞ → 0 (hidden)`, hidden: true }
            : { key: tokens[j], text: `${fixed3(data.masked[i][j])} → ${fixed3(w)}  (${(w * 100).toFixed(1)} %)` },
        );
      }
      check = `Row check: ${parts.join(" + ")} = ${fixed3(sum)}`;
      break;
    }
    case "mix": {
      title = `z of “${who}” = Σ weight × v`;
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
