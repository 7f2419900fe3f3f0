// A plain 3-D stage for the chapters that draw something other than the attention view
// (the RNN's chain, a token's x turning into q, k and v, the transformer block): renderer,
// camera, orbit controls and a CSS2D label layer, rendered on demand. A chapter adds its
// objects to `stage.root` and calls `stage.requestRender()`; `stage.clear()` disposes them.

import * as THREE from "three";
import { OrbitControls } from "three/addons/controls/OrbitControls.js";
import { CSS2DObject } from "three/addons/renderers/CSS2DRenderer.js";
import { fitToContainer, litScene, makeLabelLayer, makeRenderer, renderLabelsSoon } from "./surface.js";
import { sizeOf } from "./resize.js";
import { t } from "../i18n.js";

export class Stage {
  /** @param container element the canvas and the label layer go into */
  constructor(container) {
    this.container = container;
    this.frameRequested = false;
    this.frames = 0;
    this.renderer = makeRenderer(container, { testid: "stage-canvas", ariaLabel: t("scene.stage.label") });
    const canvas = this.renderer.domElement;
    this.labels = makeLabelLayer(container);
    this.scene = litScene();
    this.root = new THREE.Group();
    this.scene.add(this.root);

    this.camera = new THREE.PerspectiveCamera(35, 1, 0.1, 300);
    this.camera.position.set(0, 4, 14);
    this.controls = new OrbitControls(this.camera, canvas);
    this.controls.addEventListener("change", () => this.requestRender());
    this.userMoved = false; // orbited or zoomed by the user: a resize keeps their camera
    this.needsFit = false;
    // a chapter that sets autoFit has its camera fitted to its drawing after each look() and on
    // each resize (the others keep the camera they place; clear() turns it off for the next chapter)
    this.autoFit = false;
    this.controls.addEventListener("start", () => {
      this.userMoved = true;
    });
    this.fitted = ""; // the container's size (sizeOf) the canvas was last fitted to
    this.sized = new Set(); // the drawings redone at a new size (onResize)
    this.resizeObserver = new ResizeObserver(() => this.resize());
    this.resizeObserver.observe(container);
    this.resize();
  }

  resize() {
    this.fitted = sizeOf(this.container);
    fitToContainer(this.container, this.renderer, this.labels, this.camera);
    for (const redraw of this.sized) redraw(this.fitted);
    // the drawing framed again for the new shape, keeping the direction; a camera the user
    // orbited or zoomed (or a chapter without autoFit) is only backed off when the new size crops it
    if (this.root.children.length) {
      if (this.autoFit && !this.userMoved) this.needsFit = true;
      else this.reframe({ onlyIfCropped: true });
    }
    this.requestRender();
  }

  /**
   * Fit the canvas again if its container changed size since: before each frame and each reframe.
   * The ResizeObserver alone is not enough: in a window that lost the focus to one it opened (the
   * projector's, when Present opens the teacher's window) Chromium may not call it at all, and the
   * canvas stayed stretched at its old shape with its labels placed for the new one.
   */
  syncSize() {
    if (sizeOf(this.container) !== this.fitted) this.resize();
  }

  /** `redraw(size)` after each fit to a new size (size as sizeOf); `disconnect()` on the result stops it. */
  onResize(redraw) {
    this.sized.add(redraw);
    return { disconnect: () => this.sized.delete(redraw) };
  }

  /** Every drawn point of the chapter's content: the corners of its meshes' box, and its labels. */
  content() {
    const box = new THREE.Box3();
    const labels = [];
    this.root.updateMatrixWorld(true);
    this.root.traverse((o) => {
      if (o.isCSS2DObject) labels.push(o);
      else if (o.geometry) box.expandByObject(o);
    });
    return { box, labels };
  }

  /**
   * Fit the camera to what the chapter drew: the same direction, the target moved and the camera
   * brought in or backed off until the drawing's bounding box, seen from there, fills the canvas
   * (less a margin) in one dimension, with every label inside it. Called when the projector view
   * is entered or left, and (a chapter with autoFit) on a resize and after each look().
   * `onlyIfCropped`: back off only when something is past the canvas's edge.
   */
  reframe({ onlyIfCropped = false } = {}) {
    this.syncSize();
    const { box, labels } = this.content();
    if (box.isEmpty() && !labels.length) return;
    const w = Math.max(1, this.container.clientWidth);
    const h = Math.max(1, this.container.clientHeight);
    // each visible label: its drawn rectangle (and its children's: a slanted word's span) around
    // the point it hangs on, in pixels; the same at any camera distance
    this.labels.render(this.scene, this.camera); // puts new labels into the page at their places
    this.camera.updateMatrixWorld();
    const spans = [];
    for (const o of labels) {
      const at = o.getWorldPosition(new THREE.Vector3());
      if (!o.visible || !o.element.isConnected) continue;
      const rects = [o.element, ...o.element.querySelectorAll("*")].map((e) => e.getBoundingClientRect()).filter((r) => r.width > 0 && r.height > 0);
      if (!rects.length) continue;
      box.expandByPoint(at);
      const p = at.clone().project(this.camera);
      const frame = this.labels.domElement.getBoundingClientRect();
      const px = frame.left + ((p.x + 1) / 2) * w;
      const py = frame.top + ((1 - p.y) / 2) * h;
      const left = Math.min(...rects.map((r) => r.left)) - px;
      const right = Math.max(...rects.map((r) => r.right)) - px;
      const top = Math.min(...rects.map((r) => r.top)) - py;
      const bottom = Math.max(...rects.map((r) => r.bottom)) - py;
      spans.push({ at, dx: [(2 * left) / w, (2 * right) / w], dy: [(-2 * bottom) / h, (-2 * top) / h] });
    }
    const corners = [0, 1, 2, 3, 4, 5, 6, 7].map(
      (i) => new THREE.Vector3(i & 1 ? box.max.x : box.min.x, i & 2 ? box.max.y : box.min.y, i & 4 ? box.max.z : box.min.z),
    );
    // the drawing's extent on the canvas (NDC, -1 to 1) from the camera as it stands
    const extent = () => {
      this.camera.updateMatrixWorld();
      const e = { x0: Infinity, x1: -Infinity, y0: Infinity, y1: -Infinity, behind: false };
      const add = (p, dx, dy) => {
        if (p.z >= 1 || p.z <= -1) e.behind = true;
        e.x0 = Math.min(e.x0, p.x + dx[0]);
        e.x1 = Math.max(e.x1, p.x + dx[1]);
        e.y0 = Math.min(e.y0, p.y + dy[0]);
        e.y1 = Math.max(e.y1, p.y + dy[1]);
      };
      for (const c of corners) add(c.clone().project(this.camera), [0, 0], [0, 0]);
      for (const s of spans) add(s.at.clone().project(this.camera), s.dx, s.dy);
      return e;
    };
    const mx = 1 - (2 * Math.max(10, 0.03 * w)) / w; // a margin: nothing on the canvas's edge
    const my = 1 - (2 * Math.max(10, 0.03 * h)) / h;
    const inside = (e) => !e.behind && e.x0 >= -mx && e.x1 <= mx && e.y0 >= -my && e.y1 <= my;
    if (onlyIfCropped && inside(extent())) return;

    const dir = this.camera.position.clone().sub(this.controls.target).normalize();
    const target = box.getCenter(new THREE.Vector3());
    const place = (distance) => {
      this.camera.position.copy(target).addScaledVector(dir, distance);
      this.camera.lookAt(target);
    };
    const size = box.getSize(new THREE.Vector3()).length() + 1;
    // the search below backs the camera off as far as size × 40: the far plane must not cut the drawing
    // off there (a drawing over 15 units across never seemed to fit, and was put at the search's end)
    this.camera.far = Math.max(this.camera.far, size * 80);
    this.camera.updateProjectionMatrix();
    let distance = size;
    for (let round = 0; round < 3; round++) {
      // the nearest distance at which everything is inside (the extent shrinks as the camera backs off)
      let lo = 0.05;
      let hi = size * 40;
      for (let i = 0; i < 40; i++) {
        const mid = (lo + hi) / 2;
        place(mid);
        if (inside(extent())) hi = mid;
        else lo = mid;
      }
      distance = hi;
      place(distance);
      // then move the target so that the drawing stands in the middle of the canvas
      const e = extent();
      const cx = (e.x0 + e.x1) / 2;
      const cy = (e.y0 + e.y1) / 2;
      const halfH = Math.tan(THREE.MathUtils.degToRad(this.camera.fov) / 2) * distance;
      const right = new THREE.Vector3().setFromMatrixColumn(this.camera.matrixWorld, 0);
      const up = new THREE.Vector3().setFromMatrixColumn(this.camera.matrixWorld, 1);
      target.addScaledVector(right, cx * halfH * this.camera.aspect).addScaledVector(up, cy * halfH);
    }
    place(distance);
    this.controls.target.copy(target);
    this.camera.far = Math.max(300, distance * 3);
    this.camera.updateProjectionMatrix();
    this.controls.update();
    this.requestRender();
  }

  /** Look at `target` from `position` (both [x, y, z]). */
  look(position, target = [0, 0, 0]) {
    this.userMoved = false;
    this.needsFit = this.autoFit; // framed to the drawing in the next frame, once the chapter has drawn it
    this.camera.position.set(...position);
    this.controls.target.set(...target);
    this.controls.update();
    this.requestRender();
  }

  /** A text label at [x, y, z], styled by `className` (CSS), added to the stage's root. It enters the
   *  page when the task that made it has run (renderLabelsSoon), not at the next frame. */
  label(text, position, className = "stage-label") {
    const div = document.createElement("div");
    div.className = className;
    div.textContent = text;
    const obj = new CSS2DObject(div);
    obj.position.set(...position);
    this.root.add(obj);
    renderLabelsSoon(this.labels, this.scene, this.camera); // (the frame renders them again, for its camera)
    return obj;
  }

  /** Remove and dispose everything a chapter added. */
  clear() {
    this.root.traverse((o) => {
      o.geometry?.dispose();
      if (o.material) for (const m of [].concat(o.material)) m.dispose();
      if (o.element) o.element.remove();
    });
    this.root.clear();
    this.autoFit = false;
    this.needsFit = false;
    this.requestRender();
  }

  /** A chapter with autoFit has its camera fitted to its drawing once drawn: now, if still due and the
   *  user has not moved it (else at the next frame). Whether it fitted. */
  fitIfDue() {
    if (!this.needsFit || this.userMoved) return false;
    this.needsFit = false;
    this.reframe();
    return true;
  }

  requestRender() {
    if (this.frameRequested) return;
    this.frameRequested = true;
    requestAnimationFrame(() => {
      this.syncSize(); // (its own requests for a frame are this one)
      this.frameRequested = false;
      this.fitIfDue();
      this.renderer.render(this.scene, this.camera);
      this.labels.render(this.scene, this.camera);
      this.frames += 1;
    });
  }

  dispose() {
    this.clear();
    this.sized.clear();
    this.resizeObserver.disconnect();
    this.controls.dispose();
    this.renderer.dispose();
    this.renderer.domElement.remove();
    this.labels.domElement.remove();
  }
}
