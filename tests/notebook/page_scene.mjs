// The page's own scene pieces, run in Node on answers read from stdin, for the notebook's parity
// test (tests/notebook/test_parity.py): what static/js would draw, as plain JSON.
//
//   node tests/notebook/page_scene.mjs < answers.json
//
// For each answer: the layout (static/js/scene/layout.js) with the drawing the page gives it
// (projection.js), and for every step and every focused query the links (scene/links.js: radius,
// colour and label of each) and the worked arithmetic (arithmetic.js). The scene's objects are
// three.js objects built in Node; only the labels need a DOM element, and a stand-in does.

import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const page = (path) => import(pathToFileURL(resolve(root, "static/js", path)).href);

globalThis.document = {
  createElement: () => ({
    style: {},
    dataset: {},
    className: "",
    textContent: "",
    classList: { add() {} },
    setAttribute() {},
    remove() {},
  }),
};

const { layout } = await page("scene/layout.js");
const { drawing } = await page("projection.js");
const { AttentionLinks } = await page("scene/links.js");
const { arithmetic } = await page("arithmetic.js");
const { STEPS } = await page("attention/stages.js");

const answers = JSON.parse(readFileSync(0, "utf8"));
const out = answers.map((answer) => {
  const data = { ...answer, drawn: drawing(answer) }; // as the page shows an answer
  const lay = layout(data);
  const steps = {};
  for (const step of STEPS) {
    steps[step.id] = data.tokens.map((_, focus) => {
      const links = new AttentionLinks(lay.n);
      links.update({ data, lay, step, focus, hover: null });
      return {
        radius: links.radiusTo,
        colour: links.colourTo.map((c) => `#${c.getHexString()}`),
        labels: Object.fromEntries(links.labels.map((o) => [o.element.dataset.testid.split("-").pop(), o.element.textContent])),
        arithmetic: arithmetic(step, data, focus),
      };
    });
  }
  const d = data.drawn;
  return {
    xs: lay.xs,
    z: lay.z,
    scale: lay.scale,
    valueScale: lay.valueScale,
    drawn: { q: d.q, k: d.k, v: d.v, output: d.output },
    steps,
  };
});
process.stdout.write(JSON.stringify(out));
