// A long sentence's keys outside the 3D view's window of words (attention/longview.js): each block of
// them one marker on the key row, left and right of the window, as tall and dark as the focused
// query's share of its keys; and a link from the focused query to each block that holds one of its
// strongest keys (lod.js topKeys), named with that key and its weight. A marker's label is a button:
// it opens the block, the view moving its window there (onFocus, in the window's own numbering).
// Where the markers stand is layout.js's (lay.segmentXs); nothing is drawn for a short sentence.

import * as THREE from "three";
import { CSS2DObject } from "three/addons/renderers/CSS2DRenderer.js";
import { fixed3, heatRgb, KIND_COLOURS } from "../format.js";
import { integer, t } from "../i18n.js";
import { lerp, stretch, unitCylinder } from "./geometry.js";

const CAPACITY = 80; // markers (and links) at most: 32 blocks a side of a window, cut in two at its ends
const WIDTH = 0.6; // a marker's width, in scene units
const DEPTH = 1.1; // and its depth: seen from above, its colour is what shows
const TALLEST = 2.2; // a marker holding all of the query's attention
const LABELLED = 4; // the markers labelled besides those a link reaches: the first, the last and the largest
const BASE = 0xc9c9c0;
const _m = new THREE.Matrix4();
const _c = new THREE.Color();
const _from = new THREE.Vector3();
const _to = new THREE.Vector3();
const _vec = new THREE.Vector3();

/** "1–128": a block's tokens, counted from 1. */
const range = (s) => (s.to - s.from > 1 ? `${integer(s.from + 1)}–${integer(s.to)}` : integer(s.from + 1));

export class BlockMarkers {
  constructor(onFocus) {
    this.onFocus = onFocus;
    this.group = new THREE.Group();
    this.boxes = new THREE.InstancedMesh(new THREE.BoxGeometry(1, 1, 1).translate(0, 0.5, 0), new THREE.MeshStandardMaterial({ roughness: 0.8 }), CAPACITY);
    this.boxes.count = 0;
    this.boxes.setColorAt(0, _c.setHex(BASE));
    this.boxes.frustumCulled = false;
    this.links = new THREE.InstancedMesh(unitCylinder(10), new THREE.MeshStandardMaterial({ roughness: 0.7 }), CAPACITY);
    this.links.count = 0;
    this.links.setColorAt(0, _c.setHex(KIND_COLOURS.q));
    this.links.frustumCulled = false;
    this.group.add(this.boxes, this.links);
    this.labels = [];
    this.heights = [];
    this.radii = [];
    this.ends = [];
  }

  clearLabels() {
    for (const obj of this.labels) {
      obj.element.remove();
      obj.removeFromParent();
    }
    this.labels = [];
  }

  label(text, x, y, z, className, open = null) {
    const node = document.createElement(open === null ? "div" : "button");
    node.className = `label ${className}`;
    node.textContent = text;
    if (open !== null) {
      node.type = "button";
      node.tabIndex = -1; // the table's buttons are the keyboard route
      node.addEventListener("click", () => this.onFocus(open));
    }
    const obj = new CSS2DObject(node);
    obj.position.set(x, y, z);
    this.group.add(obj);
    this.labels.push(obj);
    return node;
  }

  update({ lay, blocks, focus }) {
    this.clearLabels();
    const segments = blocks?.segments ?? [];
    this.boxes.count = segments.length;
    this.links.count = 0;
    this.heights = [];
    this.ends = [];
    this.radii = [];
    this.colours = [];
    this.xs = lay.segmentXs ?? [];
    this.z = lay.z.key;
    if (!segments.length) return;
    const shares = segments.map((s) => s.share);
    const known = shares.every((x) => x !== null);
    segments.forEach((s, i) => {
      const share = known ? s.share : 0;
      this.heights.push(0.12 + TALLEST * Math.sqrt(share));
      const [r, g, b] = known ? heatRgb(share) : [0xc9, 0xc9, 0xc0];
      this.boxes.setColorAt(i, _c.setRGB(r / 255, g / 255, b / 255, THREE.SRGBColorSpace));
    });
    // a link to each block that holds some of the query's strongest keys (the strongest named)
    const reached = new Map(); // segment → its strongest top key
    for (const k of blocks.top) if (k.segment !== null && !reached.has(k.segment)) reached.set(k.segment, k);
    const qx = lay.xs[focus];
    for (const [i] of reached) {
      const sum = blocks.top.filter((o) => o.segment === i).reduce((a, o) => a + o.weight, 0);
      this.radii.push(0.025 + 0.2 * Math.sqrt(Math.min(1, sum)));
      const [r, g, b] = heatRgb(Math.min(1, sum));
      this.colours.push(new THREE.Color().setRGB(r / 255, g / 255, b / 255, THREE.SRGBColorSpace));
      this.ends.push([new THREE.Vector3(qx, 0, lay.z.query), new THREE.Vector3(lay.segmentXs[i], 0, lay.z.key)]);
    }
    this.links.count = this.ends.length;
    // labels: the ends, the largest shares and the blocks the links reach (each one a button)
    const order = segments.map((s, i) => [known ? s.share : 0, i]).sort((a, b) => b[0] - a[0]);
    const named = new Set([0, segments.length - 1, ...order.slice(0, LABELLED - 2).map(([, i]) => i), ...reached.keys()]);
    for (const i of named) {
      const s = segments[i];
      const top = reached.get(i);
      const open = (top?.key ?? Math.floor((s.from + s.to) / 2)) - blocks.from; // the window's numbering
      const text = top ? `${range(s)}: ${blocks.tokens[top.key]} ${fixed3(top.weight)}` : range(s);
      const node = this.label(text, lay.segmentXs[i], this.heights[i] + 0.3, lay.z.key, top ? "label-value label-block-top" : "label-key label-block", open);
      node.dataset.testid = `block-${s.from}`;
      node.setAttribute("aria-label", t("scene.block.open", { range: range(s), share: known ? fixed3(s.share) : "" }));
      if (top) node.title = t("scene.block.top", { token: blocks.tokens[top.key], i: integer(top.key + 1), weight: fixed3(top.weight) });
    }
    this.tick(1);
  }

  tick(step) {
    for (let i = 0; i < this.boxes.count; i++) {
      const h = this.heights[i] ?? 0;
      _m.makeScale(WIDTH, Math.max(0.001, lerp(0.001, h, step)), DEPTH);
      _m.setPosition(this.xs?.[i] ?? 0, 0, this.z ?? 0);
      this.boxes.setMatrixAt(i, _m);
    }
    for (let i = 0; i < this.links.count; i++) {
      const [a, b] = this.ends[i];
      _from.copy(a);
      _to.copy(b);
      _vec.subVectors(_to, _from);
      this.links.setMatrixAt(i, stretch(_m, _from, _vec, _vec.length(), this.radii[i]));
      this.links.setColorAt(i, this.colours[i]);
    }
    this.boxes.instanceMatrix.needsUpdate = true;
    this.links.instanceMatrix.needsUpdate = true;
    if (this.boxes.instanceColor) this.boxes.instanceColor.needsUpdate = true;
    if (this.links.instanceColor) this.links.instanceColor.needsUpdate = true;
  }

  dispose() {
    this.clearLabels();
    this.group.removeFromParent();
    for (const mesh of [this.boxes, this.links]) {
      mesh.geometry.dispose();
      mesh.material.dispose();
      mesh.dispose();
    }
  }
}
