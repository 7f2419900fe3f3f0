// Weight tables as 3D grids side by side: one n × n grid of columns per table (a head, or the
// right and the mistaken result), each column as tall and as dark as its weight. One
// InstancedMesh holds every cell of every grid; labels name each grid, and the first grid's rows
// and columns carry the words. update() redraws from the server's numbers; dispose() removes it.

import * as THREE from "three";
import { heatRgb } from "../format.js";

const CELL = 0.5; // width of a cell
const GAP = 1.1; // space between grids
const HEIGHT = 1.6; // height of a weight of 1
const WHITE = new THREE.Color(1, 1, 1);

export class HeadGrids {
  /** @param stage a Stage (scene/stage.js) */
  constructor(stage) {
    this.stage = stage;
    this.group = new THREE.Group();
    this.group.name = "head-grids";
    stage.root.add(this.group);
    this.geometry = new THREE.BoxGeometry(CELL * 0.86, 1, CELL * 0.86);
    this.geometry.translate(0, 0.5, 0); // grows up from the floor
    this.material = new THREE.MeshStandardMaterial({ roughness: 0.65, metalness: 0 });
    this.mesh = null;
    this.labels = [];
    this.key = "";
  }

  /**
   * @param grids [{ title, weights: n × n (null: hidden) }]
   * @param tokens the words of rows and columns
   * @param opts { focus: the row kept bright (the others paler), perRow: grids per row of the layout, scale: height of 1 }
   */
  update(grids, tokens, { focus = null, perRow = 4, scale = 1 } = {}) {
    const n = tokens.length;
    const count = grids.length * n * n;
    if (!this.mesh || this.mesh.count !== count) {
      if (this.mesh) {
        this.group.remove(this.mesh);
        this.mesh.dispose();
      }
      this.mesh = new THREE.InstancedMesh(this.geometry, this.material, count);
      this.mesh.name = "head-cells";
      this.group.add(this.mesh);
    }
    const size = n * CELL;
    const narrow = this.stage.container.clientWidth < 520; // a phone: two grids a row, so each stays readable
    const cols = Math.min(narrow ? Math.min(2, perRow) : perRow, grids.length);
    const rows = Math.ceil(grids.length / cols);
    const width = cols * size + (cols - 1) * GAP;
    const depth = rows * size + (rows - 1) * GAP * 1.4;
    const m = new THREE.Matrix4();
    const colour = new THREE.Color();
    let i = 0;
    const origins = grids.map((_, g) => {
      const gx = (g % cols) * (size + GAP) - width / 2;
      const gz = Math.floor(g / cols) * (size + GAP * 1.4) - depth / 2;
      return [gx, gz];
    });
    grids.forEach((grid, g) => {
      const [gx, gz] = origins[g];
      for (let r = 0; r < n; r++) {
        for (let c = 0; c < n; c++) {
          const w = grid.weights[r]?.[c];
          const hidden = w === null || w === undefined;
          const h = hidden ? 0.02 : Math.max(0.02, Math.min(1.5, Math.abs(w)) * HEIGHT * scale);
          m.makeScale(1, h, 1);
          m.setPosition(gx + (c + 0.5) * CELL, 0, gz + (r + 0.5) * CELL);
          this.mesh.setMatrixAt(i, m);
          const [R, G, B] = hidden ? [200, 200, 200] : heatRgb(Math.min(1, Math.abs(w)));
          colour.setRGB(R / 255, G / 255, B / 255, THREE.SRGBColorSpace);
          if (focus !== null && r !== focus) colour.lerp(WHITE, 0.5); // the focused word's row stands out
          this.mesh.setColorAt(i, colour);
          i++;
        }
      }
    });
    this.mesh.instanceMatrix.needsUpdate = true;
    if (this.mesh.instanceColor) this.mesh.instanceColor.needsUpdate = true;

    // labels: a title over every grid, the words along the first grid (only when they fit)
    const key = JSON.stringify([grids.map((g) => g.title), tokens, cols]);
    if (key !== this.key) {
      this.key = key;
      for (const l of this.labels) {
        l.element.remove();
        this.stage.root.remove(l);
      }
      this.labels = grids.map((grid, g) => {
        const [gx, gz] = origins[g];
        return this.stage.label(grid.title, [gx + size / 2, 0.05, gz + size + 0.45], "stage-label grid-title");
      });
      if (n <= 12) {
        const [gx, gz] = origins[0];
        tokens.forEach((t, r) => {
          this.labels.push(this.stage.label(t, [gx - 0.45, 0.05, gz + (r + 0.5) * CELL], "stage-label grid-word"));
        });
      }
      this.fit(width + 1.6, depth + 1.6);
    }
    this.stage.requestRender();
  }

  /** Look from the front and above, backed off until a w × d floor (and the columns on it) fits the view. */
  fit(w, d) {
    const cam = this.stage.camera;
    const t = Math.tan((cam.fov * Math.PI) / 360);
    const h = d * 0.75 + HEIGHT * 0.6; // the floor seen at a slant, plus the columns
    const dist = Math.max(h / 2 / t, w / 2 / (t * cam.aspect)) * 1.15;
    this.stage.look([0, dist * 0.62, dist * 0.8], [0, HEIGHT * 0.25, 0]);
  }

  dispose() {
    for (const l of this.labels) {
      l.element.remove();
      this.stage.root.remove(l);
    }
    this.labels = [];
    if (this.mesh) this.mesh.dispose();
    this.geometry.dispose();
    this.material.dispose();
    this.stage.root.remove(this.group);
    this.stage.requestRender();
  }
}
