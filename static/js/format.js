// Number formatting and colours shared by the table, the scene and the arithmetic panel.
// Nothing here computes attention: it only turns the server's numbers into text and colour.
// Numbers are written in the page's language (i18n.js: its digits and decimal sign); English keeps
// the forms below byte for byte. Code panels never use these (pycode.js writes Python's numbers).

import { decimal, language, listOf } from "./i18n.js";

const MINUS = "\u2212";
const english = () => language() === "en";

/** Exactly 3 decimals, with a true minus sign; null (−∞ from the API) as "−∞". */
export function fixed3(x) {
  if (x === null || x === undefined) return `${MINUS}∞`;
  if (!english()) return decimal(Number(x), 3);
  const s = Number(x).toFixed(3);
  if (/^-0\.000$/.test(s)) return "0.000";
  return s.replace("-", MINUS);
}

/** Up to 3 decimals without trailing zeros (6, 4.243, 0.5), for worked arithmetic. */
export function short(x) {
  if (x === null || x === undefined) return `${MINUS}∞`;
  if (!english()) return decimal(Number(x), 0, 3);
  let s = Number(x).toFixed(3).replace(/\.?0+$/, "");
  if (s === "-0") s = "0";
  return s.replace("-", MINUS);
}

export function vector(row, max = 3) {
  const parts = row.slice(0, max).map(short);
  if (row.length > max) parts.push("…");
  return `[${english() ? parts.join(", ") : listOf(parts)}]`;
}

// Okabe–Ito colours (safe for the common colour-vision deficiencies) for the vector kinds.
export const KIND_COLOURS = {
  q: 0xe69f00, // orange
  k: 0x0072b2, // blue
  v: 0x009e73, // bluish green
  z: 0xd55e00, // vermillion
  hover: 0xcc79a7, // reddish purple
};

// Cividis (Nuñez, Anderton & Renslow 2018), sampled: perceptually even and readable with
// any colour vision. The page runs it from light (0) to dark (1) so that "more" is darker.
const CIVIDIS = [
  [0x00, 0x22, 0x4e], [0x12, 0x32, 0x70], [0x3b, 0x49, 0x6c], [0x57, 0x5c, 0x6d], [0x70, 0x71, 0x73],
  [0x8a, 0x87, 0x79], [0xa5, 0x9c, 0x74], [0xc3, 0xb3, 0x69], [0xe1, 0xcc, 0x55], [0xfe, 0xe8, 0x38],
];

/** [r, g, b] 0–255 for t in 0..1: light yellow (0) to dark blue (1). */
export function heatRgb(t) {
  const u = 1 - Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0));
  const x = u * (CIVIDIS.length - 1);
  const i = Math.min(CIVIDIS.length - 2, Math.floor(x));
  const f = x - i;
  return CIVIDIS[i].map((c, j) => Math.round(c + (CIVIDIS[i + 1][j] - c) * f));
}

export function rgbCss([r, g, b]) {
  return `rgb(${r}, ${g}, ${b})`;
}

/** Black or white text, whichever reads better on the given background. */
export function inkFor([r, g, b]) {
  const lin = (c) => {
    const s = c / 255;
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  const lum = 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  // the ink with the higher WCAG contrast ratio: black and white are equal at a luminance of
  // 0.179, where each gives 4.58:1, so any cell reads at AA (4.5:1) or better
  return lum > 0.179 ? "#000" : "#fff";
}

/** Diverging blue – white – orange for a change d in −1..1 (Okabe–Ito ends). */
export function deltaRgb(d) {
  const t = Math.min(1, Math.abs(Number(d) || 0));
  const end = d < 0 ? [0x00, 0x72, 0xb2] : [0xd5, 0x5e, 0x00];
  return end.map((c) => Math.round(255 + (c - 255) * t));
}

/**
 * Where each value of a row sits for drawing: 0..1. "weight" uses the value itself;
 * "relative" spreads the row's visible values between its smallest and largest.
 * Hidden entries (null) map to null.
 */
export function rowLevels(row, mode) {
  if (mode === "weight") return row.map((x) => (x === null ? null : Math.min(1, Math.max(0, x))));
  const seen = row.filter((x) => x !== null);
  const lo = Math.min(...seen);
  const hi = Math.max(...seen);
  return row.map((x) => (x === null ? null : hi > lo ? (x - lo) / (hi - lo) : 0.5));
}
