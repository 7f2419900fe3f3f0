// A long sentence's whole n × n table, in blocks (lod.js; the server's app/lod.py): rows are blocks
// of queries, columns blocks of keys, each cell the mean share of the block's queries' attention
// that lands on the block's keys (a row of blocks adds up to 1, as a row of weights does), its
// largest single weight said in its title. The focused query's own row opens under its block.
// A cell opens that block of keys beside the focused query's rows (the table of words, lod.js
// "tokens"); a block's row button moves the focus into it. A real <table>, text via textContent.

import { el } from "./dom.js";
import { fixed3, heatRgb, inkFor, rgbCss } from "./format.js";
import { decimal, integer, t } from "./i18n.js";

/** A share as a block shows it: two decimals, "·" for less than half a hundredth (its title has three). */
const two = (x) => (x < 0.005 ? "·" : decimal(x, 2));

/** "1–128": a block's tokens, counted from 1. */
export const blockRange = (edges, b) => (edges[b + 1] - edges[b] > 1 ? `${integer(edges[b] + 1)}–${integer(edges[b + 1])}` : integer(edges[b] + 1));

export class BlockTable {
  /**
   * @param table     the <table> element (the one the table of words uses: one is drawn at a time)
   * @param handlers  { focus(i): focus query i, open(b): open key block b beside the focused rows }
   */
  constructor(table, handlers) {
    this.table = table;
    this.handlers = handlers;
    table.addEventListener("click", (e) => {
      const opener = e.target.closest("[data-open]");
      if (opener && this.table.dataset.lod === "blocks") {
        const [row, col] = opener.dataset.open.split(" ").map(Number);
        if (row >= 0) this.handlers.focus(row);
        this.handlers.open(col);
        return;
      }
      const btn = e.target.closest("button[data-block-focus]");
      if (btn && this.table.dataset.lod === "blocks") this.handlers.focus(Number(btn.dataset.blockFocus));
    });
  }

  /** Draw the blocks of `lod` (attention/longview.js): the focused row under its block, `withheld` without the weights. */
  update(lod, withheld) {
    const table = this.table;
    const { edges, mean, peak, focus, focusBlock, focusShares, tokens, mask } = lod;
    const blocks = edges.length - 1;
    const active = table.contains(document.activeElement) ? document.activeElement.dataset.testid : null;
    table.replaceChildren();
    table.dataset.lod = "blocks";
    table.classList.remove("windowed");
    table.classList.add("dense", "crowded", "blocks");
    const caption = el("caption", {}, `${t("lod.caption", { block: integer(lod.block), n: integer(lod.n) })} `);
    caption.append(el("span", { className: "notes" }, t("lod.notes", { mask })));
    caption.dataset.testid = "lod-caption";
    table.append(caption);

    const head = el("thead");
    const hr = el("tr");
    hr.append(el("td", { className: "corner" }, t("table.corner")));
    for (let c = 0; c < blocks; c++) {
      const th = el("th", { scope: "col", dataset: { col: String(c) } });
      const btn = el("button", {
        type: "button",
        tabindex: "-1", // the row buttons are the keyboard route
        dataset: { open: `-1 ${c}`, testid: `blockcol-${c}` },
        "aria-label": t("lod.openKeys", { range: blockRange(edges, c) }),
      });
      btn.append(el("span", { className: "tok" }, blockRange(edges, c)));
      th.append(btn);
      hr.append(th);
    }
    head.append(hr);
    table.append(head);

    const body = el("tbody");
    const cell = (value, biggest, a, c, hidden, testid, title) => {
      const td = el("td", { dataset: { testid, open: `${a} ${c}` } });
      if (hidden) {
        td.classList.add("hidden-key");
        td.textContent = "";
        td.setAttribute("title", t("lod.hidden"));
        return td;
      }
      if (value === null) {
        td.textContent = "·";
        return td;
      }
      td.textContent = two(value);
      const rgb = heatRgb(value);
      td.style.backgroundColor = rgbCss(rgb);
      td.style.color = inkFor(rgb);
      td.setAttribute("title", title(value, biggest));
      return td;
    };
    const later = (a, c) => mask === "causal" && edges[c] > edges[a + 1] - 1; // every key of c after every query of a
    for (let a = 0; a < blocks; a++) {
      const tr = el("tr", { dataset: { row: String(a) } });
      if (a === focusBlock) tr.classList.add("focus-block");
      const th = el("th", { scope: "row" });
      const btn = el("button", {
        type: "button",
        dataset: { blockFocus: String(a === focusBlock ? focus : edges[a]), testid: `blockrow-${a}` },
        "aria-label": t("lod.focusBlock", { range: blockRange(edges, a) }),
      });
      btn.append(el("span", { className: "tok" }, blockRange(edges, a)));
      th.append(btn);
      tr.append(th);
      for (let c = 0; c < blocks; c++) {
        const title = (m, p) => t("lod.cell", { rows: blockRange(edges, a), keys: blockRange(edges, c), mean: fixed3(m), peak: fixed3(p) });
        tr.append(cell(mean ? mean[a][c] : null, peak ? peak[a][c] : null, a === focusBlock ? focus : edges[a], c, later(a, c), `block-${a}-${c}`, title));
      }
      body.append(tr);
      if (a !== focusBlock) continue;
      // the focused query's own row, block by block: the block opened at the focus
      const fr = el("tr", { className: "focused", dataset: { row: `q${focus}` }, "aria-current": "true" });
      const fh = el("th", { scope: "row", className: "focus-row" });
      const fb = el("button", { type: "button", dataset: { blockFocus: String(focus), testid: "blockrow-focus" }, "aria-label": t("lod.focusRow", { i: integer(focus + 1), token: tokens[focus] }) });
      fb.append(el("span", { className: "idx" }, integer(focus + 1)), " ", el("span", { className: "tok" }, tokens[focus]));
      fh.append(fb);
      fr.append(fh);
      for (let c = 0; c < blocks; c++) {
        const hidden = mask === "causal" && edges[c] > focus;
        const title = (m) => t("lod.focusCell", { token: tokens[focus], keys: blockRange(edges, c), share: fixed3(m) });
        const td = cell(focusShares ? focusShares[c] : null, null, focus, c, hidden, `blockfocus-${c}`, title);
        if (!hidden) {
          // the keyboard's way in: each of the focused row's blocks opens with Enter
          const open = el("button", { type: "button", className: "cell-open", dataset: { open: `${focus} ${c}` }, "aria-label": td.title || t("lod.openKeys", { range: blockRange(edges, c) }) });
          open.append(...td.childNodes);
          td.append(open);
        }
        fr.append(td);
      }
      body.append(fr);
    }
    table.append(body);
    table.dataset.withheld = String(Boolean(withheld));
    if (active) {
      const again = table.querySelector(`[data-testid="${active}"]`) ?? table.querySelector('[data-testid="blockrow-focus"]');
      (again ?? table).focus({ preventScroll: true });
    }
  }
}
