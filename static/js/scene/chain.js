// The RNN's chain of hidden states above attention's direct links (chapter `rnn`), one column per
// word so that the two rows line up.
//
// Top: the chain h_0 → h_1 → … → h_n, one arrow per step: the path the network must walk, one word
// after the other. Above each state stand its numbers as small bars (orange positive, blue
// negative, tanh keeps them within ±1), so the memory can be seen changing word by word. In the
// step "fade" each state's sphere is as large and as dark as how much the first word still counts
// in it (‖∂h_t/∂x_1‖₂, relative to the largest).
// Bottom: the same words in a row, the last word linked to every word at once, each link as thick
// as its attention weight. update() redraws from the server's answer.

import * as THREE from "three";
import { deltaRgb, heatRgb, KIND_COLOURS } from "../format.js";
import { ArrowSet } from "./arrowset.js";
import { LabelSpots } from "./labelspots.js";
import { redrawOnResize, sizeOf } from "./resize.js";
import { t } from "../i18n.js";

const CHAIN_Y = 1.3; // height of the chain's line
const ROW_Y = -1.0; // height of attention's row of words
const BAR = 0.75; // height of a hidden-state number of 1

export class RnnChain {
  /** @param stage a Stage (scene/stage.js) */
  constructor(stage) {
    this.stage = stage;
    this.group = new THREE.Group();
    this.group.name = "rnn-chain";
    stage.root.add(this.group);
    this.arrows = new ArrowSet(65, { shaft: 0.025, head: 0.08, headLength: 0.16 });
    this.group.add(this.arrows.group);
    this.sphere = new THREE.SphereGeometry(1, 20, 14);
    this.box = new THREE.BoxGeometry(1, 1, 1).translate(0, 0.5, 0); // grows up (or, scaled by −1, down)
    this.material = new THREE.MeshStandardMaterial({ roughness: 0.4 });
    this.linkMaterial = new THREE.MeshStandardMaterial({ color: KIND_COLOURS.z, roughness: 0.5 });
    this.items = []; // meshes and labels of the last update
    this.last = null; // the last update's arguments, to lay out again when the view changes size
    this.fitted = ""; // the view's size and word count the camera was placed for
    this.size = "";
    this.resizer = redrawOnResize(this, stage);
  }

  clearItems() {
    for (const o of this.items) {
      o.removeFromParent();
      if (o.geometry && o.geometry !== this.sphere && o.geometry !== this.box) o.geometry.dispose();
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

  aspect() {
    const c = this.stage.container;
    return c.clientWidth / Math.max(1, c.clientHeight);
  }

  /** The row's width in scene units for n words. */
  static width(n) {
    return Math.max(3.2, Math.min(1.15 * (n - 1), 14));
  }

  /** Stand in front, a little above, backed off until the row (and the titles) fit the view. */
  frame(n) {
    const t = Math.tan((this.stage.camera.fov * Math.PI) / 360);
    const halfW = RnnChain.width(n) / 2 + 1.9; // h0 and its label "h0 = 0" stand a step left of the first word
    const halfH = 3.1;
    const d = Math.max(halfH / t, halfW / (t * this.aspect())) * 1.08;
    this.stage.look([0, 0.25 * d * 0.3, d], [0, 0.2, 0]);
  }

  /**
   * @param answer POST /api/rnn's answer
   * @param show { influence: size the states by ‖∂h_t/∂x_1‖₂, links: draw attention strongly }
   */
  update(answer, { influence = false, links = false } = {}) {
    this.last = [answer, { influence, links }];
    this.size = sizeOf(this.stage.container);
    const { h, words, weights } = answer;
    const n = words.length;
    if (this.fitted !== `${this.size}:${n}`) {
      this.frame(n);
      this.fitted = `${this.size}:${n}`;
    }
    this.clearItems();
    const width = RnnChain.width(n);
    const step = n > 1 ? width / (n - 1) : 0;
    const xs = words.map((_, j) => -width / 2 + j * step);
    const x0 = xs[0] - Math.max(0.6, step); // h_0, before the first word
    const top = Math.max(...answer.influence);
    const colour = new THREE.Color();
    const spots = new LabelSpots(this.stage);
    // which words are named: all of a short sentence, else every k-th and the last (labels need room)
    const px = this.pixelsPerUnit();
    const longest = Math.max(...words.map((w) => w.length));
    const every = Math.max(1, Math.ceil(((longest * 7.5 + 14) / Math.max(1, step * px)) * 0.55));
    const named = new Set(words.map((_, j) => j).filter((j) => j % every === 0 || j === n - 1));

    // the chain: h_0 → h_1 → … → h_n
    const arrows = [];
    let prev = new THREE.Vector3(x0, CHAIN_Y, 0);
    const origin = this.add(new THREE.Mesh(this.sphere, new THREE.MeshBasicMaterial({ color: 0x8a877c })));
    origin.scale.setScalar(0.06);
    origin.position.copy(prev);
    this.label("h0 = 0", [x0, CHAIN_Y - 0.42, 0], "stage-label ca-grid-word");
    const gap = 0.14; // arrows stop short of the spheres
    xs.forEach((x) => {
      const p = new THREE.Vector3(x, CHAIN_Y, 0);
      const dir = p.clone().sub(prev);
      const len = dir.length();
      if (len > 2 * gap) arrows.push({ origin: prev.clone().addScaledVector(dir, gap / len), vec: dir.multiplyScalar((len - 2 * gap) / len), colour: 0x5c5a52 });
      prev = p;
    });
    this.arrows.set(arrows);
    this.arrows.tick(1); // no transition: the chain is drawn where it ends
    const barW = Math.min(0.16, (step * 0.8) / Math.max(1, h[0].length));
    h.forEach((row, t) => {
      const rel = answer.influence[t] / top;
      const mesh = this.add(new THREE.Mesh(this.sphere, this.material.clone()));
      mesh.position.set(xs[t], CHAIN_Y, 0);
      mesh.scale.setScalar(influence ? 0.05 + 0.17 * Math.sqrt(rel) : Math.min(0.11, step * 0.2));
      const rgb = influence ? heatRgb(rel) : [0xe6, 0x9f, 0x00];
      mesh.material.color.copy(colour.setRGB(...rgb.map((v) => v / 255), THREE.SRGBColorSpace));
      // the state's numbers as bars above it
      row.forEach((v, i) => {
        const bar = this.add(new THREE.Mesh(this.box, this.material.clone()));
        const dx = (i - (row.length - 1) / 2) * barW * 1.15;
        const tall = Math.max(0.01, Math.abs(v) * BAR * 0.5);
        bar.position.set(xs[t] + dx, CHAIN_Y + 0.55 - (v < 0 ? tall : 0), 0); // a negative number hangs down
        bar.scale.set(barW, tall, barW);
        bar.material.color.copy(colour.setRGB(...deltaRgb(Math.sign(v) * Math.max(0.35, Math.abs(v))).map((c) => c / 255), THREE.SRGBColorSpace));
      });
      if (named.has(t)) {
        const text = `h${t + 1}`;
        const at = [xs[t], CHAIN_Y - 0.42, 0];
        spots.reserve(at, text, 7.5);
        this.label(text, at, "stage-label ca-grid-word");
      }
    });
    const title = t("scene.chain.rnn", { n });
    const titleAt = [0, CHAIN_Y + 1.45, 0];
    this.label(title, titleAt, "stage-label ca-grid-title");
    spots.reserve(titleAt, title);
    const attTitle = t("scene.chain.attention");
    // between the rows, clear of the states' names (a long sentence is drawn smaller)
    const attAt = spots.place(new THREE.Vector3(0, ROW_Y + 0.95, 0), attTitle, 8.5, [[0, 0], [0, -1.5], [0, 1.5], [0, -2.5]]);
    this.label(attTitle, attAt, "stage-label ca-grid-title");

    // attention: the last word links to every word in one step (the links dip below the row)
    const last = weights[n - 1];
    const wmax = Math.max(...last);
    words.forEach((w, j) => {
      const dot = this.add(new THREE.Mesh(this.sphere, this.material.clone()));
      dot.material.color.setHex(j === n - 1 ? KIND_COLOURS.q : KIND_COLOURS.k);
      dot.scale.setScalar(Math.min(0.09, step * 0.2 + 0.03));
      dot.position.set(xs[j], ROW_Y, 0);
      if (named.has(j)) {
        const at = spots.place(new THREE.Vector3(xs[j], ROW_Y, 0), w, 8.5, [[0, 0.9], [0, 1.9], [0, -1.1]]);
        this.label(w, at);
      }
      if (j === n - 1) return;
      const a = new THREE.Vector3(xs[n - 1], ROW_Y, 0);
      const b = new THREE.Vector3(xs[j], ROW_Y, 0);
      const mid = a.clone().add(b).multiplyScalar(0.5);
      const dip = 0.3 + 0.22 * Math.abs(xs[n - 1] - xs[j]);
      mid.y -= 2 * dip; // a quadratic curve reaches half way to its control point
      const curve = new THREE.QuadraticBezierCurve3(a, mid, b);
      const radius = 0.01 + (links ? 0.06 : 0.03) * (last[j] / wmax);
      const tube = this.add(new THREE.Mesh(new THREE.TubeGeometry(curve, 24, radius, 8, false), this.linkMaterial));
      tube.name = `link-${j}`;
      if (links && (n <= 6 || j === 0)) {
        const text = last[j].toFixed(3);
        this.label(text, spots.place(new THREE.Vector3((a.x + b.x) / 2, ROW_Y - dip - 0.1, 0), text, 7.5), "stage-label ca-weight");
      }
    });

    this.stage.requestRender();
  }

  /** Screen pixels per scene unit along the row, at the row's depth. */
  pixelsPerUnit() {
    const { camera, container } = this.stage;
    camera.updateMatrixWorld();
    const a = new THREE.Vector3(0, ROW_Y, 0).project(camera);
    const b = new THREE.Vector3(1, ROW_Y, 0).project(camera);
    return (Math.abs(a.x - b.x) * container.clientWidth) / 2;
  }

  dispose() {
    this.resizer.disconnect();
    this.clearItems();
    this.arrows.dispose();
    this.group.removeFromParent();
    this.sphere.dispose();
    this.box.dispose();
    this.material.dispose();
    this.linkMaterial.dispose();
  }
}
