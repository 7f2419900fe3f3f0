// The pictures of chapter `today` (attention in today's models), one per step:
//   rope   one head's first rotary pair of q at every position, as an arrow in its own plane: the
//          pair before RoPE (grey) and after (orange), turned by position × 1 radian
//   gqa    9 query heads (spheres) over the 3 key/value heads (boxes) they read, one line each
//   sink   one bar per layer: the mean weight the queries give token 0
// update() redraws for the step.

import * as THREE from "three";
import { heatRgb, KIND_COLOURS } from "../format.js";

export class TodayView {
  /** @param stage a Stage (scene/stage.js) */
  constructor(stage) {
    this.stage = stage;
    this.group = new THREE.Group();
    this.group.name = "today";
    stage.root.add(this.group);
    this.items = [];
  }

  clearItems() {
    for (const o of this.items) {
      o.removeFromParent();
      o.geometry?.dispose();
      if (o.material) o.material.dispose();
      if (o.element) o.element.remove();
    }
    this.items = [];
  }

  add(o) {
    this.group.add(o);
    this.items.push(o);
    return o;
  }

  label(text, position) {
    const obj = this.stage.label(text, position);
    this.items.push(obj);
    return obj;
  }

  arrow(from, to, colour, radius = 0.05) {
    const a = new THREE.Vector3(...from);
    const b = new THREE.Vector3(...to);
    const len = a.distanceTo(b);
    if (len < 1e-6) return;
    const rod = this.add(new THREE.Mesh(new THREE.CylinderGeometry(radius, radius, len, 10), new THREE.MeshStandardMaterial({ color: colour })));
    rod.position.copy(a).add(b).multiplyScalar(0.5);
    rod.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0), b.clone().sub(a).normalize());
  }

  update(a, stepId) {
    this.clearItems();
    if (stepId === "rope") this.rope(a);
    else if (stepId === "gqa") this.gqa(a);
    else this.sink(a);
    this.stage.requestRender();
  }

  rope(a) {
    const n = a.q_pair.length;
    const scale = 1.2 / Math.max(1e-9, ...a.q_pair.map(([x, y]) => Math.hypot(x, y)));
    const gap = 0.9;
    for (let m = 0; m < n; m += 1) {
      const z = (m - (n - 1) / 2) * gap;
      const [bx, by] = a.q_pair_before[m];
      const [x, y] = a.q_pair[m];
      this.arrow([0, 0, z], [bx * scale, by * scale, z], 0x999999, 0.03);
      this.arrow([0, 0, z], [x * scale, y * scale, z], KIND_COLOURS.q, 0.05);
    }
    this.label(`position 0: ${a.tokens[0].trim()}`, [0, -1.6, (-(n - 1) / 2) * gap]);
    this.label(`position ${n - 1}`, [0, -1.6, ((n - 1) / 2) * gap]);
    this.stage.look([7, 4, 0], [0, 0, 0]);
  }

  gqa(a) {
    const kv = a.groups.length;
    a.groups.forEach((group, j) => {
      const x = (j - (kv - 1) / 2) * 3;
      const box = this.add(new THREE.Mesh(new THREE.BoxGeometry(1.2, 0.6, 0.6), new THREE.MeshStandardMaterial({ color: KIND_COLOURS.k })));
      box.position.set(x, -1.2, 0);
      this.label(`KV head ${j}`, [x, -1.9, 0]);
      group.forEach((h, i) => {
        const hx = x + (i - (group.length - 1) / 2) * 0.9;
        const on = h === a.head;
        const s = this.add(new THREE.Mesh(new THREE.SphereGeometry(on ? 0.3 : 0.2, 16, 12), new THREE.MeshStandardMaterial({ color: on ? KIND_COLOURS.z : KIND_COLOURS.q })));
        s.position.set(hx, 1.2, 0);
        this.arrow([hx, 1.0, 0], [x, -0.9, 0], 0x888888, 0.02);
      });
      this.label(`q heads ${group[0]}–${group[group.length - 1]}`, [x, 1.9, 0]);
    });
    this.stage.look([0, 1, 11], [0, 0, 0]);
  }

  sink(a) {
    const L = a.sink_by_layer.length;
    a.sink_by_layer.forEach((w, i) => {
      const [r, g, b] = heatRgb(w);
      const bar = this.add(new THREE.Mesh(new THREE.BoxGeometry(0.22, Math.max(0.02, 3 * w), 0.22), new THREE.MeshStandardMaterial({ color: new THREE.Color(r / 255, g / 255, b / 255) })));
      bar.position.set((i - (L - 1) / 2) * 0.3, (3 * w) / 2 - 1.5, 0);
    });
    this.label("layer 0", [(-(L - 1) / 2) * 0.3, -1.9, 0]);
    this.label(`layer ${L - 1}`, [((L - 1) / 2) * 0.3, -1.9, 0]);
    this.stage.look([0, 0.3, 10], [0, 0, 0]);
  }

  dispose() {
    this.clearItems();
    this.group.removeFromParent();
  }
}
