// The chapter `tiles`' 3D view: queries (rows) against keys (columns) on the floor, the keys cut into
// blocks (a gap between two blocks). The block being read has a frame that slides along the keys; the
// floor of a block already read is grey (its scores were dropped), of a block still ahead pale. Bars
// stand only on the cells that exist at this moment; beside the focused query, its running m, l and o.
// At the end, two rows in front of the grid: the finished row beside the plain softmax row.
// The chapter says what to draw (update(view)); nothing here computes attention.

import * as THREE from "three";
import { heatRgb } from "../format.js";
import { Drawing } from "./extras.js";

const CELL = 0.5; // width and depth of a cell
const GAP = 0.16; // between two blocks of keys
const HEIGHT = 1.1; // a bar of value 1
const SLIDE_MS = 320; // the frame's slide to the next block
const WHITE = new THREE.Color(1, 1, 1);
const FLOORS = { now: 0xffd89a, read: 0xcfcbbf, ahead: 0xe2decf, all: 0xe4e0d3 };
const FRAME = 0xd55e00; // vermillion (Okabe–Ito): the block being read
const BAND = 0xa9cce3; // under the focused query's row
const PLAIN = new THREE.Color(0x56b4e9); // sky blue (Okabe–Ito): the plain way's bars beside the blocks' ones

export class TileGrid extends Drawing {
  /** @param stage a Stage (scene/stage.js) */
  constructor(stage) {
    super(stage, "tile-grid");
    this.geometry = new THREE.BoxGeometry(CELL * 0.8, 1, CELL * 0.8).translate(0, 0.5, 0); // grows up
    this.material = new THREE.MeshStandardMaterial({ roughness: 0.6, metalness: 0 });
    this.floors = Object.fromEntries(Object.entries(FLOORS).map(([k, c]) => [k, new THREE.MeshBasicMaterial({ color: c })]));
    this.bandMaterial = new THREE.MeshBasicMaterial({ color: BAND });
    this.frameMaterial = new THREE.MeshBasicMaterial({ color: FRAME });
    this.frame = new THREE.Group();
    this.frame.name = "block-frame";
    this.group.add(this.frame);
    this.slide = null; // the frame's slide in progress: { from, to, start }
    this.reducedMotion = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  }

  redraw(last) {
    this.show(last, { slide: false });
  }

  /** update(view), the camera fitted to what it drew (unless the user has turned or zoomed it), then the
   *  labels placed again for that camera (which names fit side by side depends on it). */
  show(view, { slide = true } = {}) {
    this.update(view, { slide });
    if (this.stage.userMoved) return this.stage.reframe({ onlyIfCropped: true });
    this.stage.reframe();
    this.update(view, { slide: false });
    this.stage.reframe({ onlyIfCropped: true });
  }

  /**
   * @param view {
   *   rows, cols: the queries' and the keys' names; blocks: [[start, stop]] of the keys;
   *   current: the block being read (null: none, the plain table or the end); read: blocks read before it;
   *   bars: rows × cols of 0 … 1 (null: no bar; the cell does not exist now); focus: the focused row;
   *   running: the focused query's name and running numbers (lines of text) or null: beside its row, or on
   *     a phone on one line in front of the grid; note: a line in front, or null (not on a phone);
   *   compare: { left, right: one value per key, legend } two thin bars per key in a row in front of the
   *     grid (the finished row beside the plain one: left cividis, right sky blue), or null;
   *   blockName: the current block's label in the page's language ("block 2 of 3") }
   */
  update(view, { slide = true } = {}) {
    const previous = this.last;
    this.begin(view);
    const { rows, cols, blocks, focus } = view;
    const blockOf = cols.map((_, c) => blocks.findIndex(([s, e]) => c >= s && c < e));
    const colX = cols.map((_, c) => c * CELL + blockOf[c] * GAP + CELL / 2);
    const width = cols.length * CELL + (blocks.length - 1) * GAP;
    const depth = rows.length * CELL;
    const x0 = -width / 2;
    const z0 = -depth / 2;
    const compare = view.compare;
    const compareZ = z0 + depth + 0.9;

    // bars: the cells that exist now, and the compared rows
    const cells = [];
    view.bars.forEach((row, r) => row.forEach((v, c) => v !== null && v !== undefined && cells.push([colX[c], z0 + (r + 0.5) * CELL, v, r, null])));
    if (compare) {
      compare.left.forEach((v, c) => cells.push([colX[c] - CELL * 0.2, compareZ, v, null, null]));
      compare.right.forEach((v, c) => cells.push([colX[c] + CELL * 0.2, compareZ, v, null, PLAIN]));
    }
    this.cells(cells.length, "tile-bars");
    const m = new THREE.Matrix4();
    const colour = new THREE.Color();
    cells.forEach(([x, z, v, r, fixed], i) => {
      const t = Math.max(0, Math.min(1, v));
      m.makeScale(r === null ? 0.45 : 1, Math.max(0.02, t * HEIGHT), r === null ? 0.7 : 1);
      m.setPosition(x0 + x, 0, z);
      this.mesh.setMatrixAt(i, m);
      const [R, G, B] = heatRgb(t);
      if (fixed) colour.copy(fixed);
      else colour.setRGB(R / 255, G / 255, B / 255, THREE.SRGBColorSpace);
      if (focus !== null && r !== null && r !== focus) colour.lerp(WHITE, 0.55); // the focused query's row stands out
      this.mesh.setColorAt(i, colour);
    });
    this.mesh.instanceMatrix.needsUpdate = true;
    if (this.mesh.instanceColor) this.mesh.instanceColor.needsUpdate = true;

    // the floor of each block: being read, read (dropped), or still ahead
    blocks.forEach(([s, e], b) => {
      const state = view.current === null ? (view.read >= blocks.length ? "read" : "all") : b === view.current ? "now" : b < view.current ? "read" : "ahead";
      const w = (e - s) * CELL;
      const floor = this.keep(new THREE.Mesh(new THREE.PlaneGeometry(w, depth), this.floors[state]));
      floor.rotation.x = -Math.PI / 2;
      floor.position.set(x0 + colX[s] - CELL / 2 + w / 2, -0.006, 0);
    });
    if (focus !== null && focus < rows.length) {
      const band = this.keep(new THREE.Mesh(new THREE.PlaneGeometry(width + 0.3, CELL * 0.5), this.bandMaterial));
      band.rotation.x = -Math.PI / 2;
      band.position.set(0, -0.003, z0 + (focus + 0.5) * CELL);
      band.name = "focus-band";
    }

    // the frame around the block being read, slid from where it stood
    this.frame.visible = view.current !== null;
    if (view.current !== null) {
      const [s, e] = blocks[view.current];
      const w = (e - s) * CELL + 0.1;
      const d = depth + 0.1;
      const t = 0.06;
      for (const [sx, sz, px, pz] of [
        [w + t, t, 0, -d / 2],
        [w + t, t, 0, d / 2],
        [t, d, -w / 2, 0],
        [t, d, w / 2, 0],
      ]) {
        const side = this.keep(new THREE.Mesh(new THREE.BoxGeometry(sx, 0.05, sz), this.frameMaterial), this.frame);
        side.position.set(px, 0.025, pz);
      }
      const to = x0 + colX[s] - CELL / 2 + (e - s) * CELL / 2;
      const from = previous && slide && this.frame.userData.x !== undefined ? this.frame.userData.x : to;
      this.frame.userData.x = to;
      this.slideFrame(from, to);
    }

    // labels: the keys along the back, the queries on the left, the running numbers on the right
    const colStep = cols.length > 1 ? this.pixels([x0 + colX[0], z0], [x0 + colX[1], z0]) : 99;
    const everyCol = Math.max(1, Math.ceil(18 / Math.max(1, colStep))); // names at least 18 px apart
    const longest = Math.max(...cols.map((s) => String(s).length));
    const slant = colStep < longest * 8 + 14; // too long to stand upright side by side: at a slant
    if (colStep * everyCol >= 11) {
      cols.forEach((name, c) => {
        if (c % everyCol !== 0) return;
        const obj = this.label(slant ? "" : String(name), [x0 + colX[c], 0.05, z0 - 0.25], `stage-label grid-word grid-col${slant ? " slant" : ""}`);
        if (slant) obj.element.append(Object.assign(document.createElement("span"), { textContent: String(name) }));
      });
    }
    const rowStep = this.pixels([0, z0], [0, z0 + CELL]);
    const everyRow = Math.max(1, Math.ceil(20 / Math.max(1, rowStep)));
    rows.forEach((name, r) => {
      const from = focus ?? 0; // counted from the focused row, which is always named
      if ((((r - from) % everyRow) + everyRow) % everyRow !== 0) return;
      const obj = this.label(String(name), [x0 - 0.25, 0.05, z0 + (r + 0.5) * CELL], `stage-label grid-word grid-row${r === focus ? " focus" : ""}`);
      obj.center.set(1, 0.5); // its right edge at the grid
    });
    const narrow = this.stage.container.clientWidth < 520; // a phone: nothing beside the grid, little in front
    if (view.running && focus !== null && narrow) {
      const [name, ...lines] = view.running; // two short lines: a label as wide as the view would push the camera back
      const text = `${name}: ${lines.slice(0, -1).join(" · ")}\n${lines[lines.length - 1]}`;
      const obj = this.label(text, [0, 0.05, z0 + depth + 0.35], "stage-label tl-running");
      obj.center.set(0.5, 0); // hangs in front of the grid
    } else if (view.running && focus !== null) {
      // beside the focused row, but not hanging past the grid's front or back edge (where the block's name is)
      const z = Math.min(Math.max((focus + 0.5) * CELL, Math.min(0.9, depth / 2)), Math.max(depth - 0.9, depth / 2));
      const obj = this.label(view.running.join("\n"), [x0 + width + 0.3, 0.05, z0 + z], "stage-label tl-running");
      obj.center.set(0, 0.5); // its left edge beside the grid
    }
    if (view.current !== null && !narrow) {
      const [s, e] = blocks[view.current];
      const name = view.blockName || `block ${view.current + 1} of ${blocks.length}`; // the chapter's words for it
      this.label(name, [x0 + (colX[s] + colX[e - 1]) / 2, 0.05, z0 + depth + 0.3], "stage-label tl-block-name");
    }
    if (compare && narrow) {
      this.label(compare.legend, [0, 0.05, compareZ + 0.45], "stage-label tl-compare"); // under the bars
    } else if (compare) {
      const obj = this.label(compare.legend, [x0 - 0.25, 0.05, compareZ], "stage-label tl-compare");
      obj.center.set(1, 0.5);
    }
    if (view.note && !narrow) this.label(view.note, [0, 0.05, (compare ? compareZ : z0 + depth) + 0.75], "stage-label tl-note");
    this.stage.requestRender();
  }

  /** The frame from x = from to x = to: at once with reduced motion, else over SLIDE_MS. */
  slideFrame(from, to) {
    if (this.reducedMotion || Math.abs(from - to) < 1e-6) {
      this.slide = null;
      this.frame.position.x = to;
      return;
    }
    this.slide = { from, to, start: performance.now() };
    const tick = () => {
      if (!this.slide) return;
      const u = Math.min(1, (performance.now() - this.slide.start) / SLIDE_MS);
      const eased = u < 0.5 ? 2 * u * u : 1 - (-2 * u + 2) ** 2 / 2;
      this.frame.position.x = this.slide.from + (this.slide.to - this.slide.from) * eased;
      this.stage.requestRender();
      if (u < 1) requestAnimationFrame(tick);
      else this.slide = null;
    };
    this.frame.position.x = from;
    requestAnimationFrame(tick);
  }

  dispose() {
    this.slide = null;
    super.dispose([this.geometry, this.material, ...Object.values(this.floors), this.bandMaterial, this.frameMaterial]);
  }
}
