// The RNN's chain of hidden states beside attention's direct links (chapter `rnn`).
//
// Left: the hidden states h_1 … h_n drawn at their own three coordinates inside the cube
// [−1, 1]³ (tanh keeps them there), joined in order from h_0 = 0 by arrows: the path the
// network must walk, one word after the other. A sphere's size and colour can show how much
// the first word still counts in that state (‖∂h_t/∂x_1‖₂, relative to the largest).
// Right: the same words in a row, the last word linked to every word at once, each link as
// thick as its attention weight. update() redraws from the server's answer.

import * as THREE from "three";
import { heatRgb, KIND_COLOURS } from "../format.js";
import { ArrowSet } from "./arrowset.js";
import { LabelSpots } from "./labelspots.js";
import { redrawOnResize, sizeOf } from "./resize.js";

const CUBE = 1.5; // half the side of the drawn cube: h = ±1 sits on its faces
const ROW = 3.6; // width of the row of words
const FIT = 1 / (2 * Math.tan((35 / 2) * (Math.PI / 180))); // camera distance per unit of height (fov 35°)

/** Side by side on a wide view; the chain above the links on a narrow one (a phone). */
function layout(aspect) {
  if (aspect >= 1.3) return { cube: [-2.6, 0, 0], row: [2.4, -1.1, 0], width: 10.5, height: 5 };
  return { cube: [0, 1.7, 0], row: [0, -2.6, 0], width: 5.2, height: 8.6 };
}

export class RnnChain {
  /** @param stage a Stage (scene/stage.js) */
  constructor(stage) {
    this.stage = stage;
    this.group = new THREE.Group();
    this.group.name = "rnn-chain";
    stage.root.add(this.group);
    const box = new THREE.EdgesGeometry(new THREE.BoxGeometry(2 * CUBE, 2 * CUBE, 2 * CUBE));
    this.cube = new THREE.LineSegments(box, new THREE.LineBasicMaterial({ color: 0xb9b5a6 }));
    this.group.add(this.cube);
    this.arrows = new ArrowSet(64, { shaft: 0.03, head: 0.09, headLength: 0.18 });
    this.group.add(this.arrows.group);
    this.sphere = new THREE.SphereGeometry(1, 20, 14);
    this.material = new THREE.MeshStandardMaterial({ roughness: 0.4 });
    this.linkMaterial = new THREE.MeshStandardMaterial({ color: KIND_COLOURS.z, roughness: 0.5 });
    this.items = []; // meshes and labels of the last update
    this.last = null; // the last update's arguments, to lay out again when the view changes size
    this.fitted = ""; // the view's size the camera was placed for
    this.size = "";
    this.resizer = redrawOnResize(this, stage);
  }

  clearItems() {
    for (const o of this.items) {
      o.removeFromParent();
      if (o.geometry && o.geometry !== this.sphere) o.geometry.dispose();
      if (o.material && o.material !== this.linkMaterial) o.material.dispose();
      if (o.element) o.element.remove();
    }
    this.items = [];
  }

  add(o) {
    this.group.add(o);
    this.items.push(o);
    return o;
  }

  label(text, pos, cls = "stage-label ca-word") {
    const obj = this.stage.label(text, pos, cls);
    this.items.push(obj);
    return obj;
  }

  /**
   * @param answer POST /api/rnn's answer
   * @param show { influence: size the states by ‖∂h_t/∂x_1‖₂, links: draw attention strongly }
   */
  /** Where the camera should stand for this view's shape: [position, target]. */
  view() {
    const { width, height } = layout(this.aspect());
    const d = Math.max(height, width / this.aspect()) * FIT + 2.5;
    return [[0, 0.12 * d, d], [0, 0, 0]];
  }

  aspect() {
    const c = this.stage.container;
    return c.clientWidth / Math.max(1, c.clientHeight);
  }

  update(answer, { influence = false, links = false } = {}) {
    this.last = [answer, { influence, links }];
    this.size = sizeOf(this.stage.container);
    const shape = this.aspect() >= 1.3 ? "wide" : "narrow";
    if (this.fitted !== shape) {
      this.stage.look(...this.view()); // the camera follows the layout (side by side, or stacked)
      this.fitted = shape;
    }
    this.clearItems();
    const { h, words, weights } = answer;
    const n = words.length;
    const L = layout(this.aspect());
    const [cx, cy, cz] = L.cube;
    const [rx, ry] = L.row;
    this.cube.position.set(cx, cy, cz);
    const at = (row) => new THREE.Vector3(cx + row[0] * CUBE, cy + row[1] * CUBE, cz + row[2] * CUBE);
    const top = Math.max(...answer.influence);
    const colour = new THREE.Color();
    // the chain: h_0 = 0 → h_1 → … → h_n
    const arrows = [];
    let prev = at([0, 0, 0]);
    h.forEach((row) => {
      const p = at(row);
      arrows.push({ origin: prev.clone(), vec: p.clone().sub(prev), colour: 0x5c5a52 });
      prev = p;
    });
    this.arrows.set(arrows);
    this.arrows.tick(1); // no transition: the chain is drawn where it ends
    const origin = this.add(new THREE.Mesh(this.sphere, new THREE.MeshBasicMaterial({ color: 0x8a877c })));
    origin.scale.setScalar(0.05);
    origin.position.copy(at([0, 0, 0]));
    const every = n <= (this.aspect() >= 1.3 ? 8 : 5); // a phone names every state of short sentences only
    const named = new Set(every ? [...Array(n).keys()] : [0, n - 1]);
    const spots = new LabelSpots(this.stage); // a label that would cover another moves aside
    const title = `RNN: ${n} steps in order`;
    this.label(title, [cx, cy + CUBE + 0.5, 0], "stage-label ca-grid-title");
    spots.reserve([cx, cy + CUBE + 0.5, 0], title);
    const attTitle = "attention: 1 step";
    const attAt = [rx, ry + 0.35 + 0.3 * ROW + 0.45, 0];
    this.label(attTitle, attAt, "stage-label ca-grid-title");
    spots.reserve(attAt, attTitle);
    h.forEach((row, t) => {
      const rel = answer.influence[t] / top;
      const mesh = this.add(new THREE.Mesh(this.sphere, this.material.clone()));
      mesh.position.copy(at(row));
      mesh.scale.setScalar(influence ? 0.05 + 0.2 * Math.sqrt(rel) : 0.1);
      const rgb = influence ? heatRgb(rel) : [0xe6, 0x9f, 0x00];
      mesh.material.color.copy(colour.setRGB(...rgb.map((v) => v / 255), THREE.SRGBColorSpace));
      if (named.has(t)) {
        const text = `h${t + 1} ${words[t]}`;
        this.label(text, spots.place(mesh.position, text), "stage-label ca-word");
      }
    });

    // attention: the last word links to every word in one step
    const xs = words.map((_, j) => rx - ROW / 2 + (n === 1 ? 0 : (j * ROW) / (n - 1)));
    const last = weights[n - 1];
    const wmax = Math.max(...last);
    const showWords = named;
    words.forEach((w, j) => {
      const dot = this.add(new THREE.Mesh(this.sphere, this.material.clone()));
      dot.material.color.setHex(j === n - 1 ? KIND_COLOURS.q : KIND_COLOURS.k);
      dot.scale.setScalar(0.09);
      dot.position.set(xs[j], ry, 0);
      if (showWords.has(j)) {
        // under its dot; a word that would cover its neighbour's goes one line lower
        const at = spots.place(new THREE.Vector3(xs[j], ry, 0), w, 8.5, [[0, -1.1], [0, -2.2], [0, -3.3]]);
        this.label(w, at);
      }
      if (j === n - 1) return;
      const a = new THREE.Vector3(xs[n - 1], ry, 0);
      const b = new THREE.Vector3(xs[j], ry, 0);
      const mid = a.clone().add(b).multiplyScalar(0.5);
      const rise = 0.35 + 0.3 * Math.abs(xs[n - 1] - xs[j]);
      mid.y += rise;
      const curve = new THREE.QuadraticBezierCurve3(a, mid, b);
      const radius = 0.012 + (links ? 0.07 : 0.035) * (last[j] / wmax);
      const tube = this.add(new THREE.Mesh(new THREE.TubeGeometry(curve, 24, radius, 8, false), this.linkMaterial));
      tube.name = `link-${j}`;
      if (links && (n <= 5 || j === 0)) {
        const text = last[j].toFixed(3);
        this.label(text, spots.place(new THREE.Vector3(mid.x, ry + rise / 2 + 0.05, 0), text, 7.5), "stage-label ca-weight");
      }
    });

    this.stage.requestRender();
  }

  dispose() {
    this.resizer.disconnect();
    this.clearItems();
    this.arrows.dispose();
    this.group.removeFromParent();
    this.cube.geometry.dispose();
    this.cube.material.dispose();
    this.sphere.dispose();
    this.material.dispose();
    this.linkMaterial.dispose();
  }
}
