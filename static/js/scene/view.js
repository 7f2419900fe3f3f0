// The 3-D view: renderer, camera, orbit controls, CSS2D labels and the scene objects.
// It renders on demand (a frame when the state changes or the camera moves) and runs a
// short requestAnimationFrame loop only while a transition is playing.

import * as THREE from "three";
import { OrbitControls } from "three/addons/controls/OrbitControls.js";
import { CSS2DRenderer } from "three/addons/renderers/CSS2DRenderer.js";
import { easeInOut } from "./geometry.js";
import { layout } from "./layout.js";
import { AttentionLinks } from "./links.js";
import { OutputArrow } from "./output.js";
import { VectorPlanes } from "./planes.js";
import { TokenMarkers } from "./tokens.js";
import { VectorArrows } from "./vectors.js";

export const BACKGROUND = 0xf4f3ee;
const TRANSITION_MS = 450;

export class SceneView {
  /**
   * @param container  element the canvas and the label layer go into
   * @param capacity   the most tokens the scene must hold
   * @param onFocus    callback(i) when a query label is clicked
   * @param onHover    callback(i | null) when the pointer enters or leaves a query label
   */
  constructor(container, capacity, onFocus, onHover = null) {
    this.container = container;
    this.frames = 0;
    this.frameRequested = false;
    this.animation = null;
    this.fittedFor = -1;
    this.reducedMotion = window.matchMedia("(prefers-reduced-motion: reduce)").matches;

    this.renderer = new THREE.WebGLRenderer({ antialias: true });
    this.renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
    this.renderer.setClearColor(BACKGROUND, 1);
    const canvas = this.renderer.domElement;
    canvas.dataset.testid = "scene-canvas";
    canvas.setAttribute("role", "img");
    canvas.setAttribute("aria-label", "3D view of the attention links; the table beside it holds the same numbers");
    container.append(canvas);

    this.labels = new CSS2DRenderer();
    this.labels.domElement.className = "label-layer";
    this.labels.domElement.setAttribute("aria-hidden", "true"); // the table says the same, for screen readers
    container.append(this.labels.domElement);

    this.scene = new THREE.Scene();
    this.scene.add(new THREE.HemisphereLight(0xffffff, 0x8a8a80, 2.2));
    const sun = new THREE.DirectionalLight(0xffffff, 1.6);
    sun.position.set(4, 10, 8);
    this.scene.add(sun);

    this.camera = new THREE.PerspectiveCamera(30, 1, 0.1, 300);
    this.controls = new OrbitControls(this.camera, canvas);
    this.controls.enableDamping = false;
    this.controls.minDistance = 4;
    this.controls.maxDistance = 80;
    this.controls.addEventListener("change", () => this.requestRender());

    this.objects = [
      new VectorPlanes(),
      new AttentionLinks(capacity),
      new TokenMarkers(capacity, onFocus, onHover),
      new VectorArrows(capacity),
      new OutputArrow(),
    ];
    for (const obj of this.objects) this.scene.add(obj.group);

    this.resizeObserver = new ResizeObserver(() => this.resize());
    this.resizeObserver.observe(container);
    this.resize();
  }

  resize() {
    const w = Math.max(1, this.container.clientWidth);
    const h = Math.max(1, this.container.clientHeight);
    this.renderer.setSize(w, h, false);
    this.labels.setSize(w, h);
    this.camera.aspect = w / h;
    this.camera.updateProjectionMatrix();
    if (this.lastLayout) this.fit(this.lastLayout, true);
    this.requestRender();
  }

  /** A camera that shows every row of every token, from the front and a little above. */
  fit(lay, keepDirection = false) {
    const half = lay.width / 2 + 1.3;
    const corners = [];
    for (const x of [-half, half]) {
      for (const y of [-0.9, 2.0]) for (const z of [lay.z.value - 0.3, lay.z.output + 0.4]) corners.push(new THREE.Vector3(x, y, z));
    }
    const target = new THREE.Vector3(0, 0.3, (lay.z.output + lay.z.value) / 2);
    const dir =
      keepDirection && this.fittedFor >= 0
        ? this.camera.position.clone().sub(this.controls.target).normalize()
        : new THREE.Vector3(0, lay.n > 12 ? (this.camera.aspect < 1.5 ? 1.9 : 1.35) : 0.95, 1).normalize(); // long rows: from higher up
    const fits = (distance) => {
      this.camera.position.copy(target).addScaledVector(dir, distance);
      this.camera.lookAt(target);
      this.camera.updateMatrixWorld();
      return corners.every((c) => {
        const p = c.clone().project(this.camera);
        return Math.abs(p.x) <= 0.96 && Math.abs(p.y) <= 0.9 && p.z < 1;
      });
    };
    let lo = 2;
    let hi = 200;
    for (let i = 0; i < 30; i++) {
      const mid = (lo + hi) / 2;
      if (fits(mid)) hi = mid;
      else lo = mid;
    }
    fits(hi);
    this.controls.target.copy(target);
    this.controls.update();
    this.fittedFor = lay.n;
  }

  /** On screen, how far apart two neighbouring keys are (in CSS pixels). */
  pixelsApart(lay) {
    const a = new THREE.Vector3(lay.xs[0], 0, lay.z.key).project(this.camera);
    const b = new THREE.Vector3(lay.xs[1], 0, lay.z.key).project(this.camera);
    return (Math.abs(b.x - a.x) / 2) * this.container.clientWidth;
  }

  resetView() {
    if (!this.lastLayout) return;
    this.fittedFor = -1;
    this.fit(this.lastLayout);
    this.requestRender();
  }

  /** Draw the state: `ctx` is { data, step, focus, hover } (data = the API response shown). */
  update(ctx, animate = true) {
    const lay = layout(ctx.data);
    this.lastLayout = lay;
    // labels take two staggered lines when the back row gives each token less than ~80 px
    lay.stagger = lay.n > 7 && this.pixelsApart(lay) < 80;
    const full = { ...ctx, lay, focus: Math.min(ctx.focus, lay.n - 1) };
    if (this.fittedFor !== lay.n) this.fit(lay);
    this.labels.domElement.classList.toggle("dense", lay.n > 7);
    this.labels.domElement.classList.toggle("crowded", lay.n > 14);
    for (const obj of this.objects) obj.update(full);
    if (!animate || this.reducedMotion) {
      for (const obj of this.objects) obj.tick(1);
      this.animation = null;
      this.requestRender();
      return;
    }
    this.animation = { start: performance.now() };
    this.requestRender();
  }

  requestRender() {
    if (this.frameRequested) return;
    this.frameRequested = true;
    requestAnimationFrame((now) => this.frame(now));
  }

  frame(now) {
    this.frameRequested = false;
    if (this.animation) {
      const t = Math.min(1, Math.max(0, (now - this.animation.start) / TRANSITION_MS));
      for (const obj of this.objects) obj.tick(easeInOut(t));
      if (t < 1) this.requestRender();
      else this.animation = null;
    }
    this.renderer.render(this.scene, this.camera);
    this.labels.render(this.scene, this.camera);
    this.frames += 1;
    this.container.dataset.frames = String(this.frames);
    this.container.dataset.animating = this.animation ? "true" : "false";
  }

  dispose() {
    this.resizeObserver.disconnect();
    this.controls.dispose();
    for (const obj of this.objects) obj.dispose();
    this.renderer.dispose();
    this.renderer.domElement.remove();
    this.labels.domElement.remove();
  }
}
