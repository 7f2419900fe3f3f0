// The KV cache in 3D: one row of keys and one row of values per token the model has read (the
// cache grows by one row per written token), and the newest token's query reaching back into
// every key row, each line as strong as its attention weight (past 256 rows, a box and a line per
// block of rows). There is nothing after the newest row to reach: the causal mask is the cache
// itself. Token 0's row is marked: the attention sink.

import * as THREE from "three";
import { t } from "../i18n.js";

const COLUMN = 6; // the whole cache is drawn this tall, however many rows it has
const ROW = 0.3; // a row's height while few rows fit
const K_X = -1.25;
const V_X = 1.25;
const WIDTH = 1.9;
const Q_X = -3.6;
const EMPTY = new THREE.Color(0xe4e2da);
const KEY = new THREE.Color(0x2f6fd0);
const VALUE = new THREE.Color(0x2e9b5f);
const QUERY = 0xd9480f;
const MOST = 256; // past this many rows, each box (and line) stands for a block of ⌈rows / MOST⌉ rows
const _m = new THREE.Matrix4();
const _c = new THREE.Color();

/** The colour of a key or value row at shade w in [0, 1] (its query's weight, the strongest 1). */
const shade = (kind, w) => _c.copy(EMPTY).lerp(kind === "key" ? KEY : VALUE, 0.15 + 0.85 * Math.max(0, Math.min(1, w)));

export class CacheScene {
  /** @param stage a Stage (static/js/scene/stage.js) */
  constructor(stage) {
    this.stage = stage;
    this.group = new THREE.Group();
    this.group.name = "kv-cache";
    stage.root.add(this.group);
    this.rows = 0;
    // one material for each kind of object, made once and kept while the scene lives: the rows'
    // shades are per-instance colours (made anew on every streamed token, materials had three.js
    // compile a shader program again for the next frame)
    this.materials = {
      box: new THREE.MeshStandardMaterial({ color: 0xffffff }),
      query: new THREE.MeshStandardMaterial({ color: QUERY }),
      line: new THREE.LineBasicMaterial({ vertexColors: true, transparent: true }),
    };
  }

  /**
   * Draw the cache for one written token: the key and value rows as two instanced meshes and the
   * query's lines as one set of segments (a few draw calls however long the cache: a 4,096-token
   * prompt made 12,000 objects on every written token); past MOST rows, a box and a line per block
   * of rows, shaded by the block's share of the weight.
   * @param {{rows: number, weights: number[]|null, sink: boolean}} v rows = kv_len; weights = the
   *   query's attention over the rows (null while withheld or before anything is written)
   */
  update({ rows, weights, sink }) {
    this.clear();
    this.rows = rows;
    if (!rows) return;
    const per = Math.ceil(rows / MOST); // rows a box stands for
    const boxes = Math.ceil(rows / per);
    const h = Math.min(ROW, COLUMN / boxes);
    const y = (i) => -i * h;
    const shares = new Float64Array(boxes); // each box's weight: its rows' sum
    if (weights) for (let i = 0; i < rows; i++) shares[Math.floor(i / per)] += weights[i];
    let top = 0;
    for (const s of shares) top = Math.max(top, s);
    top ||= 1;
    const geometry = new THREE.BoxGeometry(WIDTH, h * 0.82, 0.25);
    this.stage.container.dataset.cacheBoxes = `${boxes}×${per}`; // boxes drawn × rows each (for tests)
    for (const [x, kind] of [
      [K_X, "key"],
      [V_X, "value"],
    ]) {
      const mesh = new THREE.InstancedMesh(geometry, this.materials.box, boxes);
      mesh.name = kind;
      for (let i = 0; i < boxes; i++) {
        mesh.setMatrixAt(i, _m.makeTranslation(x, y(i), 0));
        mesh.setColorAt(i, shade(kind, weights ? shares[i] / top : 0));
      }
      this.group.add(mesh);
    }
    const last = y(boxes - 1);
    if (weights) {
      const q = new THREE.Mesh(new THREE.SphereGeometry(Math.max(0.12, h * 0.45), 16, 12), this.materials.query);
      q.position.set(Q_X, last, 0);
      this.group.add(q);
      const ends = new Float32Array(boxes * 6); // a segment from the query to each box's key
      const colours = new Float32Array(boxes * 8); // RGBA at both ends: the line as strong as its weight
      _c.setHex(QUERY);
      for (let i = 0; i < boxes; i++) {
        ends.set([Q_X, last, 0, K_X - WIDTH / 2, y(i), 0], i * 6);
        const alpha = Math.min(1, 0.06 + shares[i] / top);
        colours.set([_c.r, _c.g, _c.b, alpha, _c.r, _c.g, _c.b, alpha], i * 8);
      }
      const lines = new THREE.BufferGeometry();
      lines.setAttribute("position", new THREE.BufferAttribute(ends, 3));
      lines.setAttribute("color", new THREE.BufferAttribute(colours, 4));
      this.group.add(new THREE.LineSegments(lines, this.materials.line));
      this.group.add(this.stage.label(t("write.scene.query"), [Q_X - 0.9, last, 0], "stage-label wr-label-q"));
    }
    this.group.add(this.stage.label(t("write.scene.keys"), [K_X, 0.55, 0], "stage-label wr-label"));
    this.group.add(this.stage.label(t("write.scene.values"), [V_X, 0.55, 0], "stage-label wr-label"));
    if (sink && rows > 2) this.group.add(this.stage.label(t("write.scene.sink"), [Q_X + 0.6, 0, 0], "stage-label wr-label-sink"));
    this.stage.look([0, -COLUMN / 2 + 0.5, 13], [0, Math.min(-COLUMN / 2, last / 2) + 0.3, 0]);
    this.stage.reframe();
  }

  /** Take the rows away (their geometry with them; the kept materials stay for the next update). */
  clear() {
    this.group.traverse((o) => {
      if (o === this.group) return;
      o.geometry?.dispose(); // the two instanced meshes share one: disposing twice is harmless
      if (o.isInstancedMesh) o.dispose();
      if (o.element) o.element.remove();
    });
    this.group.clear();
    this.stage.requestRender();
  }

  dispose() {
    this.clear();
    for (const m of Object.values(this.materials)) m.dispose();
    this.group.removeFromParent();
  }
}
