// The projector view's side panels (the step's explanation, its tables, a chapter's controls) laid
// out to be read from the back of a classroom: no text smaller than FLOOR_REM of the root size
// (14 px at 1280×720, 21 px at 1920×1080), nothing past a box, nothing to scroll. A panel that
// holds more than its box, in this order, until it fits:
//   1. a slight zoom (CSS zoom), never below the floor;
//   2. the chapter's controls fold into a tab;
//   3. the blocks the step does not speak of (all but its figure: step.figure, #app[data-figure])
//      fold into tabs, one at a time from the last;
//   4. the 3D view gives the panel more of the width, step by step.
// A tab opens its block as a sheet over the panel (one at a time; the tab again, or Escape, closes it).
// Only when all of that is not enough does the zoom go below the floor (the panel says so: data-fit-below).

import { el } from "../dom.js";
import { t } from "../i18n.js";

const FLOOR_REM = 0.73; // the smallest text, in root sizes (the root is 1.5vw in the projector view)
const MIN_FIT = 0.35; // the smallest zoom at all (below the floor: the last resort)
const RAISE_REM = 0.8; // text drawn smaller than this (a caption, a note) is set to it first
const TUCK_MIN_REM = 2.2; // a block shorter than this (a heading, a one-line label) is never folded away

// the step's words and tables beside the 3D view, and the ratio of panel to 3D view they start at
export const PANELS = ".workspace .lesson, .chapter-side";
const BASE_RATIO = { lesson: 1.4, side: 1.25 };
const WIDER = [1.6, 2.2, 2.8];

/** The root font size in px: the projector view's rem. */
const rem = () => parseFloat(getComputedStyle(document.documentElement).fontSize) || 16;

/** The smallest text a panel may show, in CSS px. */
export const floorPx = () => FLOOR_REM * rem();

/** The size text in `e` is drawn at on the screen, in CSS px (its font size × every zoom and transform). */
export function drawnFontPx(e) {
  const size = parseFloat(getComputedStyle(e).fontSize);
  if (!size) return 0;
  if (e instanceof SVGGraphicsElement) {
    const box = e.getBBox();
    return box.height ? (size * e.getBoundingClientRect().height) / box.height : size;
  }
  const h = e.offsetHeight; // unscaled by zoom and transforms; the client rect is scaled
  return h ? (size * e.getBoundingClientRect().height) / h : size;
}

/** The smallest drawn text in `root` (visible text only; 0-sized text is a hidden label). */
export function smallestText(root) {
  let least = Infinity;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const e = walker.currentNode.parentElement;
    if (!walker.currentNode.textContent.trim() || !e.getClientRects().length) continue;
    if (getComputedStyle(e).visibility === "hidden") continue;
    const px = drawnFontPx(e);
    if (px > 0 && px < least) least = px;
  }
  return least;
}

const within = (e) => e.scrollHeight <= e.clientHeight + 1 && e.scrollWidth <= e.clientWidth + 1;

/** The boxes inside `panel` that clip what they hold (a table's scrolling box, a clamped cell). */
function clippers(panel) {
  return [...panel.querySelectorAll("*")].filter((e) => {
    if (e.matches("input, select, textarea")) return false; // a long value scrolls in its own field: not cut text
    if (e.closest(".cr-tucked")) return false;
    const s = getComputedStyle(e);
    return (s.overflowX !== "visible" || s.overflowY !== "visible") && e.getClientRects().length;
  });
}

/** Does the panel show all it holds (nothing past its box or past a box inside it, nothing to scroll)? */
function fits(panel) {
  return within(panel) && clippers(panel).every(within);
}

/** The largest zoom in [lowest, 1] at which the panel fits, set on it; false (zoom 1) if none. */
function zoomToFit(panel, lowest) {
  panel.style.zoom = "";
  if (fits(panel)) return true;
  if (lowest >= 1) return false;
  panel.style.zoom = String(lowest);
  if (!fits(panel)) {
    panel.style.zoom = "";
    return false;
  }
  let lo = lowest;
  let hi = 1;
  for (let i = 0; i < 7; i++) {
    const mid = (lo + hi) / 2;
    panel.style.zoom = String(mid);
    if (fits(panel)) lo = mid;
    else hi = mid;
  }
  panel.style.zoom = String(lo);
  return true;
}

const isControls = (e) =>
  e.matches("form, .chapter-controls, .ca-choices, .ca-form") || !!e.querySelector("input, select, textarea");

/** The chapter panel's blocks that may fold: its controls, and the blocks beside what the step speaks of. */
function foldable(panel) {
  const box = panel.querySelector("#chapter-panel");
  if (!box) return { controls: [], others: [], figures: [] };
  let figures = [];
  try {
    figures = [...box.querySelectorAll(document.getElementById("app")?.dataset.figure || ":not(*)")];
  } catch {
    figures = []; // not a selector this page understands: every block may fold
  }
  const controls = [];
  const others = [];
  const least = TUCK_MIN_REM * rem();
  const visit = (parent) => {
    for (const c of parent.children) {
      if (!c.getClientRects().length || c.classList.contains("cr-tabs")) continue;
      if (figures.some((f) => f === c || f.contains(c))) continue; // what the step speaks of
      if (figures.some((f) => c.contains(f))) {
        visit(c); // holds it: fold what stands beside it
        continue;
      }
      if (isControls(c)) controls.push(c);
      else if (c.querySelectorAll("table").length > 1 && [...c.children].filter((x) => x.querySelector("table") || x.matches("table")).length > 1) {
        visit(c); // several tables side by side or one under another: each may fold on its own
      } else if (c.getBoundingClientRect().height >= least) others.push(c);
    }
  };
  visit(box);
  // kept longest: the blocks the words name ("head 2") and those of the figure's kind (head-weights-1 beside head-weights-0)
  const stem = (id) => (id || "").replace(/-?\d+$/, "");
  const kinds = new Set(figures.map((f) => stem(f.dataset?.testid)).filter(Boolean));
  const akin = (b) => [b, ...b.querySelectorAll("[data-testid]")].some((e) => kinds.has(stem(e.dataset?.testid)));
  const keep = (b) => akin(b) || mentioned(b, panel);
  return { controls, others: [...others.filter(keep), ...others.filter((b) => !keep(b))], figures };
}

/** After `block` folded: a box left with nothing but short lines (a heading) beside it folds whole. */
function promote(block, figures) {
  const box = block.parentElement;
  if (!box || box.id === "chapter-panel" || !box.closest("#chapter-panel") || figures.some((f) => box.contains(f))) return;
  const least = TUCK_MIN_REM * rem();
  const left = [...box.children].filter((c) => !c.classList.contains("cr-tucked") && c.getClientRects().length);
  if (left.some((c) => c.getBoundingClientRect().height >= least)) return;
  for (const c of box.querySelectorAll(".cr-tucked")) c.classList.remove("cr-tucked");
  box.classList.add("cr-tucked");
  promote(box, figures);
}

/** A few words of `text` up to its first comma, colon or stop (≤ 24 characters, whole words). */
function words(text) {
  let name = "";
  for (const w of (text || "").trim().split(/[,:;.(]/)[0].split(/\s+/)) {
    if ((name + " " + w).length > 24) break;
    name = name ? `${name} ${w}` : w;
  }
  return name;
}

/** A block's name: its label, its heading, or its first words. */
function blockName(block) {
  const head = block.querySelector("h3, h4, caption, .ca-title, strong, b, th") ?? block;
  return words(block.getAttribute("aria-label")) || words(head.textContent) || t("projector.more");
}

/** Does the step's explanation name this block (its heading, e.g. "head 2")? Such blocks fold last. */
function mentioned(block, panel) {
  const name = blockName(block).toLowerCase();
  const said = (panel.querySelector(".explain")?.textContent ?? "").toLowerCase();
  return name.length > 2 && said.includes(name);
}

/** Fold `blocks` into tabs (a strip at the panel's foot; each tab opens its block as a sheet). */
function tuck(panel, blocks) {
  for (const b of blocks) b.classList.add("cr-tucked");
  drawTabs(panel);
}

/** Name the folded blocks' tabs: the controls are one tab; folded neighbours share one (the first's name, or a label among them). */
function nameTabs(panel) {
  const tucked = [...panel.querySelectorAll(".cr-tucked")];
  let run = [];
  const close = () => {
    const labelled = run.find((b) => b.getAttribute("aria-label"));
    const names = run.map(blockName);
    // a few short names (W_Q1 W_K1 W_V1) together; else the label among them, or the first's name
    const name = names.length <= 3 && names.every((n) => n.length <= 8) ? names.join(" ") : blockName(labelled ?? run[0]);
    for (const b of run) b.dataset.tab = name;
    run = [];
  };
  for (const b of tucked) {
    if (isControls(b)) {
      b.dataset.tab = t("projector.controls");
      continue;
    }
    if (run.length && b.previousElementSibling !== run[run.length - 1]) close();
    run.push(b);
  }
  if (run.length) close();
}

function drawTabs(panel) {
  nameTabs(panel);
  const groups = new Map(); // a tab per name: the chapter's controls, wherever they stand, are one tab
  for (const b of panel.querySelectorAll(".cr-tucked")) groups.set(b.dataset.tab, [...(groups.get(b.dataset.tab) ?? []), b]);
  let strip = panel.querySelector(":scope > .cr-tabs");
  if (!groups.size) {
    strip?.remove();
    return;
  }
  if (!strip) {
    strip = el("div", { className: "cr-tabs", role: "group", "aria-label": t("projector.tabs"), dataset: { testid: "projector-tabs" } });
    panel.append(strip);
  }
  const names = [...groups.keys()];
  if (strip.dataset.names === names.join("|")) return; // nothing changed: no mutation (the panel is watched)
  strip.dataset.names = names.join("|");
  strip.replaceChildren(
    el("span", { className: "cr-tabs-title" }, t("projector.alsoHere")),
    ...names.map((name, i) => {
      const tab = el("button", { type: "button", className: "cr-tab", dataset: { testid: `projector-tab-${i}`, tab: name } }, name);
      tab.setAttribute("aria-expanded", "false");
      tab.addEventListener("click", () => openTab(panel, name));
      return tab;
    }),
  );
}

/** Open the blocks of tab `name` as a sheet over the panel (closing any other); the same tab again closes it. */
function openTab(panel, name) {
  const blocks = [...panel.querySelectorAll(".cr-tucked")].filter((b) => b.dataset.tab === name);
  const open = !blocks.some((b) => b.classList.contains("cr-open"));
  closeTabs();
  if (!open || !blocks.length) return;
  let top = 0;
  for (const b of blocks) {
    b.classList.add("cr-open");
    b.style.setProperty("--cr-sheet-top", `${top}px`); // one block under the other
    top += b.getBoundingClientRect().height + 8;
  }
  panel.querySelector(`.cr-tab[data-tab="${CSS.escape(name)}"]`)?.setAttribute("aria-expanded", "true");
}

/** Close an open tab's sheet (Escape). */
export function closeTabs() {
  for (const b of document.querySelectorAll(".cr-open")) b.classList.remove("cr-open");
  for (const t of document.querySelectorAll(".cr-tab")) t.setAttribute("aria-expanded", "false");
}

/** Text the chapter draws small (captions, notes, table headings) set to RAISE_REM, so that the
 * zoom has room above the floor. SVG text keeps its size (the chart's own scale): it is the chart's. */
function raise(panel) {
  const least = RAISE_REM * rem();
  const walker = document.createTreeWalker(panel, NodeFilter.SHOW_TEXT);
  const small = new Set();
  while (walker.nextNode()) {
    const e = walker.currentNode.parentElement;
    if (!walker.currentNode.textContent.trim() || e instanceof SVGElement || !e.getClientRects().length) continue;
    const px = drawnFontPx(e);
    if (px > 0 && px < least - 0.05) small.add(e);
  }
  for (const e of small) {
    e.style.fontSize = `${RAISE_REM}rem`;
    e.dataset.crRaised = "true";
  }
}

/** Every fold, zoom, raised text and width back as the chapter drew it. */
function reset(panel, grid) {
  for (const e of panel.querySelectorAll("[data-cr-raised]")) {
    e.style.fontSize = "";
    delete e.dataset.crRaised;
  }
  panel.style.zoom = "";
  delete panel.dataset.fit;
  delete panel.dataset.fitBelow;
  delete panel.dataset.folded;
  grid?.style.removeProperty("--cr-side");
  for (const b of panel.querySelectorAll(".cr-tucked")) {
    b.classList.remove("cr-tucked", "cr-open");
    b.style.removeProperty("--cr-sheet-top");
    delete b.dataset.tab;
  }
}

/** Lay one panel out (see the top of this file). */
function layOut(panel) {
  const grid = panel.parentElement;
  const base = panel.matches(".lesson") ? BASE_RATIO.lesson : BASE_RATIO.side;
  const open = panel.querySelector(".cr-open")?.dataset.tab; // an open sheet stays open through a refit
  reset(panel, grid);
  raise(panel);
  const widen = (ratio) => grid?.style.setProperty("--cr-side", `${Math.max(base, ratio)}fr`);
  const fitted = () => zoomToFit(panel, Math.min(1, floorPx() / smallestText(panel)));
  const folds = foldable(panel);
  let done = fitted();
  if (!done && folds.controls.length) {
    tuck(panel, folds.controls);
    panel.dataset.folded = "controls";
    done = fitted();
  }
  // the blocks beside the figure, one at a time from the end of the list (foldable() puts last those
  // that matter least; within each kind, a chapter puts first what matters most)
  const order = folds.others;
  const folded = [];
  for (let i = order.length - 1; i >= 0 && !done; i--) {
    if (order[i].closest(".cr-tucked")) continue; // folded with its box already
    tuck(panel, [order[i]]);
    promote(order[i], folds.figures);
    folded.push(order[i].closest(".cr-tucked"));
    panel.dataset.folded = "blocks";
    done = fitted();
  }
  // a later fold may have made room for an earlier one: give back, most wanted first, what fits again
  for (const b of folded.reverse()) {
    if (!done || !b.classList.contains("cr-tucked")) continue;
    b.classList.remove("cr-tucked");
    if (!fitted()) {
      b.classList.add("cr-tucked");
      fitted();
    }
  }
  for (const ratio of WIDER) {
    if (done) break;
    widen(ratio);
    done = fitted();
  }
  if (!done) {
    zoomToFit(panel, MIN_FIT);
    panel.dataset.fitBelow = "true";
  }
  drawTabs(panel);
  if (open) openTab(panel, open);
  panel.dataset.fit = (Number(panel.style.zoom) || 1).toFixed(3);
}

/** Lay out each side panel; `on` false puts every panel back as the page draws it. Returns the
 * panels' widths against their 3D views (a change of them reframes the 3D view). */
export function fitPanels(on) {
  const widths = [];
  for (const panel of document.querySelectorAll(PANELS)) {
    if (!on || !panel.getClientRects().length) {
      reset(panel, panel.parentElement);
      drawTabs(panel);
    } else {
      layOut(panel);
    }
    widths.push(panel.parentElement?.style.getPropertyValue("--cr-side") ?? "");
  }
  return widths.join(" ");
}
