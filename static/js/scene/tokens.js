// The tokens: a sphere per query (front row), per key (back row) and a small marker per
// value (behind the keys), drawn as one InstancedMesh, with labels as CSS2D elements whose
// text is set through textContent. Clicking a query label focuses that query; hovering it
// reports the token (sentence mode lists its vectors' numbers).

import * as THREE from "three";
import { CSS2DObject } from "three/addons/renderers/CSS2DRenderer.js";
import { KIND_COLOURS } from "../format.js";
import { t } from "../i18n.js";

const BASE = 0xb8b8b0;
const _m = new THREE.Matrix4();
const _c = new THREE.Color();

export class TokenMarkers {
  constructor(capacity, onFocus, onHover = null) {
    this.capacity = capacity;
    this.onFocus = onFocus;
    this.onHover = onHover;
    this.group = new THREE.Group();
    this.mesh = new THREE.InstancedMesh(
      new THREE.SphereGeometry(1, 32, 16),
      new THREE.MeshStandardMaterial({ roughness: 0.5 }),
      capacity * 3,
    );
    this.mesh.count = 0;
    this.mesh.setColorAt(0, _c.setHex(BASE)); // its colours exist from the start: the shader compiled ahead (view.js) is the one drawn
    this.mesh.frustumCulled = false;
    this.group.add(this.mesh);
    this.labels = [];
  }

  label(text, className, index) {
    const node = document.createElement(index === null ? "div" : "button");
    node.className = `label ${className}`;
    node.textContent = text;
    if (index !== null) {
      node.type = "button";
      node.tabIndex = -1; // the table's row buttons are the keyboard route
      node.dataset.focus = String(index);
      node.addEventListener("click", () => this.onFocus(index));
      if (this.onHover) {
        node.addEventListener("pointerenter", () => this.onHover(index));
        node.addEventListener("pointerleave", () => this.onHover(null));
      }
    }
    const obj = new CSS2DObject(node);
    this.group.add(obj);
    this.labels.push(obj);
    return obj;
  }

  /** Each word's query and key labels, [q0, k0, q1, k1, …]: kept while the words are the same
   * (a hover, a new focus, the page redrawn for another panel's sake), made anew for other words.
   * A kept label stays in the page; a new one enters it at the view's next frame. */
  labelsFor(tokens) {
    const same = this.labels.length === 2 * tokens.length && tokens.every((word, i) => this.labels[2 * i].element.textContent === word);
    if (same) return this.labels;
    for (const obj of this.labels) {
      obj.element.remove();
      obj.removeFromParent();
    }
    this.labels = [];
    tokens.forEach((word, i) => {
      this.label(word, "label-query", i);
      this.label(word, "label-key", null);
    });
    return this.labels;
  }

  update({ data, lay, focus, hover }) {
    const { n, xs } = lay;
    const labels = this.labelsFor(data.tokens);
    this.mesh.count = n * 3;
    const col = hover ? hover.col : -1;
    for (let i = 0; i < n; i++) {
      const q = i === focus;
      _m.makeScale(q ? 0.42 : 0.32, q ? 0.42 : 0.32, q ? 0.42 : 0.32).setPosition(xs[i], 0, lay.z.query);
      this.mesh.setMatrixAt(i, _m);
      this.mesh.setColorAt(i, _c.setHex(q ? KIND_COLOURS.q : BASE));
      _m.makeScale(0.32, 0.32, 0.32).setPosition(xs[i], 0, lay.z.key);
      this.mesh.setMatrixAt(n + i, _m);
      this.mesh.setColorAt(n + i, _c.setHex(i === col ? KIND_COLOURS.hover : BASE));
      _m.makeScale(0.16, 0.16, 0.16).setPosition(xs[i], 0, lay.z.value);
      this.mesh.setMatrixAt(2 * n + i, _m);
      this.mesh.setColorAt(2 * n + i, _c.setHex(KIND_COLOURS.v));

      const ql = labels[2 * i];
      ql.element.className = q ? "label label-query focused" : "label label-query";
      // a crowded row staggers its labels in lay.lines lines (view.js decides how many)
      const drop = -1.15 * (i % (lay.lines ?? 1));
      ql.position.set(xs[i], -0.55, lay.z.query + 0.5);
      ql.center.set(0.5, drop);
      ql.element.setAttribute("aria-label", t("table.focusColumn", { i: i + 1, token: data.tokens[i] }));
      const kl = labels[2 * i + 1];
      kl.element.className = i === col ? "label label-key hot" : "label label-key";
      kl.position.set(xs[i], -0.45, lay.z.key);
      kl.center.set(0.5, drop);
    }
    this.mesh.instanceMatrix.needsUpdate = true;
    if (this.mesh.instanceColor) this.mesh.instanceColor.needsUpdate = true;
  }

  tick() {}

  dispose() {
    for (const obj of this.labels) obj.element.remove();
    this.group.removeFromParent();
    this.mesh.geometry.dispose();
    this.mesh.material.dispose();
    this.mesh.dispose();
  }
}
