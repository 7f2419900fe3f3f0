// A model's layers stacked, each a row of its tokens, with the paths of one focused token down to
// the input tokens: the chapter `inside` (rollout, flow, a head switched off, the compare view).
// Row 0 (at the bottom) is the input; row L (at the top) is after the last layer. A token's ball
// is as large and as dark as the share of the focus passing through it; an edge's thickness is the
// share carried from a token of one layer to a token of the layer below (POST /api/rollout's
// focus_paths). One InstancedMesh holds the balls, one the edges. Words are written under the
// input row where there is room for them (else the ones the focus takes most from), the focus above.

import * as THREE from "three";
import { heatRgb } from "../format.js";
import { integer, t } from "../i18n.js";
import { Drawing } from "./extras.js";

const BALL = 0.07; // radius of a token no share passes through
const EDGE = 0.22; // thickness of an edge carrying the whole focus
/** A label's width per character, in pixels (the labels are 0.72–0.75rem): for the room check. */
const charPx = () => 0.6 * 0.75 * (parseFloat(getComputedStyle(document.documentElement).fontSize) || 16);

/** Where token k of row l stands, for a stack of n tokens and L layers starting at x0. */
export function spacing(n, layers) {
  const dx = Math.min(0.9, 13 / Math.max(1, n));
  const dy = Math.min(0.8, 11 / Math.max(1, layers));
  return { dx, dy };
}

export class LayerStack extends Drawing {
  /** @param stage a Stage (scene/stage.js); @param x0 where the stack's centre stands */
  constructor(stage, x0 = 0) {
    super(stage, "layer-stack");
    this.group.position.x = x0; // its labels stand in the group too (Drawing.label's inGroup)
    this.ballGeometry = new THREE.SphereGeometry(1, 14, 10);
    this.edgeGeometry = new THREE.BoxGeometry(1, 1, 1);
    this.material = new THREE.MeshStandardMaterial({ roughness: 0.55, metalness: 0 });
    this.edgeMaterial = new THREE.MeshStandardMaterial({ color: 0xd55e00, roughness: 0.7, transparent: true, opacity: 0.75 });
    this.size = { width: 0, height: 0 };
    this.span = null; // the whole drawing's extent (set by the caller when objects share the stage)
  }

  /** The words placed again for the view's new size (Drawing's resize hook). */
  redraw(last) {
    this.update(last);
  }

  /**
   * @param view { tokens, layers: L, through: (L + 1) × n shares or null, edges: [layer, a, b, share] or [],
   *               focus, title?, axis?: the rows' names, notes?: [{ at: token k, text, cls }] written under
   *               the input row (the compare view's biggest changes): drawn again with the rest on a resize }
   */
  update(view) {
    const { tokens, layers, through = null, edges = [], focus = null, title = null, axis = true, notes = [] } = view;
    this.begin(view);
    const n = tokens.length;
    const { dx, dy } = spacing(n, layers);
    const x = (k) => (k - (n - 1) / 2) * dx;
    const y = (l) => l * dy;
    this.size = { width: n * dx, height: layers * dy, dx, dy };
    const m = new THREE.Matrix4();
    const q = new THREE.Quaternion();
    const colour = new THREE.Color();
    const peak = through ? Math.max(1e-9, ...through.slice(0, layers).flat()) : 1;
    const balls = new THREE.InstancedMesh(this.ballGeometry, this.material, (layers + 1) * n);
    let i = 0;
    for (let l = 0; l <= layers; l++) {
      for (let k = 0; k < n; k++) {
        const share = through ? through[l][k] : 0;
        const r = BALL + 0.22 * Math.sqrt(Math.min(1, share)) * Math.min(1, dx / 0.6);
        m.compose(new THREE.Vector3(x(k), y(l), 0), q.identity(), new THREE.Vector3(r, r, r));
        balls.setMatrixAt(i, m);
        const t = l === layers && k === focus ? 1 : through ? Math.min(1, share / peak) : 0.15;
        balls.setColorAt(i, colour.setRGB(...heatRgb(t).map((v) => v / 255), THREE.SRGBColorSpace));
        i += 1;
      }
    }
    balls.name = "tokens";
    this.keep(balls);
    if (edges.length) {
      const lines = new THREE.InstancedMesh(this.edgeGeometry, this.edgeMaterial, edges.length);
      const up = new THREE.Vector3(0, 1, 0);
      edges.forEach(([layer, a, b, share], e) => {
        const from = new THREE.Vector3(x(a), y(layer), 0);
        const to = new THREE.Vector3(x(b), y(layer - 1), 0);
        const along = to.clone().sub(from);
        const t = Math.max(0.008, EDGE * Math.sqrt(share) * Math.min(1, dx / 0.6));
        q.setFromUnitVectors(up, along.clone().normalize());
        m.compose(from.clone().add(to).multiplyScalar(0.5), q, new THREE.Vector3(t, along.length(), t * 0.4));
        lines.setMatrixAt(e, m);
      });
      lines.name = "paths";
      this.keep(lines);
    }
    this.labels(tokens, layers, through, focus, x, y, title, axis, notes);
    this.stage.requestRender();
  }

  labels(tokens, layers, through, focus, x, y, title, axis, notes) {
    const { dx } = this.size;
    const px = this.pixelsPerUnit();
    const per = charPx();
    const width = (k) => (tokens[k].trim().length || 1) * per + 14; // a word's label and the gap after it, in pixels
    const bottom = through ? through[0] : null;
    // every word where there is room for all; else the ones the focus takes most from, largest first,
    // each kept only where it stays clear of those already named
    const order = bottom ? [...bottom.keys()].sort((a, b) => bottom[b] - bottom[a]) : [...tokens.keys()];
    const named = [];
    for (const k of order) {
      const clear = named.every((j) => Math.abs(k - j) * dx * px >= (width(k) + width(j)) / 2);
      if (clear) named.push(k);
    }
    for (const k of named) {
      this.label(tokens[k].trim() || "␣", [x(k), y(0) - 0.32, 0], "stage-label ls-word", true);
    }
    if (focus !== null) {
      this.label(tokens[focus].trim() || "␣", [x(focus), y(layers) + 0.34, 0], "stage-label ls-focus", true);
    }
    if (axis) {
      const left = x(0) - 0.3 - 40 / px; // right of the label's centre: the row's first ball
      this.label(t("chapter.inside.table.input"), [left, y(0), 0], "stage-label ls-layer", true);
      // layers are numbered from 0, as the overview and the API number them: the top row is after layer L − 1
      this.label(t("chapter.inside.table.after", { layer: integer(layers - 1) }), [left, y(layers), 0], "stage-label ls-layer", true);
    }
    // the notes a label's height under the words, the title under them (under the words when there are none)
    for (const { at, text, cls } of notes) this.label(text, [x(at), y(0) - 0.32 - 24 / px, 0], cls, true);
    if (title) this.label(title, [0, y(0) - 0.32 - (notes.length ? 50 : 34) / px, 0], "stage-label ls-title", true);
  }

  dispose() {
    super.dispose([this.ballGeometry, this.edgeGeometry, this.material, this.edgeMaterial]);
  }
}
