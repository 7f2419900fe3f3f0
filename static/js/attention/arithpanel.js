// The worked arithmetic panel for the focused query (the lines come from arithmetic.js).

import { el } from "../dom.js";

const $ = (id) => document.getElementById(id);

export function renderArithmetic(arith) {
  $("arith-title").textContent = arith.title;
  const lines = arith.lines.map((line, j) => {
    const li = el("li", { dataset: { testid: `arith-${j}` }, ...(line.hidden ? { className: "hidden-key" } : {}) });
    li.append(el("span", { className: "arith-key" }, line.key), el("span", { className: "arith-text" }, line.text));
    return li;
  });
  $("arith-lines").replaceChildren(...lines);
  $("arith-check").textContent = arith.check;
  $("arith-check").hidden = !arith.check;
}
