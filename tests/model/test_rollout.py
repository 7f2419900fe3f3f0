"""Rollout and flow (app.model.rollout) against a float64 implementation written here, independently,
from transformers' own attentions; and POST /api/rollout end to end, its numbers and its refusals.

The reference below follows the paper's definitions with loops (no matrix product, no library): a
path sum for rollout, and Edmonds–Karp's shortest augmenting paths on a dict of residual capacities
for flow.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.model import rollout
from app.model.loader import Model, ModelHandle

SENTENCE = "The cat ate its fish."
TOL = 1e-6  # the budget; the same inputs give ≤ 1e-15 (rounding only)


# ---- the reference --------------------------------------------------------------------------


def ref_mixed(attentions: list[np.ndarray]) -> list[list[list[float]]]:
    """Per layer: the heads' mean, plus the identity, each row divided by its sum (lists of floats)."""
    out = []
    for layer in attentions:  # (H, n, n)
        h, n = layer.shape[0], layer.shape[-1]
        rows = []
        for i in range(n):
            row = [sum(float(layer[k, i, j]) for k in range(h)) / h + (1.0 if i == j else 0.0) for j in range(n)]
            total = sum(row)
            rows.append([x / total for x in row])
        out.append(rows)
    return out


def ref_rollout(a: list[list[list[float]]]) -> list[list[list[float]]]:
    """R_l[i][j] = Σ over paths i = k_l → k_(l−1) → … → k_0 = j of the product of their Â entries."""
    n = len(a[0])
    current = [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
    out = []
    for layer in a:
        current = [[sum(layer[i][k] * current[k][j] for k in range(n)) for j in range(n)] for i in range(n)]
        out.append(current)
    return out


def ref_max_flow(capacity: dict[Any, dict[Any, float]], source: Any, sink: Any) -> float:
    """Edmonds–Karp: augment along shortest residual paths until none is left."""
    residual = {u: dict(vs) for u, vs in capacity.items()}
    for u, vs in capacity.items():
        for v in vs:
            residual.setdefault(v, {}).setdefault(u, 0.0)
    total = 0.0
    while True:
        parent = {source: None}
        queue = deque([source])
        while queue and sink not in parent:
            u = queue.popleft()
            for v, r in residual[u].items():
                if r > 1e-15 and v not in parent:
                    parent[v] = u
                    queue.append(v)
        if sink not in parent:
            return total
        path, v = [], sink
        while parent[v] is not None:
            path.append((parent[v], v))
            v = parent[v]
        push = min(residual[u][v] for u, v in path)
        for u, v in path:
            residual[u][v] -= push
            residual[v][u] += push
        total += push


def ref_flow(a: list[list[list[float]]]) -> list[list[list[float]]]:
    """F_l[i][j]: the maximum flow from (l, i) to (0, j), edges (l, i) → (l − 1, j) of capacity Â_l[i][j];
    each row divided by its sum."""
    n = len(a[0])
    graph: dict[Any, dict[Any, float]] = {}
    for layer, rows in enumerate(a, start=1):
        for i in range(n):
            graph[(layer, i)] = {(layer - 1, j): rows[i][j] for j in range(n) if rows[i][j] > 0}
    out = []
    for layer in range(1, len(a) + 1):
        below = {u: vs for u, vs in graph.items() if u[0] <= layer}
        rows = []
        for i in range(n):
            row = [ref_max_flow(below, (layer, i), (0, j)) for j in range(n)]
            rows.append([x / sum(row) for x in row])
        out.append(rows)
    return out


def ref_through(a: list[list[list[float]]], focus: int) -> list[list[float]]:
    """through[l][k]: the maximum flow from (L, focus) down to (l, k), over layers l + 1 … L only; each row
    divided by its sum (through[L]: the focus itself)."""
    n, top = len(a[0]), len(a)
    graph = {(layer, i): {(layer - 1, j): rows[i][j] for j in range(n) if rows[i][j] > 0}
             for layer, rows in enumerate(a, start=1) for i in range(n)}  # fmt: skip
    out = []
    for bottom in range(top):
        above = {u: vs for u, vs in graph.items() if u[0] > bottom}
        row = [ref_max_flow(above, (top, focus), (bottom, k)) for k in range(n)]
        out.append([x / sum(row) for x in row])
    return [*out, [1.0 if k == focus else 0.0 for k in range(n)]]


def _hf_attentions(hf: Any, ids: list[int]) -> list[np.ndarray]:
    import torch

    with torch.no_grad():
        out = hf(torch.tensor([ids]), output_attentions=True)
    return [a[0].numpy().astype(np.float64) for a in out.attentions]  # L × (H, n, n)


@pytest.fixture(scope="module")
def minilm_attentions(minilm: ModelHandle, hf_minilm: Any) -> list[np.ndarray]:
    return _hf_attentions(hf_minilm, minilm.encode(SENTENCE).ids)


@pytest.fixture(scope="module")
def smollm_attentions(smollm: Model, hf_smollm: Any) -> list[np.ndarray]:
    return _hf_attentions(hf_smollm, smollm.tokenizer.encode(SENTENCE).ids)


# ---- the math against the reference ---------------------------------------------------------


@pytest.mark.parametrize("which", ["minilm", "smollm"])
def test_rollout_from_transformers_attentions(which: str, request: pytest.FixtureRequest) -> None:
    attentions = request.getfixturevalue(f"{which}_attentions")
    a_hat = rollout.mixed(np.stack(attentions))
    expected = ref_mixed(attentions)
    np.testing.assert_allclose(a_hat, np.array(expected), atol=TOL, rtol=0)
    ours = rollout.rollout(a_hat)
    assert ours.shape == (len(attentions), *attentions[0].shape[1:])
    np.testing.assert_allclose(ours, np.array(ref_rollout(expected)), atol=TOL, rtol=0)
    np.testing.assert_allclose(ours.sum(axis=-1), 1.0, atol=1e-12)
    if which == "smollm":
        assert np.all(np.triu(ours, 1) == 0)  # causal: nothing comes from a later token


@pytest.mark.parametrize("which", ["minilm", "smollm"])
def test_flow_from_transformers_attentions(which: str, request: pytest.FixtureRequest) -> None:
    attentions = request.getfixturevalue(f"{which}_attentions")
    expected = ref_mixed(attentions)
    a_hat = rollout.mixed(np.stack(attentions))
    ours = rollout.flow(a_hat)
    np.testing.assert_allclose(ours, np.array(ref_flow(expected)), atol=TOL, rtol=0)
    assert not np.allclose(ours, rollout.rollout(a_hat), atol=1e-2)  # flow is not rollout


@pytest.mark.parametrize("method", ["rollout", "flow"])
def test_the_focus_paths_end_at_the_focus_row(minilm_attentions: list[np.ndarray], method: rollout.Method) -> None:
    """through[0], the focus's share of each input token, is the focus's row of the last layer; through[l]
    is the method run over layers l + 1 … L only (the reference's, on those layers)."""
    a_hat = rollout.mixed(np.stack(minilm_attentions))
    n, focus = a_hat.shape[-1], 4
    through = rollout.through_layers(a_hat, method, focus)
    assert through.shape == (7, n)
    np.testing.assert_allclose(through[6], np.eye(n)[focus])
    np.testing.assert_allclose(through[0], rollout.layers_of(a_hat, method)[-1, focus], atol=1e-12)
    upper = ref_mixed(minilm_attentions[3:])  # layers 4 … 6: from the focus down to what layer 3 gives
    ref = ref_rollout(upper) if method == "rollout" else ref_flow(upper)
    np.testing.assert_allclose(through[3], ref[-1][focus], atol=TOL, rtol=0)


@pytest.mark.parametrize("causal", [False, True])
def test_the_focus_paths_of_64_tokens(causal: bool) -> None:
    """Past the tables' limit the answer is flow_through alone: at 64 tokens, six layers, a full and a
    causal mask, against the reference. Each token attends to itself and three others at random (a
    sparse attention keeps the reference's Edmonds–Karp to seconds; flow_through runs the same code on
    dense ones), so some paths are cut off: a token only a long way round reaches takes a small share."""
    rng = np.random.default_rng(64)
    n, layers, focus = 64, 6, 40
    weights = np.zeros((layers, 1, n, n))
    for layer in range(layers):
        for i in range(n):
            reach = i + 1 if causal else n
            weights[layer, 0, i, rng.choice(reach, size=min(3, reach), replace=False)] = rng.random(min(3, reach))
            weights[layer, 0, i, i] += 0.1
    weights /= weights.sum(axis=-1, keepdims=True)
    a_hat = rollout.mixed(weights)
    assert rollout.is_causal(a_hat) == causal
    ours = rollout.flow_through(a_hat, focus)
    expected = np.array(ref_through(ref_mixed(list(weights)), focus))
    np.testing.assert_allclose(ours, expected, atol=TOL, rtol=0)
    assert (np.count_nonzero(ours[0][focus + 1 :]) == 0) == causal  # causal: nothing from a later token
    assert np.count_nonzero(ours[0]) > 20  # the paths fan out over much of the sentence


def test_flow_is_bounded_by_its_thinnest_edge() -> None:
    """Two layers over two tokens, by hand: from token 1 the only way to token 0 crosses one edge of
    capacity 0.1 then one of 0.9, so its flow there is 0.1, where rollout multiplies the paths."""
    a_hat = np.array([[[1.0, 0.0], [0.1, 0.9]], [[1.0, 0.0], [0.5, 0.5]]])
    f = rollout.flow(a_hat)
    # layer 2, token 1 → token 0: paths 1→0→0 (0.5 then 1.0) and 1→1→0 (0.5 then 0.1): 0.5 + 0.1 = 0.6;
    # → token 1: only 1→1→1 (0.5 then 0.9): 0.5; the row divided by its sum 1.1
    np.testing.assert_allclose(f[1, 1], [0.6 / 1.1, 0.5 / 1.1], atol=1e-12)
    np.testing.assert_allclose(rollout.rollout(a_hat)[1, 1], [0.5 + 0.05, 0.45], atol=1e-12)


def test_the_focus_paths_through_causal_layers(smollm_attentions: list[np.ndarray]) -> None:
    """SmolLM2's own attention (its last 15 layers, causal, 6 tokens): flow_through's windows (sinks 0 … 3
    over tokens 0 … 5, sinks 4 and 5 over tokens 4 and 5) against the reference's flows over every token."""
    upper = smollm_attentions[15:]
    ours = rollout.flow_through(rollout.mixed(np.stack(upper)), 5)
    np.testing.assert_allclose(ours, np.array(ref_through(ref_mixed(upper), 5)), atol=TOL, rtol=0)
    assert np.count_nonzero(ours[:15]) == 15 * 6  # every token under every layer takes a share


def test_focus_work_counts_the_edges_flow_through_runs_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """The limit reads focus_work: here, the edges of every graph flow_through runs a maximum flow on, as
    igraph holds them, on a dense attention (every capacity above 0), with both masks."""
    import igraph

    counted: list[int] = []
    maxflow_value = igraph.Graph.maxflow_value

    def counting(g: Any, *args: Any) -> float:
        counted.append(g.ecount())
        return float(maxflow_value(g, *args))

    monkeypatch.setattr(igraph.Graph, "maxflow_value", counting)
    rng = np.random.default_rng(5)
    layers, n = 5, 11
    for causal in (False, True):
        weights = rng.random((layers, 2, n, n))
        weights = np.tril(weights) if causal else weights
        counted.clear()
        rollout.flow_through(rollout.mixed(weights / weights.sum(axis=-1, keepdims=True)), n - 1)
        assert len(counted) == (layers - 1) * n  # one flow a token under every layer but the last
        assert sum(counted) == rollout.focus_work(layers, n, causal)
    # by hand: MiniLM at 64 tokens, each of the 5 bottoms' 64 flows: 64 edges from the focus, the layers in
    # between (0 … 4 of them: 10 in all) of 64² edges, and 1 … 5 layers of 64 edges into the sink
    assert rollout.focus_work(6, 64, False) == 64 * (5 * 64 + 10 * 64 * 64 + 15 * 64)
    assert rollout.focus_work(30, 64, True) < 64 * 2080 * 465 / 2.9  # each flow over every token: three times
    assert rollout.flow_work(6, 8, False) == 64 * 64 * 21 + rollout.focus_work(6, 8, False)  # + the tables'
    assert rollout.flow_work(30, 8, True) == 36 * 36 * 465 + rollout.focus_work(30, 8, True)


# ---- POST /api/rollout ------------------------------------------------------------------------


def test_the_api_answers_rollout_as_the_reference(api: TestClient, minilm_attentions: list[np.ndarray]) -> None:
    """End to end: the server's own forward, its float64 weights, rounded to 6 decimals, against the
    reference on transformers' float32 attentions (the two models' weights differ by ~1e-7 here)."""
    r = api.post("/api/rollout", json={"sentence": SENTENCE, "focus": 4})
    assert r.status_code == 200, r.text
    a = r.json()
    assert a["tokens"] == ["[CLS]", "the", "cat", "ate", "its", "fish", ".", "[SEP]"]
    assert a["method"] == "rollout" and a["mask"] == "full" and a["decimals"] == 6
    expected = np.array(ref_rollout(ref_mixed(minilm_attentions)))
    np.testing.assert_allclose(np.array(a["layers"]), expected, atol=2e-6, rtol=0)
    through = np.array(a["focus_paths"]["through"])
    np.testing.assert_allclose(through[0], expected[-1, 4], atol=2e-6)
    edges = a["focus_paths"]["edges"]
    top = [e for e in edges if e[0] == 6]
    assert top[0][:2] == [6, 4] and top[0][3] >= top[-1][3]  # the focus's own edges, largest first
    # the edges of a layer carry what the layer below holds (those under PATH_MIN left out)
    for layer in (6, 3):
        below = np.zeros(len(a["tokens"]))
        for _, _, b, share in (e for e in edges if e[0] == layer):
            below[int(b)] += share
        assert np.all(below <= through[layer - 1] + 1e-5)
        assert below.sum() > 0.9 * through[layer - 1].sum()


def test_the_api_answers_flow(api: TestClient) -> None:
    r = api.post("/api/rollout", json={"sentence": SENTENCE, "method": "flow", "focus": 2})
    assert r.status_code == 200, r.text
    a = r.json()
    layers = np.array(a["layers"])
    np.testing.assert_allclose(layers.sum(axis=-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.array(a["focus_paths"]["through"])[0], layers[-1, 2], atol=1e-6)
    assert a["layers_omitted"] is None
    assert a["flow_table_tokens"] == 26 and a["flow_max_tokens"] == 64  # all-MiniLM-L6-v2: 6 layers, full mask


def test_a_long_flow_answers_the_focus_paths_only(api: TestClient) -> None:
    """Past the tables' 26 tokens: no table per layer, and why; the focus (by default the last token)
    and its paths, the same as flow_through's on the answer's own layers."""
    r = api.post("/api/rollout", json={"sentence": "x " * 38, "method": "flow"})
    assert r.status_code == 200, r.text
    a = r.json()
    n = len(a["tokens"])
    assert n == 40 and a["layers"] is None and a["focus"] == n - 1
    assert "affordable up to 26 tokens" in a["layers_omitted"] and "has 40" in a["layers_omitted"]
    through = np.array(a["focus_paths"]["through"])
    assert through.shape == (7, n)
    np.testing.assert_allclose(through.sum(axis=-1), 1.0, atol=1e-5)
    a_hat = rollout.mixed(np.array(a["attention"])[:, None])  # the answer's mean weights, rounded to 1e-6
    np.testing.assert_allclose(through, rollout.flow_through(a_hat, n - 1), atol=1e-5)
    schema = api.get("/openapi.json").json()["components"]["schemas"]["RolloutResponse"]["properties"]
    assert {"layers_omitted", "flow_table_tokens"} <= schema.keys()
    assert {"type": "null"} in schema["layers"]["anyOf"]


def test_the_decoder_and_the_causal_mask(api: TestClient) -> None:
    r = api.post("/api/rollout", json={"sentence": SENTENCE, "model": "smollm2-135m", "focus": 5})
    assert r.status_code == 200, r.text
    layers = np.array(r.json()["layers"])
    assert layers.shape == (30, 6, 6) and np.all(np.triu(layers, 1) == 0)
    assert r.json()["flow_table_tokens"] == 16 and r.json()["flow_max_tokens"] == 64
    causal = api.post("/api/rollout", json={"sentence": SENTENCE, "mask": "causal"}).json()
    full = api.post("/api/rollout", json={"sentence": SENTENCE, "mask": "full"}).json()
    assert causal["mask"] == "causal" and np.all(np.triu(np.array(causal["layers"]), 1) == 0)
    assert np.array(full["layers"])[-1, 0, -1] > 0.005  # full: [CLS] takes in [SEP]


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"sentence": "x " * 64, "method": "flow", "model": "smollm2-135m"}, "sentence", ["65 tokens", "64"]),
        ({"sentence": "word " * 70}, "sentence", ["72 tokens", "64"]),
        ({"sentence": "a b", "focus": 4}, "focus", ["0 … 3", "4 tokens"]),
        ({"sentence": "a b", "focus": -1}, "focus", ["greater than or equal to 0"]),
        ({"sentence": "a b", "method": "paths"}, "method", ["'rollout' or 'flow'"]),
        ({"sentence": "a b", "mask": "full", "model": "smollm2-135m"}, "mask", ["causal"]),
        ({"sentence": "a b", "model": "gpt-9"}, "model", ["no model 'gpt-9'"]),
        ({"sentence": "   "}, "sentence", ["empty"]),
        ({"sentence": "a", "layers": 3}, "layers", ["Extra inputs"]),
        ({}, "sentence", ["Field required"]),
    ],
)
def test_bad_input_is_a_422_naming_the_field(
    api: TestClient, body: dict[str, Any], field: str, words: list[str]
) -> None:
    r = api.post("/api/rollout", json=body)
    assert r.status_code == 422, r.text
    item = r.json()["detail"][0]
    assert item["loc"] == ["body", field]
    for w in words:
        assert w in item["msg"], item["msg"]
