// What the attention view shows of a long sentence (a summary answer, lod.js): derive(state) hands
// such an answer here. Pure, as derive is: it reads the state and returns the view.
//
// Level of detail:
//   the 3D view   the window of words around the focus, whole (as a shorter sentence's window),
//                 every other block of keys as one marker whose height is the focused query's
//                 share of it, and links to the focused query's strongest keys only
//   the table     "blocks": the whole n × n table in blocks of the summary, the focused query's own
//                 row opened under its block; "tokens": a window of rows around the focus by a
//                 window of keys (the rows' own, or a block that was opened)
//   the arithmetic  the window's keys, and what the other keys add up to
// A window whose rows have not come yet (the focus moved; attention/source.js fetchRows asks) is
// not drawn: the view keeps what it shows until they come.

import { arithmetic } from "../arithmetic.js";
import { integer, t } from "../i18n.js";
import { fixed3 } from "../format.js";
import { blockOf, blockShares, missingRows, ROWS, rowWindow, topKeys } from "../lod.js";
import { identityGroups, sliceView } from "../model.js";
import { stepById } from "./stages.js";

const windows = new WeakMap(); // an answer → its last window (a cache: the same rows give the same slice)
const groupsOf = new WeakMap(); // an answer → one group per token (no word pieces are merged)

/** Rows from..to − 1 of `data` as a small full answer with its PCA drawing, made once per answer and window. */
function windowOf(data, from, to, drawingFor) {
  const kept = windows.get(data);
  if (kept && kept.from === from && kept.to === to) return kept.shown;
  const slice = sliceView(data, from, to);
  const shown = { ...slice, drawn: drawingFor(slice) };
  windows.set(data, { from, to, shown });
  return shown;
}

function identity(data) {
  let groups = groupsOf.get(data);
  if (!groups) {
    groups = identityGroups(data.tokens.length);
    groupsOf.set(data, groups);
  }
  return groups;
}

/**
 * The keys outside the window from..to − 1, block by block (a block the window cuts is cut with it):
 * [{ from, to, share }] in order, `share` the focused row's weight on them (null: withheld).
 */
function segments(edges, from, to, row) {
  const out = [];
  const share = (a, b) => {
    if (!row) return null;
    let s = 0;
    for (let j = a; j < b; j++) s += row[j];
    return s;
  };
  for (let b = 0; b < edges.length - 1; b++) {
    const [a, z] = [edges[b], edges[b + 1]];
    if (a < from) out.push({ from: a, to: Math.min(z, from), share: share(a, Math.min(z, from)) });
    if (z > to) out.push({ from: Math.max(a, to), to: z, share: share(Math.max(a, to), z) });
  }
  return out;
}

/** The worked arithmetic of the window's keys, and what the keys outside it add up to. */
function longArithmetic(step, data, shown, focus, from, to) {
  const arith = arithmetic(step, shown, focus - from);
  const n = data.tokens.length;
  const rest = n - (to - from);
  if (!rest) return arith;
  const row = data.weights[focus];
  let inside = 0;
  for (let j = from; j < to; j++) inside += row[j];
  let total = 0;
  for (let j = 0; j < n; j++) total += row[j];
  const lines = [...arith.lines, { key: "…", text: t("arith.long.more", { count: integer(rest), n: integer(n) }), hidden: false }];
  const check =
    step.arith === "softmax" ? t("arith.long.rowCheck", { inside: fixed3(inside), outside: fixed3(total - inside), n: integer(n), sum: fixed3(total) }) : arith.check;
  return { ...arith, lines, check };
}

/**
 * The derived view of a long answer `data` (see derive.js for its fields). `limits`: { sceneMax,
 * tableRows } for the screen, `drawingFor` (PCA, cached), `evenScene` (the links while the weights
 * are withheld).
 */
export function deriveLong(state, base, data, { sceneMax, tableRows, drawingFor, evenScene }) {
  const step = base.step;
  const n = data.tokens.length;
  const focus = Math.min(state.focus, n - 1);
  const groups = identity(data);
  const scene3d = rowWindow(n, focus, Math.min(sceneMax, ROWS));
  const rows = rowWindow(n, focus, Math.min(tableRows, ROWS));
  const loaded = rowWindow(n, focus, ROWS);
  const common = { ...base, sentenceMode: true, merged: false, groups, focus, focusRow: focus, question: null, guessText: null, long: true };
  if (missingRows(data, loaded.from, loaded.to).length) {
    // the rows around a new focus are on their way: nothing new is drawn until they come
    return { ...common, ready: false, shown: null, withheld: state.withheld };
  }
  const withheld = state.withheld;
  const shownStep = withheld && step.stage === "weights" ? stepById("mask") : step;
  const inRows = (c) => c && c.row >= rows.from && c.row < rows.to;
  const hover = inRows(state.hover) && data.weights[state.hover.row] ? state.hover : null;

  // the table: the blocks, or a window of tokens (its keys: the rows' own, or those of an opened block)
  const mode = state.lod?.table === "tokens" ? "tokens" : "blocks";
  const edges = data.edges;
  const width = rows.to - rows.from;
  const keysFrom = state.lod?.keys ?? null;
  const cols = keysFrom === null ? { from: rows.from, to: rows.to } : { from: Math.max(0, Math.min(keysFrom, n - width)), to: 0 };
  if (keysFrom !== null) cols.to = cols.from + width;
  const focusShares = withheld ? null : blockShares(data.weights[focus], edges);
  const lod = {
    mode,
    n,
    edges,
    block: data.block,
    mean: withheld ? null : data.block_mean,
    peak: withheld ? null : data.block_peak,
    focus,
    focusBlock: blockOf(edges, focus),
    focusShares,
    tokens: data.tokens,
    mask: data.mask,
    keys: keysFrom,
  };
  const table = {
    focus,
    hover,
    data,
    step: shownStep,
    window: { from: rows.from, to: rows.to, colFrom: cols.from, colTo: cols.to, n },
    lod,
  };

  // the 3D view: the window around the focus, whole; the other blocks as markers; links to the top keys
  const offset = scene3d.from;
  const shown = windowOf(data, scene3d.from, scene3d.to, drawingFor);
  const inScene = (c) => (c && c.row >= scene3d.from && c.row < scene3d.to && c.col >= scene3d.from && c.col < scene3d.to ? { row: c.row - offset, col: c.col - offset } : null);
  const top = withheld ? [] : topKeys(data, focus, scene3d.from, scene3d.to);
  const drawn = withheld ? evenScene(shown, shownStep) : { data: shown, step: shownStep };
  const outside = segments(edges, scene3d.from, scene3d.to, withheld ? null : data.weights[focus]);
  const segmentOf = (j) => outside.findIndex((s) => j >= s.from && j < s.to);
  const blocks = {
    n,
    from: scene3d.from,
    to: scene3d.to,
    tokens: data.tokens,
    segments: outside,
    top: top.map((k) => ({ ...k, segment: k.inWindow ? null : segmentOf(k.key) })),
  };
  const scene = {
    ...drawn,
    focus: focus - offset,
    hover: inScene(hover),
    withheld: Boolean(withheld),
    only: withheld ? null : top.filter((k) => k.inWindow).map((k) => k.key - offset), // links to these keys only
    blocks,
  };

  const inspectable = (i) => Boolean(data.q[i]);
  let inspect = { query: [focus], key: null, why: "focus" };
  if (hover && inspectable(hover.row) && inspectable(hover.col)) inspect = { query: [hover.row], key: [hover.col], why: "cell" };
  else if (state.hoverToken !== null && inspectable(state.hoverToken)) inspect = { query: [state.hoverToken], key: null, why: "hover" };

  return {
    ...common,
    shown: data,
    hover,
    withheld,
    shownStep,
    wide: true,
    table,
    arithmetic: longArithmetic(shownStep, data, shown, focus, scene3d.from, scene3d.to),
    scene,
    sceneOffset: offset,
    sceneWindow: { n, count: scene3d.to - scene3d.from, from: scene3d.from + 1, to: scene3d.to, tableAll: false, long: true },
    inspect,
    compare: null,
    masks: { full: data.mask !== "full", causal: data.mask !== "causal" },
  };
}
