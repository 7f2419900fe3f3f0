// What every 3-D view of the page is made of: a WebGL canvas on the page's background, a CSS2D
// layer for the labels, a scene lit the same way, all three fitted to the view's container.

import * as THREE from "three";
import { CSS2DRenderer } from "three/addons/renderers/CSS2DRenderer.js";
import { softwareContext } from "./software.js";

export const BACKGROUND = 0xf4f3ee;

/**
 * A WebGL renderer whose canvas goes into `container`: antialiased with a GPU, not where a software
 * rasteriser draws (there multisampling costs most of a frame: scene/software.js), at most 2 device
 * pixels per CSS pixel, cleared to BACKGROUND; the canvas is an image named `ariaLabel`, found by
 * `testid`. Pictures of it are read in the task that draws them (scene/picture.js renderAt).
 */
export function makeRenderer(container, { testid, ariaLabel }) {
  const canvas = document.createElement("canvas");
  const context = softwareContext(canvas); // null with a GPU: the renderer makes its own
  const renderer = new THREE.WebGLRenderer(context ? { canvas, context, antialias: false } : { antialias: true });
  renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
  renderer.setClearColor(BACKGROUND, 1);
  const node = renderer.domElement;
  node.dataset.testid = testid;
  node.setAttribute("role", "img");
  node.setAttribute("aria-label", ariaLabel);
  container.append(node);
  return renderer;
}

const due = new WeakSet(); // label layers to be rendered once the current task has run (renderLabelsSoon)

/**
 * The label layer `labels` rendered once the current task has run (a microtask: before the page
 * paints). A CSS2D label enters the page only when its layer is rendered: a redraw that takes its old
 * labels off at once and left the new ones to the next frame would show a frame without names.
 */
export function renderLabelsSoon(labels, scene, camera) {
  if (due.has(labels)) return;
  due.add(labels);
  queueMicrotask(() => {
    due.delete(labels);
    labels.render(scene, camera);
  });
}

/** The label layer in `container`, hidden from screen readers (the page says the same in text). */
export function makeLabelLayer(container) {
  const labels = new CSS2DRenderer();
  labels.domElement.className = "label-layer";
  labels.domElement.setAttribute("aria-hidden", "true");
  container.append(labels.domElement);
  return labels;
}

/** An empty scene lit from the sky and by one sun. */
export function litScene() {
  const scene = new THREE.Scene();
  scene.add(new THREE.HemisphereLight(0xffffff, 0x8a8a80, 2.2));
  const sun = new THREE.DirectionalLight(0xffffff, 1.6);
  sun.position.set(4, 10, 8);
  scene.add(sun);
  return scene;
}

/** The renderer, the CSS2D label layer and the camera's aspect set to `container`'s size (at least 1×1). */
export function fitToContainer(container, renderer, labels, camera) {
  const w = Math.max(1, container.clientWidth);
  const h = Math.max(1, container.clientHeight);
  renderer.setSize(w, h, false);
  labels.setSize(w, h);
  camera.aspect = w / h;
  camera.updateProjectionMatrix();
}
