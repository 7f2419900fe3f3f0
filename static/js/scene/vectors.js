// Every token's q (front row), k and v (back rows) as arrows in the vertical plane of its row.

import * as THREE from "three";
import { KIND_COLOURS } from "../format.js";
import { ArrowSet } from "./arrowset.js";
import { planar } from "./geometry.js";

export class VectorArrows {
  constructor(capacity) {
    this.arrows = new ArrowSet(capacity * 3);
    this.group = this.arrows.group;
  }

  update({ data, lay, focus }) {
    const list = [];
    const drawn = data.drawn ?? data;
    const at = (x, z) => new THREE.Vector3(x, 0, z);
    for (let i = 0; i < lay.n; i++) {
      const qColour = i === focus ? KIND_COLOURS.q : 0xf0c870; // other queries paler
      list.push({ origin: at(lay.xs[i], lay.z.query), vec: planar(drawn.q[i], lay.scale), colour: qColour });
      list.push({ origin: at(lay.xs[i], lay.z.key), vec: planar(drawn.k[i], lay.scale), colour: KIND_COLOURS.k });
      list.push({ origin: at(lay.xs[i], lay.z.value), vec: planar(drawn.v[i], lay.valueScale), colour: KIND_COLOURS.v });
    }
    this.arrows.set(list);
  }

  tick(t) {
    this.arrows.tick(t);
  }

  dispose() {
    this.arrows.dispose();
  }
}
