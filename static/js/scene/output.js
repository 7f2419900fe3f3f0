// The output z of the shown query, drawn at the mix step as a vermillion arrow in its own
// plane in front of the query row (value space: the same scale as the v arrows), with its numbers.

import * as THREE from "three";
import { CSS2DObject } from "three/addons/renderers/CSS2DRenderer.js";
import { KIND_COLOURS, vector } from "../format.js";
import { ArrowSet } from "./arrowset.js";
import { planar } from "./geometry.js";
import { SPACING } from "./layout.js";
import { t } from "../i18n.js";

export class OutputArrow {
  constructor() {
    this.arrows = new ArrowSet(1, { shaft: 0.09, head: 0.24, headLength: 0.42 });
    this.group = new THREE.Group();
    this.group.add(this.arrows.group);
    this.marker = new THREE.Mesh(
      new THREE.SphereGeometry(0.2, 24, 12),
      new THREE.MeshStandardMaterial({ color: KIND_COLOURS.z }),
    );
    this.plane = new THREE.Mesh(
      new THREE.PlaneGeometry(SPACING * 1.6, 3.6),
      new THREE.MeshBasicMaterial({
        color: KIND_COLOURS.z,
        transparent: true,
        opacity: 0.09,
        depthWrite: false,
        side: THREE.DoubleSide,
      }),
    );
    // a dashed line from the query to its output
    this.tie = new THREE.Line(
      new THREE.BufferGeometry().setFromPoints([new THREE.Vector3(), new THREE.Vector3(0, 0, 1)]),
      new THREE.LineDashedMaterial({ color: KIND_COLOURS.z, dashSize: 0.2, gapSize: 0.15 }),
    );
    this.group.add(this.marker, this.plane, this.tie);
    const node = document.createElement("div");
    node.className = "label label-output";
    node.dataset.testid = "z-label";
    this.label = new CSS2DObject(node);
    this.label.center.set(0.5, 0);
    this.group.add(this.label);
  }

  update({ data, lay, step, focus }) {
    const show = Boolean(step.output);
    const x = lay.xs[focus];
    const origin = new THREE.Vector3(x, 0, lay.z.output);
    this.marker.position.copy(origin);
    this.plane.position.set(x + 0.5, 0, lay.z.output);
    this.tie.position.set(x, 0, lay.z.query + 0.45);
    this.tie.scale.set(1, 1, lay.z.output - lay.z.query - 0.65);
    this.tie.computeLineDistances();
    for (const obj of [this.marker, this.plane, this.tie, this.label]) obj.visible = show;
    this.label.element.hidden = !show;
    const vec = show ? planar((data.drawn ?? data).output[focus], lay.valueScale) : new THREE.Vector3();
    this.arrows.set([{ origin, vec, colour: KIND_COLOURS.z }]);
    this.label.element.textContent = t("scene.output", { who: data.tokens[focus], z: vector(data.output[focus], 4) });
    this.label.position.copy(origin).add(new THREE.Vector3(0, -0.35, 0));
    // under two staggered lines of words there is no room for it: the table and the
    // arithmetic panel give z then
    if (lay.stagger) this.label.element.hidden = true;
  }

  tick(t) {
    this.arrows.tick(t);
  }

  dispose() {
    this.label.element.remove();
    this.arrows.dispose();
    for (const obj of [this.marker, this.plane, this.tie]) {
      obj.geometry.dispose();
      obj.material.dispose();
    }
    this.group.removeFromParent();
  }
}
