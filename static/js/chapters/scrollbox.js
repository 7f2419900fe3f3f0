// Not a chapter: a helper the chapters' tables share.

import { el } from "../dom.js";

/** `table` in a box that may scroll sideways on a phone, named by the table's caption. */
export function scrollBox(table) {
  // keyboard users reach the box with Tab, then scroll it with the arrow keys
  const box = el("div", { className: "ca-scroll", tabindex: "0", role: "region", "aria-label": table.querySelector("caption")?.textContent ?? "table" });
  box.append(table);
  return box;
}
