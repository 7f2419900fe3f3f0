"""A model's facts (layers, heads, key/value heads) come from two requests: GET /api/models' entry
of a model picked, and GET /api/model, which answers about the server's default model and names no
id. An answer that arrives after another model was picked must leave the page's model alone: run in
Node on a real state through the real store (on a slow start, a poll about the default model came
back after SmolLM2 was picked and the head picker lost its groups of key/value heads)."""

from __future__ import annotations

from tests.page.node import run_in_node

CHECK = """
import { actions } from "ACTIONS";
import { createState } from "STATE";
import { createStore } from "STORE";
import { asInfo } from "MODEL";
const store = createStore(createState("the-cat-ate-its-fish"), actions);
const minilm = { id: "all-minilm-l6-v2", name: "all-MiniLM-L6-v2", architecture: "bert", layers: 6, heads: 12,
  kv_heads: 12, d_k: 32, causal: false, default: true };
const smollm = { id: "smollm2-135m", name: "SmolLM2-135M-Instruct", architecture: "llama", layers: 30, heads: 9,
  kv_heads: 3, d_k: 64, causal: true, default: false };
// GET /api/model's answer (the default model's, no id)
const served = { name: "all-MiniLM-L6-v2", kind: "bert", layers: 6, heads: 12, head_size: 32, mask: "full" };
const seen = [];
const step = (what, changed) => seen.push({ what, changed: changed !== false, model: store.state.model?.name ?? null,
  kv: store.state.model?.kv_heads ?? null, picked: store.state.modelId });
store.act.modelsListed([minilm, smollm]);
step("first answer", store.act.modelKnown(served));
step("pick SmolLM2", store.act.modelChosen("smollm2-135m", asInfo(smollm)));
step("late default answer", store.act.modelKnown(served));
step("its own answer", store.act.modelKnown({ ...asInfo(smollm), loaded: true }));
step("back to the default", store.act.modelChosen("all-minilm-l6-v2", asInfo(minilm)));
step("late SmolLM2 answer", store.act.modelKnown(asInfo(smollm)));
step("the default's entry", store.act.modelKnown(asInfo(minilm)));
step("the default's answer", store.act.modelKnown(served));
console.log(JSON.stringify(seen));
"""


def test_a_late_answer_about_another_model_changes_nothing() -> None:
    out = run_in_node(CHECK, ACTIONS="actions.js", STATE="state.js", STORE="store.js", MODEL="model.js")
    table = [(s["what"], s["changed"], s["model"], s["kv"], s["picked"]) for s in out]
    assert table == [
        ("first answer", True, "all-MiniLM-L6-v2", None, None),
        ("pick SmolLM2", True, "SmolLM2-135M-Instruct", 3, "smollm2-135m"),
        ("late default answer", False, "SmolLM2-135M-Instruct", 3, "smollm2-135m"),
        ("its own answer", True, "SmolLM2-135M-Instruct", 3, "smollm2-135m"),
        ("back to the default", True, "all-MiniLM-L6-v2", 12, None),
        ("late SmolLM2 answer", False, "all-MiniLM-L6-v2", 12, None),
        ("the default's entry", True, "all-MiniLM-L6-v2", 12, None),
        ("the default's answer", True, "all-MiniLM-L6-v2", None, None),
    ]
