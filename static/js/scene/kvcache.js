// The decoder's KV cache while it writes (chapter `writing`): one row per cached token, its key on
// the left and its value on the right, growing downwards as tokens are written; below them the
// query of the last cached token, whose line to each key is as thick and as dark as the weight it
// gives that key (the causal mask is the cache itself: there is nothing later to see). Token 0,
// where most heads park their weight (the attention sink), is labelled. update() redraws.

import * as THREE from "three";
import { heatRgb, KIND_COLOURS } from "../format.js";

const ROW = 0.32; // height of one cached token's row
const KX = -1.6; // the keys' column
const VX = 1.6; // the values' column
const WIDTH = 1.6; // a key's (and a value's) bar: its 64 numbers' size, as a width

export class KVCacheView {
  /** @param stage a Stage (scene/stage.js) */
  constructor(stage) {
    this.stage = stage;
    this.group = new THREE.Group();
    this.group.name = "kv-cache";
    stage.root.add(this.group);
    this.box = new THREE.BoxGeometry(1, ROW * 0.8, 0.3);
    this.sphere = new THREE.SphereGeometry(0.22, 20, 14);
    this.items = [];
  }

  clearItems() {
    for (const o of this.items) {
      o.removeFromParent();
      if (o.geometry && o.geometry !== this.box && o.geometry !== this.sphere) o.geometry.dispose();
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

  label(text, position, className = "stage-label") {
    const obj = this.stage.label(text, position, className);
    this.items.push(obj);
    return obj;
  }

  /** tokens: the cached tokens (kv_len of them); weights: the query's weight on each; chosen: the token it chose. */
  update(tokens, weights, chosen) {
    this.clearItems();
    const n = tokens.length;
    const top = ((n - 1) * ROW) / 2 + 0.4;
    const y = (j) => top - j * ROW;
    const keyMat = () => new THREE.MeshStandardMaterial({ color: KIND_COLOURS.k ?? "#d95f02", roughness: 0.5 });
    const valMat = () => new THREE.MeshStandardMaterial({ color: KIND_COLOURS.v ?? "#1b9e77", roughness: 0.5 });
    const queryY = y(n - 1) - 0.9;
    const points = [];
    const colours = [];
    for (let j = 0; j < n; j += 1) {
      const w = weights[j] ?? 0;
      const key = this.add(new THREE.Mesh(this.box, keyMat()));
      key.position.set(KX, y(j), 0);
      key.scale.set(WIDTH, 1, 1);
      const value = this.add(new THREE.Mesh(this.box, valMat()));
      value.position.set(VX, y(j), 0);
      value.scale.set(WIDTH * (0.25 + 0.75 * w), 1, 1); // what the value adds to the output: its weight
      const [r, g, b] = heatRgb(w);
      points.push(0, queryY, 0, KX + WIDTH / 2, y(j), 0);
      const c = [r / 255, g / 255, b / 255];
      colours.push(...c, ...c);
    }
    const lines = new THREE.BufferGeometry();
    lines.setAttribute("position", new THREE.Float32BufferAttribute(points, 3));
    lines.setAttribute("color", new THREE.Float32BufferAttribute(colours, 3));
    this.add(new THREE.LineSegments(lines, new THREE.LineBasicMaterial({ vertexColors: true })));
    // the strongest links again as solid rods, as thick as their weight
    const best = weights.map((w, j) => [w, j]).sort((a, b) => b[0] - a[0]).slice(0, 4);
    for (const [w, j] of best) {
      const from = new THREE.Vector3(0, queryY, 0);
      const to = new THREE.Vector3(KX + WIDTH / 2, y(j), 0);
      const len = from.distanceTo(to);
      const rod = this.add(new THREE.Mesh(new THREE.CylinderGeometry(0.02 + 0.08 * w, 0.02 + 0.08 * w, len, 10),
        new THREE.MeshStandardMaterial({ color: KIND_COLOURS.z ?? "#7570b3", roughness: 0.4 })));
      rod.position.copy(from).add(to).multiplyScalar(0.5);
      rod.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0), to.clone().sub(from).normalize());
    }
    const q = this.add(new THREE.Mesh(this.sphere, new THREE.MeshStandardMaterial({ color: KIND_COLOURS.q ?? "#e7298a" })));
    q.position.set(0, queryY, 0);
    this.label("keys", [KX, top + 0.45, 0]);
    this.label("values", [VX, top + 0.45, 0]);
    if (n > 0) this.label(`sink: ${tokens[0].trim() || "·"}`, [KX - WIDTH / 2 - 1.0, y(0), 0]);
    if (n > 1) this.label(tokens[n - 1].trim() || "·", [KX - WIDTH / 2 - 0.8, y(n - 1), 0]);
    this.label(`query → ${chosen.trim() || "·"}`, [0, queryY - 0.55, 0]);
    const span = Math.max(4, n * ROW + 2.5);
    this.stage.look([0, queryY / 2 + top / 2, span * 1.9 + 3], [0, (top + queryY) / 2, 0]);
    this.stage.requestRender();
  }

  dispose() {
    this.clearItems();
    this.box.dispose();
    this.sphere.dispose();
    this.group.removeFromParent();
  }
}
