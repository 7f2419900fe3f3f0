// Tables of numbers as 3D bars: one grid of columns per table, side by side, each column as
// tall (and as dark) as its value. Each grid has its own title and its own row and column
// names (two word orders need two sets of words). One InstancedMesh holds every bar.
// Used by the chapters `scaling` (one row of weights, with and without ÷√d_k) and `positions`
// (the n × n weights of two word orders). update() redraws from the server's numbers.

import * as THREE from "three";
import { heatRgb } from "../format.js";
import { Drawing } from "./extras.js";

const CELL = 0.5; // width and depth of a cell
const GAP = 1.2; // space between grids

export class BarGrid extends Drawing {
  /** @param stage a Stage (scene/stage.js) */
  constructor(stage) {
    super(stage, "bar-grid");
    this.geometry = new THREE.BoxGeometry(CELL * 0.84, 1, CELL * 0.84).translate(0, 0.5, 0); // grows up
    this.material = new THREE.MeshStandardMaterial({ roughness: 0.6, metalness: 0 });
    this.floorMaterial = new THREE.MeshBasicMaterial({ color: 0xdedbd0 });
    this.size = { width: 1, depth: 1 };
  }

  redraw(last) {
    this.update(...last); // names are placed again when the view changes size
  }

  /**
   * @param grids [{ title, values: rows × cols (numbers ≥ 0), rowNames?, colNames? }]
   * @param opts { height: scene height of the value `max`, max: the value drawn full height,
   *               names: label rows/columns (default true), perRow: grids per line (default all) }
   */
  update(grids, { height = 2, max = 1, names = true, perRow = grids.length } = {}) {
    this.begin([grids, { height, max, names, perRow }]);
    const count = grids.reduce((s, g) => s + g.values.length * (g.values[0]?.length ?? 0), 0);
    this.cells(count, "bars");
    const widths = grids.map((g) => (g.values[0]?.length ?? 0) * CELL);
    const depths = grids.map((g) => g.values.length * CELL);
    const cols = Math.max(1, Math.min(perRow, grids.length));
    const lines = Math.ceil(grids.length / cols);
    const cellW = Math.max(...widths);
    const cellD = Math.max(...depths);
    const width = cols * cellW + (cols - 1) * GAP;
    const depth = lines * cellD + (lines - 1) * GAP * 1.5;
    this.size = { width, depth };
    const m = new THREE.Matrix4();
    const colour = new THREE.Color();
    let i = 0;
    grids.forEach((grid, g) => {
      const gx = (g % cols) * (cellW + GAP) - width / 2;
      const gz = Math.floor(g / cols) * (cellD + GAP * 1.5) - depth / 2;
      const floor = this.keep(new THREE.Mesh(new THREE.PlaneGeometry(widths[g], depths[g]), this.floorMaterial));
      floor.rotation.x = -Math.PI / 2;
      floor.position.set(gx + widths[g] / 2, -0.005, gz + depths[g] / 2);
      grid.values.forEach((row, r) => {
        row.forEach((value, c) => {
          const t = Math.max(0, Math.min(1, value / max));
          m.makeScale(1, Math.max(0.004, t * height), 1);
          m.setPosition(gx + (c + 0.5) * CELL, 0, gz + (r + 0.5) * CELL);
          this.mesh.setMatrixAt(i, m);
          this.mesh.setColorAt(i, colour.setRGB(...heatRgb(t).map((v) => v / 255), THREE.SRGBColorSpace));
          i += 1;
        });
      });
      // the title lies on the floor in front of its grid, where no bar can hide it
      const titleAt = [gx + widths[g] / 2, 0, gz + depths[g] + 0.35];
      this.label(grid.title, titleAt, "stage-label ca-grid-title");
      if (names && grid.colNames && this.roomy(grid.colNames, [gx, gz], [1, 0])) {
        grid.colNames.forEach((name, c) => {
          this.label(name, [gx + (c + 0.5) * CELL, 0, gz - 0.3], "stage-label ca-grid-word");
        });
      }
      if (names && grid.rowNames && this.roomy(grid.rowNames, [gx, gz], [0, 1], 21)) {
        grid.rowNames.forEach((name, r) => {
          // centred on its point: a longer name stands further out, so that it ends before the grid
          const dx = 0.25 + 0.045 * name.length;
          this.label(name, [gx - dx, 0, gz + (r + 0.5) * CELL], "stage-label ca-grid-word");
        });
      }
    });
    this.mesh.instanceMatrix.needsUpdate = true;
    if (this.mesh.instanceColor) this.mesh.instanceColor.needsUpdate = true;
    this.stage.requestRender();
  }

  /** Whether neighbouring cells stand far enough apart on screen for `names` (else they are left out:
   *  the tables beside the view name every row and column). */
  roomy(names, [gx, gz], [dx, dz], need = null) {
    const px = this.pixels([gx, gz], [gx + dx * CELL, gz + dz * CELL]);
    const longest = Math.max(...names.map((n) => n.length));
    return px >= (need ?? longest * 7.5 + 12);
  }

  dispose() {
    super.dispose([this.geometry, this.material, this.floorMaterial]);
  }
}
