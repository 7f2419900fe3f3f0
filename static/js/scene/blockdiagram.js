// A transformer block as a diagram in 3D: one box per point the model computes, top to bottom in
// its own order, arrows from each to the next, and the residual skips drawn around the side.
// Each box is labelled with its name and the focused token's vector length and first numbers.
// Two columns side by side compare two orders (the model's own post-LN and a pre-LN what-if).
// update() redraws from the server's numbers; dispose() removes everything it added.

import * as THREE from "three";

const KIND_COLOURS = {
  input: 0x64748b,
  output: 0x059669,
  attention: 0x2563eb,
  ffn: 0x7c3aed,
  norm: 0x9ca3af,
  add: 0xe69f00,
};
const STEP_Y = 1.25; // vertical distance between boxes
const BOX = [2.6, 0.62, 0.5];
const COLUMN_GAP = 6.2;

/** What a point of the block is, by its name (BERT's and GPT-2's names, and the what-if's). */
export function kindOf(name) {
  if (name === "input") return "input";
  if (name === "output") return "output";
  if (name === "attention") return "attention";
  if (name === "ffn" || name === "mlp") return "ffn";
  if (name.startsWith("norm") || name.startsWith("ln_")) return "norm";
  return "add"; // residual, residual2
}

/** The residual skips of an order of names: [from, to] indices. An add (residual…, or a pre-LN
 * block's output) takes the stream from the last point before its sublayer: input, residual or norm1. */
export function skipsOf(order) {
  const preLN = order.includes("ln_2");
  const skips = [];
  order.forEach((name, i) => {
    if (!name.startsWith("residual") && !(preLN && name === "output")) return;
    let from = i - 1;
    while (from > 0 && !["input", "residual", "norm1"].includes(order[from])) from--;
    skips.push([from, i]);
  });
  return skips;
}

export class BlockDiagram {
  constructor(stage) {
    this.stage = stage;
    this.group = new THREE.Group();
    this.group.name = "block-diagram";
    stage.root.add(this.group);
    this.labels = [];
    this.boxes = [];
    this.key = "";
  }

  clearParts() {
    for (const l of this.labels) {
      l.element.remove();
      this.stage.root.remove(l);
    }
    this.labels = [];
    this.group.traverse((o) => {
      o.geometry?.dispose();
      if (o.material) for (const m of [].concat(o.material)) m.dispose();
    });
    this.group.clear();
    this.boxes = [];
  }

  arrow(a, b, colour, radius = 0.035) {
    const start = new THREE.Vector3(...a);
    const end = new THREE.Vector3(...b);
    const dir = end.clone().sub(start);
    const len = dir.length();
    const mat = new THREE.MeshStandardMaterial({ color: colour, roughness: 0.7 });
    const shaft = new THREE.Mesh(new THREE.CylinderGeometry(radius, radius, len, 8), mat);
    shaft.position.copy(start).addScaledVector(dir, 0.5);
    shaft.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0), dir.clone().normalize());
    this.group.add(shaft);
    return shaft;
  }

  head(at, dir, colour) {
    const cone = new THREE.Mesh(new THREE.ConeGeometry(0.12, 0.24, 12), new THREE.MeshStandardMaterial({ color: colour }));
    cone.position.set(...at);
    cone.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0), new THREE.Vector3(...dir).normalize());
    this.group.add(cone);
  }

  /**
   * @param columns [{ title, order: [names], labels: { name: "text" }, names: { name: "short name" } (a narrow view's) }]
   * @param current names to light up
   */
  update(columns, current = []) {
    const key = JSON.stringify(columns.map((c) => [c.title, c.order]));
    if (key !== this.key) {
      this.key = key;
      this.build(columns);
    }
    const lit = new Set(current);
    for (const b of this.boxes) {
      const on = lit.has(b.name);
      b.mesh.material.emissive.setHex(on ? 0x333333 : 0x000000);
      b.mesh.scale.setScalar(on ? 1.08 : 1);
      b.label.element.classList.toggle("current", on);
      // on a narrow view (a phone) only the names fit beside each other; the panel lists the numbers
      const compact = this.stage.container.clientWidth < 520;
      const column = columns[b.column];
      b.label.element.textContent = compact ? (column.names?.[b.name] ?? b.name) : (column.labels[b.name] ?? b.name);
    }
    this.stage.requestRender();
  }

  build(columns) {
    this.clearParts();
    const width = (columns.length - 1) * COLUMN_GAP;
    let tallest = 0;
    columns.forEach((col, c) => {
      const x = c * COLUMN_GAP - width / 2;
      const top = ((col.order.length - 1) * STEP_Y) / 2;
      tallest = Math.max(tallest, col.order.length);
      const y = (i) => top - i * STEP_Y;
      if (columns.length > 1) this.labels.push(this.stage.label(col.title, [x, top + 0.95, 0], "stage-label grid-title"));
      col.order.forEach((name, i) => {
        const kind = kindOf(name);
        const geo = kind === "add" ? new THREE.CylinderGeometry(0.32, 0.32, 0.3, 24) : new THREE.BoxGeometry(...BOX);
        const mesh = new THREE.Mesh(geo, new THREE.MeshStandardMaterial({ color: KIND_COLOURS[kind], roughness: 0.55 }));
        if (kind === "add") mesh.rotation.x = Math.PI / 2;
        mesh.position.set(x, y(i), 0);
        mesh.name = `block-${name}`;
        this.group.add(mesh);
        const label = this.stage.label(name, [x, y(i) - 0.02, BOX[2] / 2 + 0.05], "stage-label block-box");
        this.labels.push(label);
        this.boxes.push({ name, mesh, label, column: c });
        if (i > 0) {
          const from = [x, y(i - 1) - BOX[1] / 2, 0];
          const to = [x, y(i) + BOX[1] / 2 + 0.22, 0];
          this.arrow(from, to, 0x334155);
          this.head([x, y(i) + BOX[1] / 2 + 0.12, 0], [0, -1, 0], 0x334155);
        }
      });
      // residual skips around the right-hand side
      for (const [a, b] of skipsOf(col.order)) {
        const side = x + BOX[0] / 2 + 0.45 + 0.25 * (b % 2);
        const ya = y(a);
        const yb = y(b);
        const colour = 0xe69f00;
        this.arrow([x + BOX[0] / 2, ya, 0], [side, ya, 0], colour, 0.03);
        this.arrow([side, ya, 0], [side, yb, 0], colour, 0.03);
        this.arrow([side, yb, 0], [x + 0.45, yb, 0], colour, 0.03);
        this.head([x + 0.4, yb, 0], [-1, 0, 0], colour);
      }
    });
    this.fit(width + BOX[0] + 1.6, tallest * STEP_Y + 1.2);
  }

  /** Back the camera off until a w × h box at the origin fits the view, whatever its aspect. */
  fit(w, h) {
    const cam = this.stage.camera;
    const t = Math.tan((cam.fov * Math.PI) / 360);
    const dist = Math.max(h / 2 / t, w / 2 / (t * cam.aspect)) * 1.05;
    this.stage.look([0.4, 0.3, dist], [0.3, 0, 0]);
  }

  dispose() {
    this.clearParts();
    this.stage.root.remove(this.group);
    this.stage.requestRender();
  }
}
