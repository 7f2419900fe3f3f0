// The three vertical planes the vectors are drawn in (queries, keys, values), faintly
// filled with a thin x axis, and a caption at the left of each.

import * as THREE from "three";
import { CSS2DObject } from "three/addons/renderers/CSS2DRenderer.js";
import { KIND_COLOURS } from "../format.js";
import { t } from "../i18n.js";

const rows = (z) => [
  { z: z.query, colour: KIND_COLOURS.q, text: t("scene.plane.queries") },
  { z: z.key, colour: KIND_COLOURS.k, text: t("scene.plane.keys") },
  { z: z.value, colour: KIND_COLOURS.v, text: t("scene.plane.values"), right: true },
];

export class VectorPlanes {
  constructor() {
    this.group = new THREE.Group();
    this.width = -1;
    this.parts = [];
    // the materials last as long as the planes do: a disposed material frees its shader program,
    // and the next one compiles it again (~30 ms and a stalled frame in a software rasteriser)
    this.fills = new Map(); // colour → its plane's material
    this.line = new THREE.LineBasicMaterial({ color: 0x9a9a90 });
  }

  fill(colour) {
    if (!this.fills.has(colour)) {
      this.fills.set(
        colour,
        new THREE.MeshBasicMaterial({ color: colour, transparent: true, opacity: 0.07, depthWrite: false, side: THREE.DoubleSide }),
      );
    }
    return this.fills.get(colour);
  }

  update({ lay }) {
    const width = lay.width + 3.6;
    const shown = lay.captions !== false;
    for (const part of this.parts) if (part.isCSS2DObject) part.element.hidden = !shown;
    if (width === this.width && lay.z.query === this.z) return;
    this.z = lay.z.query;
    this.width = width;
    this.clear();
    for (const row of rows(lay.z)) {
      const plane = new THREE.Mesh(new THREE.PlaneGeometry(width, 3.6), this.fill(row.colour));
      plane.position.set(0.6, 0, row.z);
      const axis = new THREE.Line(
        new THREE.BufferGeometry().setFromPoints([
          new THREE.Vector3(-width / 2 + 0.6, 0, row.z),
          new THREE.Vector3(width / 2 + 0.6, 0, row.z),
        ]),
        this.line,
      );
      const node = document.createElement("div");
      node.className = "label label-plane";
      node.textContent = row.text;
      node.hidden = !shown;
      const caption = new CSS2DObject(node);
      // the values' caption at the right end: seen from above, the key and value planes are
      // only a few pixels apart on screen, and their captions would overlap at the same end
      caption.position.set(row.right ? width / 2 + 0.6 : -width / 2 + 0.6, 1.6, row.z);
      caption.center.set(row.right ? 1 : 0, 1);
      this.group.add(plane, axis, caption);
      this.parts.push(plane, axis, caption);
    }
  }

  tick() {}

  clear() {
    for (const part of this.parts) {
      part.removeFromParent();
      if (part.isCSS2DObject) part.element.remove();
      else part.geometry.dispose(); // the materials are kept (see the constructor)
    }
    this.parts = [];
  }

  dispose() {
    this.clear();
    for (const material of [...this.fills.values(), this.line]) material.dispose();
    this.group.removeFromParent();
  }
}
