// Places for 3D labels that do not cover each other on screen: a label tries a few spots around
// its point (above, below, right, left, further above, further below) and takes the first whose
// screen box overlaps none of the boxes placed before it. Used by scene/chain.js and xqkv.js.

import * as THREE from "three";

const SPOTS = [
  [0, 1], [0, -1.1], [2.5, 0], [-2.5, 0], [0, 2], [0, -2.1],
  [2.5, 1.2], [-2.5, 1.2], [2.5, -1.2], [-2.5, -1.2], [0, 3], [0, -3.1], [4, 0], [-4, 0],
]; // fmt: the offsets tried, in steps: above, below, right, left, then further out

export class LabelSpots {
  /** @param stage a Stage (its camera and container size give the screen boxes) */
  constructor(stage, step = 0.3) {
    this.stage = stage;
    this.step = step; // scene units per spot unit
    this.boxes = [];
    this.stage.camera.updateMatrixWorld();
  }

  /** Keep the box of a label placed elsewhere (at [x, y, z]) out of the way of later ones. */
  reserve(p, text, px = 8.5) {
    const { camera, container } = this.stage;
    const s = new THREE.Vector3(...p).project(camera);
    const size = [text.length * px + 12, 22];
    const [w, h] = [container.clientWidth, container.clientHeight];
    this.boxes.push([((s.x + 1) / 2) * w - size[0] / 2, ((1 - s.y) / 2) * h - size[1] / 2, size[0], size[1]]);
  }

  /** [x, y, z] near `p` (a Vector3) for a label of `text`, about `px` pixels per character;
   *  `spots` lists the offsets [dx, dy, dz?] to try, in steps, in order. */
  place(p, text, px = 8.5, spots = SPOTS) {
    const { camera, container } = this.stage;
    const w = container.clientWidth;
    const h = container.clientHeight;
    const size = [text.length * px + 12, 22];
    let best = null; // the first spot that covers nothing, else the one that covers least
    for (const [dx, dy, dz = 0] of spots) {
      const q = new THREE.Vector3(p.x + dx * this.step, p.y + dy * this.step, p.z + dz * this.step);
      const s = q.clone().project(camera);
      const box = [((s.x + 1) / 2) * w - size[0] / 2, ((1 - s.y) / 2) * h - size[1] / 2, size[0], size[1]];
      const covered = this.boxes.reduce((sum, b) => {
        const ox = Math.min(box[0] + box[2], b[0] + b[2]) - Math.max(box[0], b[0]);
        const oy = Math.min(box[1] + box[3], b[1] + b[3]) - Math.max(box[1], b[1]);
        return sum + (ox > 0 && oy > 0 ? ox * oy : 0);
      }, 0);
      if (!best || covered < best.covered) best = { q, box, covered };
      if (covered === 0) break;
    }
    this.boxes.push(best.box);
    return [best.q.x, best.q.y, best.q.z];
  }
}
