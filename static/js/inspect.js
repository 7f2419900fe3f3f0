// The numbers behind the arrows (sentence mode): the full q, k and v of the hovered or focused
// token, straight from the API response, since the 3D view can only show a projection.

import { el } from "./dom.js";
import { fixed3 } from "./format.js";
import { decimal, language, t } from "./i18n.js";


const norm = (row) => Math.hypot(...row);
const two = (x) => (language() === "en" ? Number(x).toFixed(2).replace("-", "\u2212") : decimal(Number(x), 2));

function vectorLine(kind, token, row) {
  const line = el("p", { className: `vi-line vi-${kind}` });
  line.append(
    el("span", { className: "vi-name" }, t("inspect.name", { kind, token })),
    el("span", { className: "vi-norm" }, t("inspect.norm", { kind, norm: fixed3(norm(row)), n: row.length })),
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
  head.textContent = t("inspect.head", { why: what.why });
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
