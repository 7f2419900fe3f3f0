// Tables of numbers as 3D grids of columns, side by side: a head's n × n weights, the right and
// the mistaken result, the heads' z glued together (Concat), W_O and the output. Each column is as
// tall as its value's size; weights are shaded light yellow (0) to dark blue (1), signed numbers
// orange (positive) or blue (negative). One InstancedMesh holds every cell of every grid.
//
// Labels: a title in front of each grid, the column names along its back edge and the row names
// along the left edge of the first grid of each line, wherever they fit on screen (a long column
// name stands at a slant). A focused row is kept bright with a band under it, the other rows paler.
// update() redraws from the server's numbers; dispose() removes it.

import * as THREE from "three";
import { deltaRgb, heatRgb } from "../format.js";
import { Drawing } from "./extras.js";

const CELL = 0.5; // width of a cell
const GAP = 1.1; // space between grids
const HEIGHT = 1.6; // height of a value of `max`
const WHITE = new THREE.Color(1, 1, 1);
const BAND = new THREE.Color(0xe69f00); // under the focused row

export class HeadGrids extends Drawing {
  /** @param stage a Stage (scene/stage.js) */
  constructor(stage) {
    super(stage, "head-grids");
    this.geometry = new THREE.BoxGeometry(CELL * 0.86, 1, CELL * 0.86);
    this.geometry.translate(0, 0.5, 0); // grows up from the floor
    this.material = new THREE.MeshStandardMaterial({ roughness: 0.65, metalness: 0 });
    this.bandMaterial = new THREE.MeshBasicMaterial({ color: BAND });
    this.floorMaterial = new THREE.MeshBasicMaterial({ color: 0xe4e1d6 });
    this.framed = "";
  }

  redraw(last) {
    this.update(...last);
  }

  /**
   * @param grids [{ title, weights: rows × cols (null: hidden), rowNames?, colNames?, signed?, max?,
   *                 groups?: [{ title, span }] (column groups, drawn a little apart) }]
   * @param tokens the default row and column names (the words)
   * @param opts { focus: the row kept bright, perRow: grids per line, scale: height of 1, between: [text
   *               between grid g and g + 1 (e.g. "·", "=")], names: label rows and columns (default true) }
   * @param refitted the stage's camera was just fitted to this drawing (below: its names are placed again)
   */
  update(grids, tokens, { focus = null, perRow = 4, scale = 1, between = null, names = true } = {}, refitted = false) {
    this.begin([grids, tokens, { focus, perRow, scale, between, names }]);
    const shapes = grids.map((g) => [g.weights.length, g.weights[0]?.length ?? 0]);
    const count = shapes.reduce((s, [r, c]) => s + r * c, 0);
    this.cells(count, "head-cells");
    // a column group's first column stands half a cell further right: x of column c in grid g
    const colX = grids.map((g) => {
      const xs = [];
      let x = 0;
      let left = g.groups ? g.groups[0].span : Infinity;
      let k = 0;
      for (let c = 0; c < (g.weights[0]?.length ?? 0); c++) {
        if (c === left) {
          x += CELL * 0.6;
          k += 1;
          left += g.groups[k].span;
        }
        xs.push(x + (c + 0.5) * CELL);
      }
      return xs;
    });
    const widths = colX.map((xs) => (xs.length ? xs[xs.length - 1] + CELL / 2 : CELL));
    const depths = shapes.map(([r]) => r * CELL);
    const narrow = this.stage.container.clientWidth < 520; // a phone: at most two grids a line
    const cols = Math.max(1, Math.min(narrow ? Math.min(2, perRow) : perRow, grids.length));
    const lines = Math.ceil(grids.length / cols);
    const lineWidths = Array.from({ length: lines }, (_, l) => {
      const ws = widths.slice(l * cols, (l + 1) * cols);
      return ws.reduce((s, w) => s + w, 0) + (ws.length - 1) * GAP;
    });
    const lineDepths = Array.from({ length: lines }, (_, l) => Math.max(...depths.slice(l * cols, (l + 1) * cols)));
    const width = Math.max(...lineWidths);
    const depth = lineDepths.reduce((s, d) => s + d, 0) + (lines - 1) * GAP * 1.6;
    const origins = [];
    let z = -depth / 2;
    for (let l = 0; l < lines; l++) {
      let x = -lineWidths[l] / 2;
      for (let g = l * cols; g < Math.min(grids.length, (l + 1) * cols); g++) {
        origins.push([x, z]);
        x += widths[g] + GAP;
      }
      z += lineDepths[l] + GAP * 1.6;
    }
    // room on the left for the longest row name (the grids are centred: as much again on the right)
    const longestRow = Math.max(0, ...grids.map((g) => Math.max(0, ...(g.rowNames ?? tokens ?? []).map((s) => String(s).length))));
    const margin = 2.2 + 2 * 0.13 * longestRow;
    if (this.framed !== `${this.shown}:${width.toFixed(2)}:${depth.toFixed(2)}:${margin}`) {
      this.fit(Math.max(7, width + margin), Math.max(3.5, depth + 1.8)); // a small grid is not blown up
      this.framed = `${this.shown}:${width.toFixed(2)}:${depth.toFixed(2)}:${margin}`;
    }

    const m = new THREE.Matrix4();
    const colour = new THREE.Color();
    let i = 0;
    grids.forEach((grid, g) => {
      const [gx, gz] = origins[g];
      const max = grid.max ?? (grid.signed ? Math.max(1e-12, ...grid.weights.flat().filter((v) => v !== null).map(Math.abs)) : 1);
      grid.weights.forEach((row, r) => {
        row.forEach((w, c) => {
          const hidden = w === null || w === undefined;
          const t = hidden ? 0 : Math.min(1.5, Math.abs(w) / max);
          m.makeScale(1, hidden ? 0.02 : Math.max(0.02, t * HEIGHT * scale * (grid.signed ? 0.7 : 1)), 1);
          m.setPosition(gx + colX[g][c], 0, gz + (r + 0.5) * CELL);
          this.mesh.setMatrixAt(i, m);
          const [R, G, B] = hidden ? [200, 200, 200] : grid.signed ? deltaRgb(Math.sign(w) * Math.min(1, 0.25 + 0.75 * t)) : heatRgb(Math.min(1, t));
          colour.setRGB(R / 255, G / 255, B / 255, THREE.SRGBColorSpace);
          if (focus !== null && r !== focus && !grid.noFocus) colour.lerp(WHITE, 0.6); // the focused word's row stands out
          this.mesh.setColorAt(i, colour);
          i++;
        });
      });
      const floor = this.keep(new THREE.Mesh(new THREE.PlaneGeometry(widths[g], depths[g]), this.floorMaterial));
      floor.rotation.x = -Math.PI / 2;
      floor.position.set(gx + widths[g] / 2, -0.006, gz + depths[g] / 2);
      if (focus !== null && !grid.noFocus && focus < grid.weights.length) {
        const band = this.keep(new THREE.Mesh(new THREE.PlaneGeometry(widths[g] + 0.3, CELL * 0.96), this.bandMaterial));
        band.rotation.x = -Math.PI / 2;
        band.position.set(gx + widths[g] / 2, -0.003, gz + (focus + 0.5) * CELL);
        band.name = "focus-band";
      }
    });
    this.mesh.instanceMatrix.needsUpdate = true;
    if (this.mesh.instanceColor) this.mesh.instanceColor.needsUpdate = true;

    // labels: after the camera is placed, so that they are left out where they would not fit
    grids.forEach((grid, g) => {
      const [gx, gz] = origins[g];
      this.label(grid.title, [gx + widths[g] / 2, 0.05, gz + depths[g] + 0.45], "stage-label grid-title");
      if (between && between[g] && g + 1 < grids.length && Math.floor(g / cols) === Math.floor((g + 1) / cols)) {
        this.label(between[g], [gx + widths[g] + GAP / 2, 0.05, gz + depths[g] / 2], "stage-label grid-op");
      }
      if (!names) return;
      const narrow = this.stage.container.clientWidth < 520; // a phone: the groups' names would cover the columns'
      if (!narrow) grid.groups?.forEach((group, k) => {
        const first = grid.groups.slice(0, k).reduce((s, x) => s + x.span, 0);
        const mid = (colX[g][first] + colX[g][first + group.span - 1]) / 2;
        this.label(group.title, [gx + mid, 0.05, gz - 0.75], "stage-label grid-word grid-group");
      });
      const colNames = grid.colNames ?? tokens;
      if (colNames && colNames.length === colX[g].length) {
        const step = this.pixels([gx, gz], [gx + CELL, gz]);
        const longest = Math.max(...colNames.map((s) => String(s).length));
        const slant = step < longest * 8 + 14; // too long to stand upright side by side: at a slant
        const everyCol = Math.max(1, Math.ceil(18 / Math.max(1, step))); // slanted names at least 18 px apart
        if (step * everyCol >= 11) {
          colNames.forEach((name, c) => {
            if (c % everyCol !== 0) return;
            const obj = this.label(slant ? "" : String(name), [gx + colX[g][c], 0.05, gz - 0.25], `stage-label grid-word grid-col${slant ? " slant" : ""}`);
            if (slant) obj.element.append(Object.assign(document.createElement("span"), { textContent: String(name) })); // turned by CSS
            obj.name = "col-name";
          });
        }
      }
      const rowNames = grid.rowNames ?? tokens;
      const firstOfLine = g % cols === 0 || (grid.rowNames && !between);
      const rowStep = this.pixels([gx, gz], [gx, gz + CELL]);
      const everyRow = Math.max(1, Math.ceil(20 / Math.max(1, rowStep))); // a label is about 18 px high
      if (rowNames && firstOfLine && rowNames.length === grid.weights.length) {
        rowNames.forEach((name, r) => {
          const from = focus !== null && !grid.noFocus ? focus : 0; // counted from the focused row, which is always named
          if ((((r - from) % everyRow) + everyRow) % everyRow !== 0) return;
          const dx = 0.2 + 0.07 * String(name).length;
          const cls = `stage-label grid-word grid-row${r === focus && !grid.noFocus ? " focus" : ""}`;
          this.label(String(name), [gx - dx, 0.05, gz + (r + 0.5) * CELL], cls);
        });
      }
    });
    // a stage that fits its camera to the drawing (autoFit) does it now rather than in the next frame,
    // and the names are placed again for that camera: how many rows have room for a name depends on it
    // (with the camera before the fit, the view at 1280×720 named two of four rows)
    if (!refitted && this.stage.fitIfDue()) {
      this.update(...this.last, true);
      this.stage.reframe({ onlyIfCropped: true });
      return;
    }
    this.stage.requestRender();
  }

  /** Look from the front and well above (so that a row is not hidden behind the row in front of it),
   *  backed off until a w × d floor (and the columns on it) fits the view. */
  fit(w, d) {
    const cam = this.stage.camera;
    const c = this.stage.container;
    const aspect = c.clientWidth / Math.max(1, c.clientHeight);
    const t = Math.tan((cam.fov * Math.PI) / 360);
    const h = d * 0.85 + HEIGHT * 0.5; // the floor seen at a slant, plus the columns
    const dist = Math.max(h / 2 / t, w / 2 / (t * aspect)) * 1.1;
    this.stage.look([0, dist * 0.82, dist * 0.58], [0, HEIGHT * 0.15, 0]);
  }

  dispose() {
    super.dispose([this.geometry, this.material, this.bandMaterial, this.floorMaterial]);
  }
}
