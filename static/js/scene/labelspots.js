// Places for 3D labels that do not cover each other on screen: a label tries a few spots around
// its point (above, below, right, left, further above, further below) and takes the first whose
// screen box overlaps none of the boxes placed before it. Used by scene/chain.js and xqkv.js.

import * as THREE from "three";

const SPOTS = [[0, 1], [0, -1.1], [2.5, 0], [-2.5, 0], [0, 2], [0, -2.1]];

export class LabelSpots {
  /** @param stage a Stage (its camera and container size give the screen boxes) */
  constructor(stage, step = 0.3) {
    this.stage = stage;
    this.step = step; // scene units per spot unit
    this.boxes = [];
    this.stage.camera.updateMatrixWorld();
  }

  /** [x, y, z] near `p` (a Vector3) for a label of `text`, about `px` pixels per character. */
  place(p, text, px = 7) {
    const { camera, container } = this.stage;
    const w = container.clientWidth;
    const h = container.clientHeight;
    const size = [text.length * px + 10, 20];
    let best = null;
    for (const [dx, dy] of SPOTS) {
      const q = new THREE.Vector3(p.x + dx * this.step, p.y + dy * this.step, p.z);
      const s = q.clone().project(camera);
      const box = [((s.x + 1) / 2) * w - size[0] / 2, ((1 - s.y) / 2) * h - size[1] / 2, size[0], size[1]];
      const hit = this.boxes.some((b) => box[0] < b[0] + b[2] && b[0] < box[0] + box[2] && box[1] < b[1] + b[3] && b[1] < box[1] + box[3]);
      if (!best) best = { q, box };
      if (!hit) {
        best = { q, box };
        break;
      }
    }
    this.boxes.push(best.box);
    return [best.q.x, best.q.y, best.q.z];
  }
}
