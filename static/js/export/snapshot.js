// The 3-D view as a picture at 2× its on-screen size, with its word labels and a legend strip
// that says what the colours and the thicknesses mean.
import { KIND_COLOURS } from "../format.js";
import { canvasFamily, dir, t } from "../i18n.js";

// the legend's colours and their words (catalog keys: the page's legend says the same)
const LEGEND = [
  ["q", "page.legend.q"],
  ["k", "page.legend.k"],
  ["v", "page.legend.v"],
  ["z", "snapshot.legend.z"],
];
const hex = (c) => `#${c.toString(16).padStart(6, "0")}`;

/**
 * @param view   pageview.js currentView(): its renderScene(scale) (or its canvas) gives the pixels
 * @param scale  2: twice the on-screen size
 */
export function scenePicture(view, scale = 2) {
  const source = view.renderScene ? view.renderScene(scale) : view.canvas;
  const shown = view.canvas ?? source;
  const rect = shown.getBoundingClientRect();
  const w = Math.round(rect.width * scale);
  const h = Math.round(rect.height * scale);
  const out = document.createElement("canvas");
  const band = legendHeight(out.getContext("2d"), w, scale);
  out.width = w;
  out.height = h + band;
  const ctx = out.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.drawImage(source, 0, 0, w, h);
  drawLabels(ctx, shown, rect, scale);
  drawLegend(ctx, view, h, w, scale);
  return out;
}

/** The HTML labels over the canvas (CSS2D), drawn where they are on screen. */
function drawLabels(ctx, canvas, rect, scale) {
  const layer = canvas.parentElement?.querySelector(".label-layer");
  if (!layer) return;
  ctx.textBaseline = "middle";
  ctx.textAlign = "center";
  for (const label of layer.querySelectorAll("div")) {
    if (label.children.length || !label.textContent.trim()) continue;
    const r = label.getBoundingClientRect();
    const style = getComputedStyle(label);
    if (!r.width || style.visibility === "hidden" || style.display === "none" || Number(style.opacity) === 0) continue;
    const x = (r.left + r.width / 2 - rect.left) * scale;
    const y = (r.top + r.height / 2 - rect.top) * scale;
    if (x < 0 || y < 0 || x > rect.width * scale || y > rect.height * scale) continue;
    ctx.font = `${style.fontWeight} ${parseFloat(style.fontSize) * scale}px ${canvasFamily()}`;
    if (style.backgroundColor && style.backgroundColor !== "rgba(0, 0, 0, 0)") {
      ctx.fillStyle = style.backgroundColor;
      ctx.fillRect(r.left * scale - rect.left * scale, r.top * scale - rect.top * scale, r.width * scale, r.height * scale);
    }
    ctx.fillStyle = style.color || "#111";
    ctx.fillText(label.textContent.trim(), x, y);
  }
}

/** Where the legend's items go, wrapping to a new line when the picture is narrow: [[x, y, kind, text]]. */
function legendPlaces(ctx, width, s) {
  ctx.font = `${13 * s}px ${canvasFamily()}`;
  const places = [];
  let x = 12 * s;
  let y = 16 * s;
  for (const [kind, key] of LEGEND) {
    const text = t(key);
    const w = ctx.measureText(text).width + 38 * s;
    if (x > 12 * s && x + w > width) {
      x = 12 * s;
      y += 22 * s;
    }
    places.push([x, y, kind, text]);
    x += w;
  }
  return places;
}

function legendHeight(ctx, width, s) {
  const places = legendPlaces(ctx, width, s);
  return places[places.length - 1][1] + 40 * s;
}

function drawLegend(ctx, view, top, width, scale) {
  const s = scale;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  ctx.direction = dir(); // Arabic words drawn right to left, each item still placed from the left
  const places = legendPlaces(ctx, width, s);
  for (const [x, y, kind, text] of places) {
    ctx.fillStyle = hex(KIND_COLOURS[kind]);
    ctx.fillRect(x, top + y - 6 * s, 12 * s, 12 * s);
    ctx.fillStyle = "#111";
    ctx.fillText(text, x + 17 * s, top + y);
  }
  const links = t("snapshot.links", { stage: view.stage ?? "value" });
  ctx.fillText(links, 12 * s, top + places[places.length - 1][1] + 24 * s);
}
