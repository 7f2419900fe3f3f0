// The table as a heatmap picture: an SVG document (cells in the page's cividis scale, 3 decimals,
// the words on both axes, a colour bar) and the same picture as a PNG. Built with DOM calls and
// textContent, so a word such as <script> is text in the file, never markup; a control character
// in a word is drawn as its control picture (printable()), so the file is always well-formed XML.
import { fixed3, heatRgb, inkFor, rgbCss, rowLevels } from "../format.js";
import { t as say } from "../i18n.js";
import { arrayTable, printable } from "./table-data.js";

const NS = "http://www.w3.org/2000/svg";
const CELL = 56;
const FONT = "system-ui, sans-serif"; // presentation attributes, not style="": the page's CSP forbids inline styles

function node(tag, attrs = {}, text = null) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== null) e.textContent = text;
  return e;
}

/** An <svg> element of `name` in `answer` (the first head of a 3-D array), titled `title`. */
export function heatmapSvg(answer, name, title) {
  const table = arrayTable(answer, name);
  const t = { ...table, rows: table.rows.map(printable), cols: table.cols.map(printable) };
  title = printable(title);
  const mode = name === "weights" ? "weight" : "relative";
  const labelW = Math.min(160, 14 + 8 * Math.max(...t.rows.map((r) => r.length), 4));
  const headH = Math.min(140, 20 + 7 * Math.max(...t.cols.map((c) => c.length), 4));
  const top = 34 + headH;
  const scaleText = say("heatmap.scale", { mode });
  const width = Math.ceil(Math.max(labelW + t.cols.length * CELL + 24, 16 + 8.6 * title.length, labelW + 230 + 7.2 * (14 + scaleText.length)));
  const height = top + t.rows.length * CELL + 70;
  const svg = node("svg", { xmlns: NS, width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  svg.append(node("title", {}, title));
  svg.append(node("rect", { width, height, fill: "#ffffff" }));
  svg.append(node("text", { x: 8, y: 22, "font-family": FONT, "font-size": 15, "font-weight": 600, fill: "#111" }, title));
  t.cols.forEach((c, j) => {
    const x = labelW + j * CELL + CELL / 2;
    const y = top - 8;
    svg.append(node("text", { x, y, transform: `rotate(-45 ${x} ${y})`, "font-family": FONT, "font-size": 13, fill: "#111" }, c));
  });
  t.matrix.forEach((row, i) => {
    const y = top + i * CELL;
    svg.append(
      node("text", { x: labelW - 8, y: y + CELL / 2 + 5, "text-anchor": "end", "font-family": FONT, "font-size": 13, fill: "#111" }, t.rows[i]),
    );
    const levels = rowLevels(row, mode);
    row.forEach((x, j) => {
      const cx = labelW + j * CELL;
      const rgb = x === null ? [0xe4, 0xe2, 0xdc] : heatRgb(levels[j]);
      svg.append(node("rect", { x: cx, y, width: CELL - 2, height: CELL - 2, fill: rgbCss(rgb) }));
      svg.append(
        node(
          "text",
          { x: cx + CELL / 2 - 1, y: y + CELL / 2 + 4, "text-anchor": "middle", "font-family": FONT, "font-size": 12, fill: inkFor(rgb) },
          fixed3(x),
        ),
      );
    });
  });
  // the colour bar: light = less, dark = more
  const barY = top + t.rows.length * CELL + 18;
  for (let s = 0; s < 20; s++) {
    svg.append(node("rect", { x: labelW + s * 10, y: barY, width: 10, height: 14, fill: rgbCss(heatRgb(s / 19)) }));
  }
  svg.append(node("text", { x: labelW + 210, y: barY + 12, "font-family": FONT, "font-size": 12, fill: "#111" }, say("heatmap.lessMore", { scale: scaleText })));
  svg.append(node("text", { x: 8, y: barY + 40, "font-family": FONT, "font-size": 12, fill: "#333" }, say("heatmap.axes")));
  return svg;
}

export function svgText(svg) {
  return '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(svg);
}

/** The SVG drawn onto a canvas at `scale`× (an <img> of a blob: URL; the page's CSP allows both). */
export async function heatmapCanvas(svg, scale = 2) {
  const w = Number(svg.getAttribute("width"));
  const h = Number(svg.getAttribute("height"));
  const url = URL.createObjectURL(new Blob([svgText(svg)], { type: "image/svg+xml" }));
  try {
    const img = new Image();
    img.src = url;
    await img.decode();
    const canvas = document.createElement("canvas");
    canvas.width = w * scale;
    canvas.height = h * scale;
    const ctx = canvas.getContext("2d");
    ctx.scale(scale, scale);
    ctx.drawImage(img, 0, 0, w, h);
    return canvas;
  } finally {
    URL.revokeObjectURL(url);
  }
}
