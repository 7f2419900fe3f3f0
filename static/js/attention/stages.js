// The five stages of one attention head, as data (the `steps` chapter walks them; the `masks`
// chapter shows three of them). Each stage names the API stage it shows and how the scene maps that
// stage's numbers onto links; table.js, scene/ and arithmetic.js read these fields and have
// no step-specific code paths beyond them.
//
//   stage      which array of the API response the table and the links show
//   links      "relative": thickness and colour follow the value's place between the row's
//              smallest and largest visible value (scores can be any size or sign);
//              "weight": thickness and colour follow the value itself (0..1, a share)
//   masked     the mask has been applied: hidden keys look hidden (hatched cells, no link)
//   rowSum     show each row's sum (softmax makes it 1)
//   output     show the output z (table column and arrow)
//   arith      which kind of worked arithmetic the panel builds for the focused query
//
// Their words (title, short name, text) are in the catalogs, read when drawn (i18n.js).

import { t } from "../i18n.js";

/** Stage `id` with `fields`, and its words as getters (read when drawn, in the page's language). */
function stage(id, fields) {
  return Object.defineProperties(
    { id, ...fields },
    {
      title: { enumerable: true, get: () => t(`chapter.steps.${id}.title`) },
      short: { enumerable: true, get: () => t(`chapter.steps.${id}.short`) },
    },
  );
}

export const STEPS = [
  stage("score", { stage: "scores", links: "relative", arith: "dot" }),
  stage("scale", { stage: "scaled", links: "relative", arith: "scale" }),
  stage("mask", { stage: "masked", masked: true, links: "relative", arith: "mask" }),
  stage("softmax", { stage: "weights", links: "weight", arith: "softmax", masked: true, rowSum: true }),
  stage("mix", { stage: "weights", links: "weight", arith: "mix", masked: true, output: true }),
];

export const STEP_IDS = STEPS.map((s) => s.id);

export function stepById(id) {
  return STEPS.find((s) => s.id === id) ?? STEPS[0];
}

/** A stage's explanation under `mask` ("full" or "causal": only the mask step's differs). */
export function stepText(step, mask) {
  return t(`chapter.steps.${step.id}.text`, { mask });
}
