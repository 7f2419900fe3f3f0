// The links from the shown query to every key: one InstancedMesh of cylinders whose
// thickness and colour follow the current step's value (see steps.js `links`), with the
// value written beside each key. A hidden (masked) link shrinks away.

import * as THREE from "three";
import { CSS2DObject } from "three/addons/renderers/CSS2DRenderer.js";
import { fixed3, heatRgb, KIND_COLOURS, rowLevels } from "../format.js";
import { lerp, stretch, unitCylinder } from "./geometry.js";

const BACKGROUND = new THREE.Color(0xf4f3ee);
const _m = new THREE.Matrix4();
const _from = new THREE.Vector3();
const _to = new THREE.Vector3();
const _vec = new THREE.Vector3();

export class AttentionLinks {
  constructor(capacity) {
    this.capacity = capacity;
    this.group = new THREE.Group();
    this.mesh = new THREE.InstancedMesh(
      unitCylinder(12),
      new THREE.MeshStandardMaterial({ roughness: 0.7 }),
      capacity,
    );
    this.mesh.count = 0;
    this.mesh.setColorAt(0, new THREE.Color(1, 1, 1)); // its colours exist from the start: the shader compiled ahead (view.js) is the one drawn
    this.mesh.frustumCulled = false;
    this.mesh.instanceMatrix.setUsage(THREE.DynamicDrawUsage);
    this.group.add(this.mesh);
    this.labels = [];
    this.row = -1;
    this.radiusFrom = [];
    this.radiusTo = [];
    this.colourFrom = [];
    this.colourTo = [];
    this.ends = [];
  }

  update({ data, lay, step, focus, hover, only = null }) {
    const n = lay.n;
    const row = hover ? hover.row : focus;
    const values = data[step.stage][row];
    const levels = rowLevels(values, step.links);
    const sameShape = this.ends.length === n && this.row === row;
    this.row = row;
    const prevRadius = this.radiusTo.slice();
    const prevColour = this.colourTo.map((c) => c.clone());

    this.radiusTo = [];
    this.colourTo = [];
    this.ends = [];
    const linked = only && row === focus ? new Set(only) : null; // a long sentence: links to the strongest keys only
    for (let j = 0; j < n; j++) {
      const hidden = values[j] === null || (step.masked && data.masked[row][j] === null) || (linked !== null && !linked.has(j));
      const level = levels[j] ?? 0;
      const radius = hidden ? 0 : step.links === "weight" ? 0.025 + 0.2 * Math.sqrt(level) : 0.03 + 0.15 * level;
      const [r, g, b] = heatRgb(level);
      const colour = new THREE.Color().setRGB(r / 255, g / 255, b / 255, THREE.SRGBColorSpace);
      colour.lerp(BACKGROUND, (1 - level) * 0.55); // faint when small: the colour fades toward the background
      if (hover && hover.col === j && hover.row === row) colour.setHex(KIND_COLOURS.hover);
      this.radiusTo.push(radius);
      this.colourTo.push(colour);
      this.ends.push([
        new THREE.Vector3(lay.xs[row], 0, lay.z.query),
        new THREE.Vector3(lay.xs[j], 0, lay.z.key),
      ]);
    }
    this.radiusFrom = sameShape ? prevRadius : this.radiusTo.map(() => 0);
    this.colourFrom = sameShape ? prevColour : this.colourTo.map((c) => c.clone());
    this.mesh.count = n;

    // a crowded row names only its largest values (the table has every one)
    const LABELLED = 6;
    const labelled = linked ??
      (n > 14
        ? new Set(
            levels
              .map((x, j) => [x ?? -1, j])
              .sort((a, b) => b[0] - a[0])
              .slice(0, LABELLED)
              .map(([, j]) => j),
          )
        : null);
    // a key labelled before keeps its label (text, style and place set again): a label made anew
    // enters the page only at the view's next frame
    const before = new Map(this.labels.map((obj) => [obj.element.dataset.testid, obj]));
    this.labels = [];
    for (let j = 0; j < n; j++) {
      if (labelled && !labelled.has(j) && !(hover && hover.col === j && hover.row === row)) continue;
      const id = `link-label-${j}`;
      const obj = before.get(id) ?? this.valueLabel(id);
      before.delete(id);
      const node = obj.element;
      const hidden = step.masked && data.masked[row][j] === null;
      node.className = hidden ? "label label-value masked" : "label label-value";
      if (hover && hover.col === j && hover.row === row) node.classList.add("hot");
      node.textContent = fixed3(values[j]);
      // just under the key's name label (tokens.js), so the number reads as "key: value"
      obj.position.set(lay.xs[j], -0.45, lay.z.key);
      // below the key's name; a crowded row staggers names in two or three lines, and values in as many more
      const lines = lay.lines ?? 1;
      obj.center.set(0.5, -1.15 * (lines + (j % lines)));
      this.labels.push(obj);
    }
    for (const obj of before.values()) {
      obj.element.remove();
      obj.removeFromParent();
    }
    this.tick(0);
  }

  /** A key's value label (its text and place set by update). */
  valueLabel(id) {
    const node = document.createElement("div");
    node.dataset.testid = id;
    const obj = new CSS2DObject(node);
    this.group.add(obj);
    return obj;
  }

  tick(t) {
    const colour = new THREE.Color();
    for (let j = 0; j < this.ends.length; j++) {
      const [a, b] = this.ends[j];
      _from.copy(a);
      _to.copy(b);
      _vec.subVectors(_to, _from);
      const radius = lerp(this.radiusFrom[j], this.radiusTo[j], t);
      this.mesh.setMatrixAt(j, stretch(_m, _from, _vec, _vec.length(), radius));
      colour.copy(this.colourFrom[j]).lerp(this.colourTo[j], t);
      this.mesh.setColorAt(j, colour);
    }
    this.mesh.instanceMatrix.needsUpdate = true;
    if (this.mesh.instanceColor) this.mesh.instanceColor.needsUpdate = true;
  }

  dispose() {
    for (const obj of this.labels) obj.element.remove();
    this.group.removeFromParent();
    this.mesh.geometry.dispose();
    this.mesh.material.dispose();
    this.mesh.dispose();
  }
}
