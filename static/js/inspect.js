// The numbers behind the arrows (sentence mode): the full q, k and v of the hovered or focused
// token, straight from the API response, since the 3D view can only show a projection.

import { el } from "./dom.js";
import { fixed3 } from "./format.js";


const norm = (row) => Math.hypot(...row);
const two = (x) => Number(x).toFixed(2).replace("-", "\u2212");

function vectorLine(kind, token, row) {
  const line = el("p", { className: `vi-line vi-${kind}` });
  line.append(
    el("span", { className: "vi-name" }, `${kind} of “${token}”`),
    el("span", { className: "vi-norm" }, ` ‖${kind}‖ = ${fixed3(norm(row))}, ${row.length} numbers: `),
    el("span", { className: "vi-nums" }, row.map(two).join(" ")),
  );
  return line;
}

/**
 * Fill `box` for `data` (the API response, token by token).
 * `what`: { query: [token indices], key: [token indices] | null, why: "hover" | "focus" }.
 */
export function renderInspect(box, data, what) {
  const parts = [];
  const head = el("p", { className: "vi-head" });
  head.textContent =
    what.why === "cell"
      ? "The hovered cell: the query's q and the key's k, every number (the 3D view shows their PCA projection)."
      : `The ${what.why === "hover" ? "hovered" : "focused"} word's q, k and v, every number (the 3D view shows their PCA projection; hover a word in the 3D view or a cell of the table for another).`;
  parts.push(head);
  for (const i of what.query) {
    parts.push(vectorLine("q", data.tokens[i], data.q[i]));
    if (!what.key) {
      parts.push(vectorLine("k", data.tokens[i], data.k[i]));
      parts.push(vectorLine("v", data.tokens[i], data.v[i]));
    }
  }
  for (const j of what.key ?? []) parts.push(vectorLine("k", data.tokens[j], data.k[j]));
  box.replaceChildren(...parts);
}
