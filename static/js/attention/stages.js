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

export const STEPS = [
  {
    id: "score",
    title: "Score: how well does each key answer the query?",
    short: "score",
    stage: "scores",
    links: "relative",
    arith: "dot",
    text:
      "Every word asks a question with its query q and advertises itself with its key k, " +
      "like the question you bring to a library and the label on each book's spine. " +
      "The score is the dot product q·k: multiply matching coordinates and add them up. " +
      "Arrows that point the same way give a large score, perpendicular arrows give zero, " +
      "and arrows that point opposite ways give a negative score.",
  },
  {
    id: "scale",
    title: "Scale: divide by √d_k",
    short: "scale",
    stage: "scaled",
    links: "relative",
    arith: "scale",
    text:
      "The more coordinates q and k have, the more products a dot product adds up, so the scores " +
      "spread wider, and very big scores would make the next step pick a single winner and ignore " +
      "the rest. Dividing every score by √d_k (the square root of d_k, the number of coordinates " +
      "of each query and key) keeps them in a moderate range, however many coordinates there are.",
  },
  {
    id: "mask",
    title: "Mask: which keys may the query see?",
    short: "mask",
    stage: "masked",
    masked: true,
    links: "relative",
    arith: "mask",
    text: {
      full:
        "With the full mask (as in BERT), every word may look at every other word, before and " +
        "after it, so nothing changes here. Switch to causal (press M) to see a GPT-style model.",
      causal:
        "With the causal mask (as in GPT), a word may only look at itself and the words before " +
        "it: the scores of later words are replaced by −∞ before softmax, so their links vanish " +
        "and they will get a weight of exactly 0.",
    },
  },
  {
    id: "softmax",
    title: "Softmax: turn scores into shares that add up to 1",
    short: "softmax",
    stage: "weights",
    links: "weight",
    arith: "softmax",
    masked: true,
    rowSum: true,
    text:
      "Softmax takes one query's row of scores, raises e to each of them and divides by their " +
      "total. Every weight comes out positive, bigger scores get much bigger shares, −∞ gets " +
      "exactly 0, and each row sums to 1: it says how the query splits its attention over the keys.",
  },
  {
    id: "mix",
    title: "Mix: blend the values by those weights",
    short: "mix",
    stage: "weights",
    links: "weight",
    arith: "mix",
    masked: true,
    output: true,
    text:
      "Finally each word collects the values v, the content behind each key, in proportion to " +
      "its weights: z = Σ weight × v. The new vector z mostly carries the value of the words it " +
      "attended to most.",
  },
];

export const STEP_IDS = STEPS.map((s) => s.id);

export function stepById(id) {
  return STEPS.find((s) => s.id === id) ?? STEPS[0];
}

export function stepText(step, mask) {
  return typeof step.text === "string" ? step.text : step.text[mask];
}
