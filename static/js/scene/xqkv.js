// One token's x turning into its q, k and v (chapter `projections`). Each vector is an arrow from
// the origin drawn at its first three coordinates (of eight; the page says so); the vectors shown
// together share one scale, so that their lengths compare; three axes mark the coordinates 1, 2, 3.
// x stays as the starting point, a dashed line joins x's tip to the product's tip. The step "all"
// draws every token at once instead: three sets of axes side by side, Q = X·W_Q, K = X·W_K and
// V = X·W_V, each with one arrow per token (the chosen token's in full colour, the others paler).
// update() redraws from the server's answer.

import * as THREE from "three";
import { KIND_COLOURS } from "../format.js";
import { ArrowSet } from "./arrowset.js";
import { clearExtras } from "./extras.js";
import { LabelSpots } from "./labelspots.js";
import { redrawOnResize, sizeOf } from "./resize.js";
import { t } from "../i18n.js";

const X_COLOUR = 0x5c5a52;
const REACH = 2.6; // scene length of the longest drawn vector
const APART = 2.4 * REACH; // distance between the Q, K and V axes of the step "all"
const WHITE = new THREE.Color(1, 1, 1);

/** Whether the last of the screen boxes [x, y, w, h] overlaps any box before it. */
function crowded(boxes) {
  const b = boxes[boxes.length - 1];
  return boxes.slice(0, -1).some((o) => Math.min(b[0] + b[2], o[0] + o[2]) - Math.max(b[0], o[0]) > 0 && Math.min(b[1] + b[3], o[1] + o[3]) - Math.max(b[1], o[1]) > 0);
}

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
    this.many = new ArrowSet(3 * 64, { shaft: 0.035, head: 0.11, headLength: 0.22 }); // the step "all"
    this.group.add(this.many.group);
    this.sideAxes = [-APART, APART].map((dx) => {
      const copy = this.axes.clone();
      copy.position.x = dx;
      copy.visible = false;
      this.group.add(copy);
      return copy;
    });
    this.layoutShown = "";
    this.group.add(this.arrows.group);
    this.dashMaterial = new THREE.LineDashedMaterial({ color: 0x8a877c, dashSize: 0.12, gapSize: 0.08 });
    this.items = [];
    this.last = null; // the last update's arguments: labels are placed again when the view changes size
    this.size = "";
    this.resizer = redrawOnResize(this, stage);
    this.axisLabels = [[1, 0, 0], [0, 1, 0], [0, 0, 1]].map((d, i) =>
      stage.label(t("scene.axis", { i: i + 1 }), d.map((v) => v * (REACH + 0.25)), "stage-label ca-axis"),
    );
  }

  aspect() {
    const c = this.stage.container;
    return c.clientWidth / Math.max(1, c.clientHeight);
  }

  /** The origin of set g (0: Q, 1: K, 2: V) in the step "all": side by side, or stacked on a tall view. */
  origin(g) {
    return this.aspect() >= 1 ? new THREE.Vector3((g - 1) * APART, 0, 0) : new THREE.Vector3(0, (1 - g) * (2 * REACH + 1.4), 0);
  }

  /** Where the camera stands: one set of axes, or three side by side (the step "all"). */
  frame(all) {
    const aspect = this.aspect();
    if (all) {
      const t = Math.tan((this.stage.camera.fov * Math.PI) / 360); // half the view's height per unit of distance
      const wide = aspect >= 1;
      const halfW = wide ? APART + REACH + 1.2 : REACH + 1.6; // the sets of axes and their labels, from the middle
      const halfH = wide ? REACH + 1.6 : 2 * REACH + 1.4 + REACH + 1.2;
      const d = Math.max(halfW / (t * aspect), halfH / t) * 1.05;
      this.stage.look([0, d * 0.2, d], [0, 0.3, 0]);
    } else {
      const d = 11 / Math.min(1, aspect);
      this.stage.look([d * 0.45, d * 0.35, d * 0.82], [0, 0, 0]);
    }
  }

  clearItems() {
    this.items = clearExtras(this.items);
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
    const layout = `${kind === "all"}:${this.size}`;
    if (layout !== this.layoutShown) {
      this.frame(kind === "all");
      this.layoutShown = layout;
    }
    const all = kind === "all";
    this.sideAxes.forEach((side, i) => {
      side.visible = all;
      side.position.copy(this.origin(i === 0 ? 0 : 2));
    });
    this.axes.position.copy(all ? this.origin(1) : new THREE.Vector3());
    for (const l of this.axisLabels) l.visible = !all;
    this.arrows.group.visible = !all;
    this.many.group.visible = all;
    if (all) {
      this.drawAll(answer, token);
      return;
    }
    const rows = { x: answer.x[token], q: answer.q[token], k: answer.k[token], v: answer.v[token] };
    const len3 = (r) => Math.hypot(r[0], r[1], r[2]);
    const shown = kind === "x" ? ["x"] : kind === "all" ? ["x", "q", "k", "v"] : ["x", kind];
    const scale = REACH / Math.max(...shown.map((name) => len3(rows[name]))); // the shown vectors share one scale
    const vec = (r) => new THREE.Vector3(r[0] * scale, r[1] * scale, r[2] * scale);
    const colours = { x: X_COLOUR, q: KIND_COLOURS.q, k: KIND_COLOURS.k, v: KIND_COLOURS.v };
    this.arrows.set(shown.map((name) => ({ origin: new THREE.Vector3(), vec: vec(rows[name]), colour: colours[name] })));
    this.arrows.tick(1); // drawn where they end: no transition
    const spots = new LabelSpots(this.stage, 0.22);
    for (const [i, d] of [[1, 0, 0], [0, 1, 0], [0, 0, 1]].entries()) spots.reserve(d.map((v) => v * (REACH + 0.25)), t("scene.axis", { i: i + 1 }), 7);
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

  /** Every token's q, k and v: three sets of axes, one arrow per token in each, each set on its own scale. */
  drawAll(answer, token) {
    const n = answer.tokens.length;
    const len3 = (r) => Math.hypot(r[0], r[1], r[2]);
    const colour = new THREE.Color();
    const arrows = [];
    const spots = new LabelSpots(this.stage, 0.3);
    const names = [];
    const narrow = this.stage.container.clientWidth < 520; // a phone: the chosen token's names only
    ["q", "k", "v"].forEach((kind, g) => {
      const o = this.origin(g);
      const rows = answer[kind];
      const scale = REACH / Math.max(1e-9, ...rows.map(len3));
      const title = `${kind.toUpperCase()} = X · W_${kind.toUpperCase()}`;
      const titleAt = [o.x, o.y + REACH + 0.9, 0];
      this.items.push(this.stage.label(title, titleAt, "stage-label ca-grid-title"));
      spots.reserve(titleAt, title, 9);
      rows.forEach((r, i) => {
        const c = colour.setHex(KIND_COLOURS[kind]);
        if (i !== token) c.lerp(WHITE, 0.55); // the chosen token in full colour
        const vec = new THREE.Vector3(r[0] * scale, r[1] * scale, r[2] * scale);
        arrows.push({ origin: o.clone(), vec, colour: c.getHex() });
        const own = narrow ? kind : `${kind} ${answer.tokens[i]}`; // a phone: the letter alone (the title names the set)
        names.push([o.clone().add(vec), i === token ? own : answer.tokens[i], i === token]);
      });
    });
    this.many.set(arrows);
    this.many.tick(1);
    // the chosen token's labels first, so that they get the best places
    names.sort((a, b) => Number(b[2]) - Number(a[2]));
    for (const [tip, text, chosen] of names) {
      if (narrow && !chosen) continue;
      const cls = `stage-label ca-kind${chosen ? "" : " ca-pale"}`;
      const at = spots.place(tip, text, chosen ? 8.5 : 8);
      if (!chosen && crowded(spots.boxes)) {
        spots.boxes.pop(); // no free place for another token's name: its arrow stays unnamed
        continue;
      }
      this.items.push(this.stage.label(text, at, cls));
    }
    this.stage.requestRender();
    return n;
  }

  dispose() {
    this.resizer.disconnect();
    this.clearItems();
    this.arrows.dispose();
    this.many.dispose();
    for (const side of this.sideAxes) side.removeFromParent();
    for (const l of this.axisLabels) {
      l.removeFromParent();
      l.element?.remove();
    }
    this.group.removeFromParent();
    this.axes.geometry.dispose();
    this.axes.material.dispose();
    this.dashMaterial.dispose();
  }
}
