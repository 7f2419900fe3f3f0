// A plain 3-D stage for the chapters that draw something other than the attention view
// (the RNN's chain, a token's x turning into q, k and v, the transformer block): renderer,
// camera, orbit controls and a CSS2D label layer, rendered on demand. A chapter adds its
// objects to `stage.root` and calls `stage.requestRender()`; `stage.clear()` disposes them.

import * as THREE from "three";
import { OrbitControls } from "three/addons/controls/OrbitControls.js";
import { CSS2DObject } from "three/addons/renderers/CSS2DRenderer.js";
import { fitToContainer, litScene, makeLabelLayer, makeRenderer } from "./surface.js";

export class Stage {
  /** @param container element the canvas and the label layer go into */
  constructor(container) {
    this.container = container;
    this.frameRequested = false;
    this.frames = 0;
    this.renderer = makeRenderer(container, {
      testid: "stage-canvas",
      ariaLabel: "3D view of this chapter; the panel beside it holds the same numbers",
      preserveDrawingBuffer: true,
    });
    const canvas = this.renderer.domElement;
    this.labels = makeLabelLayer(container);
    this.scene = litScene();
    this.root = new THREE.Group();
    this.scene.add(this.root);

    this.camera = new THREE.PerspectiveCamera(35, 1, 0.1, 300);
    this.camera.position.set(0, 4, 14);
    this.controls = new OrbitControls(this.camera, canvas);
    this.controls.addEventListener("change", () => this.requestRender());
    this.resizeObserver = new ResizeObserver(() => this.resize());
    this.resizeObserver.observe(container);
    this.resize();
  }

  resize() {
    fitToContainer(this.container, this.renderer, this.labels, this.camera);
    if (this.root.children.length) this.reframe({ onlyIfCropped: true });
    this.requestRender();
  }

  /**
   * Fit the camera to what the chapter drew: the same direction and target height, standing
   * back until the drawing's bounding sphere is inside the view (with a margin for the labels).
   * Called when the projector view is entered or left, and on a resize that crops the drawing
   * (`onlyIfCropped`: a chapter's own camera stays while everything is in sight).
   */
  reframe({ onlyIfCropped = false } = {}) {
    const box = new THREE.Box3();
    this.root.updateMatrixWorld(true);
    this.root.traverse((o) => {
      if (o.isCSS2DObject) box.expandByPoint(o.getWorldPosition(new THREE.Vector3()));
      else if (o.geometry) box.expandByObject(o);
    });
    if (box.isEmpty()) return;
    if (onlyIfCropped) {
      this.camera.updateMatrixWorld();
      const inside = [0, 1, 2, 3, 4, 5, 6, 7].every((i) => {
        const p = new THREE.Vector3(i & 1 ? box.max.x : box.min.x, i & 2 ? box.max.y : box.min.y, i & 4 ? box.max.z : box.min.z).project(this.camera);
        return Math.abs(p.x) <= 0.95 && Math.abs(p.y) <= 0.95 && p.z < 1; // a margin: nothing on the canvas's edge
      });
      if (inside) return;
    }
    const sphere = box.getBoundingSphere(new THREE.Sphere());
    const dir = this.camera.position.clone().sub(this.controls.target).normalize();
    const vfov = THREE.MathUtils.degToRad(this.camera.fov);
    const hfov = 2 * Math.atan(Math.tan(vfov / 2) * this.camera.aspect);
    const distance = (sphere.radius * 1.12) / Math.sin(Math.min(vfov, hfov) / 2);
    this.controls.target.copy(sphere.center);
    this.camera.position.copy(sphere.center).addScaledVector(dir, distance);
    this.camera.far = Math.max(300, distance * 3);
    this.camera.updateProjectionMatrix();
    this.controls.update();
    this.requestRender();
  }

  /** Look at `target` from `position` (both [x, y, z]). */
  look(position, target = [0, 0, 0]) {
    this.camera.position.set(...position);
    this.controls.target.set(...target);
    this.controls.update();
    this.requestRender();
  }

  /** A text label at [x, y, z], styled by `className` (CSS), added to the stage's root. */
  label(text, position, className = "stage-label") {
    const div = document.createElement("div");
    div.className = className;
    div.textContent = text;
    const obj = new CSS2DObject(div);
    obj.position.set(...position);
    this.root.add(obj);
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
    this.requestRender();
  }

  requestRender() {
    if (this.frameRequested) return;
    this.frameRequested = true;
    requestAnimationFrame(() => {
      this.frameRequested = false;
      this.renderer.render(this.scene, this.camera);
      this.labels.render(this.scene, this.camera);
      this.frames += 1;
    });
  }

  dispose() {
    this.clear();
    this.resizeObserver.disconnect();
    this.controls.dispose();
    this.renderer.dispose();
    this.renderer.domElement.remove();
    this.labels.domElement.remove();
  }
}
