// One token's x turning into its q, k and v (chapter `projections`). Each vector is an arrow from
// the origin drawn at its first three coordinates (of eight; the page says so); the vectors shown
// together share one scale, so that their lengths compare; three axes mark the coordinates 1, 2, 3.
// x stays as the starting point, a dashed line joins x's tip to the product's tip. update()
// redraws from the server's answer.

import * as THREE from "three";
import { KIND_COLOURS } from "../format.js";
import { ArrowSet } from "./arrowset.js";
import { LabelSpots } from "./labelspots.js";
import { redrawOnResize, sizeOf } from "./resize.js";

const X_COLOUR = 0x5c5a52;
const REACH = 2.6; // scene length of the longest drawn vector

export class TokenProjection {
  /** @param stage a Stage (scene/stage.js) */
  constructor(stage) {
    this.stage = stage;
    this.group = new THREE.Group();
    this.group.name = "x-to-qkv";
    stage.root.add(this.group);
    const axes = new THREE.BufferGeometry().setFromPoints(
      [[1, 0, 0], [0, 1, 0], [0, 0, 1]].flatMap((d) => [new THREE.Vector3(...d.map((v) => -v * REACH)), new THREE.Vector3(...d.map((v) => v * REACH))]),
    );
    this.axes = new THREE.LineSegments(axes, new THREE.LineBasicMaterial({ color: 0xc9c5b6 }));
    this.group.add(this.axes);
    this.arrows = new ArrowSet(4, { shaft: 0.045, head: 0.13, headLength: 0.26 });
    this.group.add(this.arrows.group);
    this.dashMaterial = new THREE.LineDashedMaterial({ color: 0x8a877c, dashSize: 0.12, gapSize: 0.08 });
    this.items = [];
    this.last = null; // the last update's arguments: labels are placed again when the view changes size
    this.size = "";
    this.resizer = redrawOnResize(this, stage);
    for (const [i, d] of [[1, 0, 0], [0, 1, 0], [0, 0, 1]].entries()) {
      stage.label(`coord ${i + 1}`, d.map((v) => v * (REACH + 0.25)), "stage-label ca-axis");
    }
  }

  clearItems() {
    for (const o of this.items) {
      o.removeFromParent();
      o.geometry?.dispose();
      if (o.element) o.element.remove();
    }
    this.items = [];
  }

  /**
   * @param answer GET /api/projections' answer
   * @param token the row drawn
   * @param kind "x" (x alone), "q", "k", "v" (x and that product), or "all" (x, q, k, v)
   */
  update(answer, token, kind) {
    this.last = [answer, token, kind];
    this.size = sizeOf(this.stage.container);
    this.clearItems();
    const rows = { x: answer.x[token], q: answer.q[token], k: answer.k[token], v: answer.v[token] };
    const len3 = (r) => Math.hypot(r[0], r[1], r[2]);
    const shown = kind === "x" ? ["x"] : kind === "all" ? ["x", "q", "k", "v"] : ["x", kind];
    const scale = REACH / Math.max(...shown.map((name) => len3(rows[name]))); // the shown vectors share one scale
    const vec = (r) => new THREE.Vector3(r[0] * scale, r[1] * scale, r[2] * scale);
    const colours = { x: X_COLOUR, q: KIND_COLOURS.q, k: KIND_COLOURS.k, v: KIND_COLOURS.v };
    this.arrows.set(shown.map((name) => ({ origin: new THREE.Vector3(), vec: vec(rows[name]), colour: colours[name] })));
    this.arrows.tick(1); // drawn where they end: no transition
    const spots = new LabelSpots(this.stage, 0.22);
    for (const [i, d] of [[1, 0, 0], [0, 1, 0], [0, 0, 1]].entries()) spots.reserve(d.map((v) => v * (REACH + 0.25)), `coord ${i + 1}`, 7);
    for (const name of shown) {
      const tip = vec(rows[name]);
      const text = name === "x" ? `x (${answer.tokens[token]})` : name;
      const obj = this.stage.label(text, spots.place(tip, text, 8), `stage-label ca-kind ca-kind-${name}`);
      this.items.push(obj);
      if (name !== "x") {
        const line = new THREE.Line(new THREE.BufferGeometry().setFromPoints([vec(rows.x), tip]), this.dashMaterial);
        line.computeLineDistances();
        this.group.add(line);
        this.items.push(line);
      }
    }
    this.stage.requestRender();
  }

  dispose() {
    this.resizer.disconnect();
    this.clearItems();
    this.arrows.dispose();
    this.group.removeFromParent();
    this.axes.geometry.dispose();
    this.axes.material.dispose();
    this.dashMaterial.dispose();
  }
}
