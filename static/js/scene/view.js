// The 3-D view: renderer, camera, orbit controls, CSS2D labels and the scene objects.
// It renders on demand (a frame when the state changes or the camera moves) and runs a
// short requestAnimationFrame loop only while a transition is playing.

import * as THREE from "three";
import { OrbitControls } from "three/addons/controls/OrbitControls.js";
import { fixed3 } from "../format.js";
import { easeInOut } from "./geometry.js";
import { layout } from "./layout.js";
import { BlockMarkers } from "./blocks.js";
import { AttentionLinks } from "./links.js";
import { OutputArrow } from "./output.js";
import { VectorPlanes } from "./planes.js";
import { fitToContainer, litScene, makeLabelLayer, makeRenderer, renderLabelsSoon } from "./surface.js";
import { TokenMarkers } from "./tokens.js";
import { VectorArrows } from "./vectors.js";
import { t } from "../i18n.js";

const TRANSITION_MS = 450;
const LABEL_GAP = 6; // CSS pixels between two labels side by side

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
    // the container's size as the last resize found it: reading clientWidth while the page's DOM
    // is dirty forces a layout of the whole page, and fit() asks for it hundreds of times (the
    // ResizeObserver calls resize() whenever the size changes, and that draws everything again)
    this.size = { w: 1, h: 1 };
    this.labelBoxes = new Map(); // the label layer's style (ancestors' classes, viewport) → its probed boxes

    this.renderer = makeRenderer(container, { testid: "scene-canvas", ariaLabel: t("scene.view.label") });
    const canvas = this.renderer.domElement;
    this.labels = makeLabelLayer(container); // the table says the same, for screen readers
    this.scene = litScene();

    this.camera = new THREE.PerspectiveCamera(30, 1, 0.1, 300);
    this.controls = new OrbitControls(this.camera, canvas);
    this.controls.enableDamping = false;
    this.controls.minDistance = 4;
    this.controls.maxDistance = 80;
    this.userMoved = false; // orbited or zoomed by the user: a resize keeps their direction
    this.gesture = false; // a drag or a turn of the wheel in progress
    this.controls.addEventListener("start", () => {
      this.userMoved = true;
      this.gesture = true;
    });
    // zooming in or out can make room for one line of labels, or take it: decided when the gesture
    // ends, not at each of its moves (a change of lines redraws every object: a frame of 60+ ms on
    // a long sentence in the middle of a drag)
    this.controls.addEventListener("change", () => {
      if (!this.gesture) this.placeLabels();
      this.requestRender();
    });
    this.controls.addEventListener("end", () => {
      this.gesture = false;
      this.placeLabels();
      this.requestRender();
    });

    this.objects = [
      new VectorPlanes(),
      new AttentionLinks(capacity),
      new TokenMarkers(capacity, onFocus, onHover),
      new VectorArrows(capacity),
      new OutputArrow(),
      new BlockMarkers(onFocus), // a long sentence's blocks of keys outside the window (none otherwise)
    ];
    for (const obj of this.objects) this.scene.add(obj.group);

    this.resizeObserver = new ResizeObserver(() => this.resize());
    this.resizeObserver.observe(container);
    this.resize();
    // the shader programs compile while the first numbers are on their way (with
    // KHR_parallel_shader_compile, in the GPU process): the first frame no longer waits for them
    this.renderer.compileAsync(this.scene, this.camera).catch(() => {});
  }

  /**
   * Fit the canvas again if its container changed size since: before each frame and each reframe.
   * The ResizeObserver alone is not enough: in a window that lost the focus to one it opened (the
   * projector's, when Present opens the teacher's window) Chromium may not call it at all.
   */
  syncSize() {
    const w = Math.max(1, this.container.clientWidth);
    const h = Math.max(1, this.container.clientHeight);
    if (w !== this.size.w || h !== this.size.h) this.resize();
  }

  resize() {
    fitToContainer(this.container, this.renderer, this.labels, this.camera);
    this.size = { w: Math.max(1, this.container.clientWidth), h: Math.max(1, this.container.clientHeight) };
    // the same tokens on a wider or narrower screen: fit the camera (keeping a direction the
    // user chose by orbiting) and decide the labels' lines again
    if (this.lastCtx) {
      // the whole drawing again (it is cheap): the rows' depth and the labels' lines depend on the size
      this.needFit = true;
      this.update(this.lastCtx, false);
    }
  }

  /**
   * A camera that shows every row of every token and every label, from the front and above.
   * The labels hang under their rows in one to three lines (decideLabels): the camera rises
   * (from a 44° to at most a 76° view from above) until the key row's labels end above the
   * query row, and it stands back until the outermost labels are inside the view.
   */
  fit(lay, keepDirection = false) {
    this.fitting = true;
    const half = lay.width / 2 + 1.3;
    const corners = [];
    for (const x of [-half, half + 1.2]) { // the planes reach 1.2 further right (planes.js: width + 3.6 centred at 0.6)
      for (const y of [-0.9, 2.0]) for (const z of [lay.z.value - 0.3, lay.z.output + 0.4]) corners.push(new THREE.Vector3(x, y, z));
    }
    const target = new THREE.Vector3(0, 0.3, (lay.z.output + lay.z.value) / 2);
    const { w, h } = this.size;
    const ends = lay.n ? [lay.xs[0], lay.xs[lay.n - 1]] : [0];
    const labelH = this.labelHeight ?? 24;
    const halfLabel = (Math.min(this.widest ?? 0, this.room ?? Infinity) / 2 + 4) / (w / 2); // in NDC
    const fitsAt = (dir, distance) => {
      this.camera.position.copy(target).addScaledVector(dir, distance);
      this.camera.lookAt(target);
      this.camera.updateMatrixWorld();
      const inside = corners.every((c) => {
        const p = c.clone().project(this.camera);
        return Math.abs(p.x) <= 0.96 && Math.abs(p.y) <= 0.9 && p.z < 1;
      });
      if (!inside) return false;
      // the end labels of the query row (the nearest, so the widest on screen) and its lines below
      const lines = this.lines ?? 1;
      return ends.every((x) => {
        const p = new THREE.Vector3(x, -0.55, lay.z.query + 0.5).project(this.camera);
        const below = (lines * 1.15 * labelH + 4) / (h / 2);
        return Math.abs(p.x) + halfLabel <= 0.99 && p.y - below >= -0.99;
      });
    };
    const fitDistance = (dir) => {
      let lo = 2;
      let hi = 200;
      for (let i = 0; i < 30; i++) {
        const mid = (lo + hi) / 2;
        if (fitsAt(dir, mid)) hi = mid;
        else lo = mid;
      }
      fitsAt(dir, hi);
      // a long row on a narrow screen stands far back: let the controls and the far plane follow
      this.controls.maxDistance = Math.max(80, hi * 1.6);
      this.camera.far = Math.max(300, hi * 3);
      this.camera.updateProjectionMatrix();
    };
    let clear = true;
    if (keepDirection && this.fittedFor >= 0) {
      fitDistance(this.camera.position.clone().sub(this.controls.target).normalize());
    } else {
      // long rows and tall views start from higher up
      const base = lay.n > 12 ? (this.camera.aspect < 1.5 ? 1.9 : 1.35) : this.camera.aspect < 1.2 ? 1.35 : 0.95;
      const rises = [base, ...[1.35, 1.9, 2.8, 4].filter((r) => r > base)];
      const tried = [];
      const place = (rise) => {
        // twice: the lines the labels need depend on the distance, and the distance on the lines
        for (let k = 0; k < 2; k++) {
          fitDistance(new THREE.Vector3(0, rise, 1).normalize());
          if (this.widest) this.lines = this.decideLabels(lay);
        }
        return { rise, clear: this.keyLabelsClear(lay), apart: lay.n > 1 ? this.pixelsApart(lay) : 0 };
      };
      for (const rise of rises) {
        const t = place(rise);
        tried.push(t);
        // up to a 62° view from above, a higher camera that brings the words further apart
        // (a wide view held back by the labels' lines below) is worth it; past that, only to clear
        if (t.clear && (rise >= 1.9 || (tried.length > 1 && t.apart < tried[tried.length - 2].apart * 1.1))) break;
      }
      const clearOnes = tried.filter((t) => t.clear);
      const pool = clearOnes.length ? clearOnes : tried;
      const best = pool.reduce((a, b) => (b.apart > a.apart * 1.1 ? b : a));
      if (best !== tried[tried.length - 1]) place(best.rise);
      clear = best.clear;
    }
    this.controls.target.copy(target);
    this.controls.update();
    this.fittedFor = lay.n;
    this.fitting = false;
    return clear;
  }

  /** Whether the key row's labels (names, then numbers) end above the query row's plane. */
  keyLabelsClear(lay) {
    if (!this.widest) return true;
    const { h } = this.size;
    const toPx = (v) => ((1 - v.project(this.camera).y) / 2) * h; // from the top
    const key = toPx(new THREE.Vector3(0, -0.45, lay.z.key));
    // the longest q arrow, or the plane's caption (planes.js: its foot at y = 1.6)
    const queryTop = Math.min(toPx(new THREE.Vector3(0, 2.1, lay.z.query)), toPx(new THREE.Vector3(0, 1.6, lay.z.query)) - 20);
    const stack = 2 * (this.lines ?? 1) * 1.15 * (this.labelHeight ?? 24); // names, then numbers
    return key + stack + 4 <= queryTop;
  }

  /** On screen, how far apart two neighbouring keys are (in CSS pixels). */
  pixelsApart(lay) {
    const a = new THREE.Vector3(lay.xs[0], 0, lay.z.key).project(this.camera);
    const b = new THREE.Vector3(lay.xs[1], 0, lay.z.key).project(this.camera);
    return (Math.abs(b.x - a.x) / 2) * this.size.w;
  }

  resetView() {
    if (!this.lastLayout) return;
    this.fittedFor = -1;
    this.userMoved = false;
    this.fit(this.lastLayout);
    this.placeLabels();
    this.requestRender();
  }

  /**
   * The widest label the back row will carry (a key's name or its number), in CSS pixels, as
   * the label layer's own style sets it (font, padding, border and max-width of `.label-key`
   * and `.label-value`, which depend on the layer's classes): the text measured with the
   * canvas's text metrics, so it does not wait for the labels themselves to be laid out.
   */
  widestLabel(full) {
    const layer = this.labels.domElement;
    const probe = (className) => {
      const node = document.createElement("div");
      node.className = `label ${className}`;
      // the room of the last layout must not cap what this one needs
      node.style.cssText = "position:absolute;visibility:hidden;left:-9999px;top:0;--label-room:100vw";
      node.textContent = "W".repeat(200);
      layer.append(node);
      const css = getComputedStyle(node);
      const px = (v) => parseFloat(v) || 0;
      const box = {
        font: `${css.fontStyle} ${css.fontWeight} ${css.fontSize} ${css.fontFamily}`,
        extra: px(css.paddingLeft) + px(css.paddingRight) + px(css.borderLeftWidth) + px(css.borderRightWidth),
        max: node.getBoundingClientRect().width, // its max-width, border box
        height: node.getBoundingClientRect().height,
      };
      node.remove();
      return box;
    };
    this.measure ??= document.createElement("canvas").getContext("2d");
    const widest = (box, texts) => {
      this.measure.font = box.font;
      let w = 0;
      for (const t of texts) w = Math.max(w, this.measure.measureText(t).width);
      return Math.min(box.max, Math.ceil(w + box.extra));
    };
    // the numbers: the longest of the stage (any row may be shown on hover), in a monospace font
    const { data, step } = full;
    let longest = "";
    for (const row of data[step.stage] ?? []) {
      for (const x of row) {
        const t = fixed3(x);
        if (t.length > longest.length) longest = t;
      }
    }
    // the probes force a layout: measured once per style of the layer (its and its ancestors'
    // classes, the viewport's size for the media queries)
    let style = `${window.innerWidth}x${window.innerHeight}@${window.devicePixelRatio}`;
    for (let node = layer; node; node = node.parentElement) style += `|${node.className}`;
    let boxes = this.labelBoxes.get(style);
    if (!boxes) {
      boxes = { key: probe("label-key"), value: probe("label-value") };
      this.labelBoxes.set(style, boxes);
    }
    const { key, value } = boxes;
    this.labelHeight = Math.max(key.height, value.height);
    return Math.max(widest(key, data.tokens), widest(value, [longest]));
  }

  /**
   * One line of labels under the keys, or two or three staggered lines: decided from the
   * camera as it is now (after fit()) and the widest label, again whenever the view's size or
   * the camera changes. Labels are also kept narrower than the room they have, so they never
   * overlap. Returns true when the labels changed and were redrawn.
   */
  placeLabels() {
    const full = this.lastFull;
    if (!full || this.fitting) return false;
    const lines = this.decideLabels(full.lay);
    if (lines === full.lay.lines) return false;
    full.lay.lines = lines;
    full.lay.stagger = lines > 1;
    for (const obj of this.objects) obj.update(full);
    if (!this.animation) for (const obj of this.objects) obj.tick(1);
    renderLabelsSoon(this.labels, this.scene, this.camera); // labels made anew (the blocks') in by this task's end
    this.requestRender();
    return true;
  }

  /** How many lines `lay`'s labels need now (1 to 3, 4 on a phone); sets the room each label may take. */
  decideLabels(lay) {
    const apart = lay.n > 1 ? this.pixelsApart(lay) : Infinity;
    let lines = 1;
    const most = this.size.w < 600 ? 4 : 3; // a phone has height to spare, not width
    while (lines < most && this.widest + LABEL_GAP > lines * apart) lines += 1;
    const room = Math.max(24, Math.floor(lines * apart - LABEL_GAP));
    this.room = room;
    const layer = this.labels.domElement;
    layer.style.setProperty("--label-room", Number.isFinite(room) ? `${room}px` : "100vw");
    layer.dataset.lines = String(lines);
    this.lines = lines;
    return lines;
  }

  /** Fit the camera to what is drawn again (a resize, the projector view), as Reset view does. */
  reframe() {
    this.syncSize();
    this.resetView();
  }

  /**
   * Draw the state: `ctx` is { data, step, focus, hover, withheld, only, blocks } (data = the API
   * response shown; withheld: the links carry no numbers; a long sentence's window: `only` the keys
   * its links go to, `blocks` its keys outside the window, attention/longview.js). The links' radii are written to the
   * container's data-link-widths, for tests.
   */
  update(ctx, animate = true) {
    this.lastCtx = ctx;
    this.labels.domElement.classList.toggle("withheld", Boolean(ctx.withheld));
    // a view taller than wide spreads the rows deeper, so that the labels have room between them
    const deep = Math.min(2.2, Math.max(1, 1.3 / this.camera.aspect));
    let lay = layout(ctx.data, deep, ctx.blocks);
    if (this.lastLayout && Math.abs(this.lastLayout.deep - deep) > 0.01 && !this.userMoved) this.fittedFor = -1;
    let full = { ...ctx, lay, focus: Math.min(ctx.focus, lay.n - 1) };
    this.labels.domElement.classList.toggle("dense", lay.n > 7);
    this.labels.domElement.classList.toggle("crowded", lay.n > 14);
    this.widest = this.widestLabel(full);
    // the camera (fitted to the labels' size), then the lines: how far apart the keys stand
    // on screen depends on the camera
    if (this.fittedFor !== lay.n || this.needFit) {
      const keep = this.userMoved && this.fittedFor >= 0;
      this.captions = this.fit(lay, keep);
      // not even from high above do the key row's labels clear the query row (a long sentence
      // on a phone): the rows stand further apart, a step at a time, while that helps; then the
      // rows' captions give way (the legend under the view names the rows)
      for (let more = 1.25; !this.captions && !keep && more < 2; more += 0.25) {
        lay = layout(ctx.data, deep * more, ctx.blocks);
        full = { ...full, lay };
        this.captions = this.fit(lay, false);
      }
    } else if (this.lastLayout) {
      lay = layout(ctx.data, this.lastLayout.deep, ctx.blocks); // the camera was fitted to that depth
      full = { ...full, lay };
    }
    lay.captions = this.captions ?? true;
    this.needFit = false;
    this.lastLayout = lay;
    lay.lines = this.decideLabels(lay);
    lay.stagger = lay.lines > 1;
    this.lastFull = full;
    for (const obj of this.objects) obj.update(full);
    renderLabelsSoon(this.labels, this.scene, this.camera); // labels made anew (the blocks') in by this task's end
    this.container.dataset.linkWidths = this.objects[1].radiusTo.map((r) => r.toFixed(4)).join(" ");
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
    this.syncSize(); // (its own requests for a frame are this one)
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
