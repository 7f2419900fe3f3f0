"""Attention through all layers: rollout and flow, in float64.

References:
  Abnar & Zuidema, "Quantifying Attention Flow in Transformers" (ACL 2020), §3, and the authors'
  code (attention_flow: compute_joint_attention, compute_flows). A layer's attention A is the mean
  of its heads' weights; the residual connection carries each token on past the layer, so the
  paper mixes in the identity: Â = 0.5·A + 0.5·I, each row renormalised to sum to 1.

  rollout   R_l = Â_l · Â_(l−1) ··· Â_1 (the first layer applied first): row i of R_l says how much
            of token i after layer l comes from each input token, following every path at once.
  flow      the layers as a graph: node (l, i) is token i after layer l (l = 0: the input); an edge
            runs from (l, i) down to (l − 1, j) with capacity Â_l[i, j]. F_l[i, j] is the maximum
            flow from (l, i) to (0, j); each row is then divided by its sum, as the paper's code
            does. A path's amount is held back by the thinnest edge it shares with other paths,
            which rollout's products never do.

Shapes: weights (L, H, n, n) every layer's and head's attention; mixed, rollout and flow (L, n, n),
index l − 1 holding layer l. The focus's paths: through (L + 1, n), through[l][k] the share of the
focused token (after the last layer) that passes through token k after layer l (through[L] is the
focus itself, through[0] the input tokens). For rollout through[l] is row `focus` of Â_L ··· Â_(l+1);
for flow, the maximum flow from the focus down to each (l, k), the row divided by its sum.

Max-flow is igraph's (push-relabel in C, on float64 capacities). Every layer's table is n² · L
maximum flows of up to L · n² edges each (flow_work counts their edges); the focus's paths alone are
n · L flows (focus_work), so a caller can answer the paths of a sentence too long for the tables. Each
of those runs on the part of the graph its paths can use (flow_through): under a causal mask about a
third of the edges, and half the time of a flow over every token (bench/flow.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import numpy as np

Method = Literal["rollout", "flow"]
SINKS_PER_WINDOW = 4  # causal flows sharing a graph: the fewer graphs, the more edges without flow (measured best)
METHODS: tuple[Method, ...] = ("rollout", "flow")


def mixed(weights: np.ndarray) -> np.ndarray:
    """Â per layer (L, n, n): the heads' mean weights (L, H, n, n) → 0.5·A + 0.5·I, rows renormalised."""
    a = np.asarray(weights, dtype=np.float64).mean(axis=1)  # (L, n, n)
    a_hat = 0.5 * a + 0.5 * np.eye(a.shape[-1])  # (L, n, n)
    out: np.ndarray = a_hat / a_hat.sum(axis=-1, keepdims=True)
    return out


def rollout(a_hat: np.ndarray) -> np.ndarray:
    """R (L, n, n): R[l − 1] = Â_l ··· Â_1 for each layer l = 1 … L."""
    out = np.empty_like(a_hat)
    out[0] = a_hat[0]
    for layer in range(1, a_hat.shape[0]):
        out[layer] = a_hat[layer] @ out[layer - 1]  # (n, n): this layer's mixing of what came before
    return out


def rollout_through(a_hat: np.ndarray, focus: int) -> np.ndarray:
    """through (L + 1, n): row `focus` of Â_L ··· Â_(l+1) for l = L … 0 (through[L] one-hot)."""
    layers, n = a_hat.shape[0], a_hat.shape[-1]
    through = np.zeros((layers + 1, n))
    through[layers, focus] = 1.0
    for layer in range(layers, 0, -1):
        through[layer - 1] = through[layer] @ a_hat[layer - 1]  # (n,): carried down through layer `layer`
    return through


def is_causal(a_hat: np.ndarray) -> bool:
    """Whether no token mixes in a later one (a causal mask): every Â_l lower-triangular."""
    return not np.triu(a_hat, 1).any()


def _graph(a_hat: np.ndarray, top: int, bottom: int = 0, tokens: int | None = None) -> tuple[Any, list[float]]:
    """The graph of layers bottom … top over the first `tokens` tokens (all by default) as igraph holds
    it, and its capacities: node (l, i) is vertex (l − bottom)·m + i (m tokens); an edge (l, i) → (l − 1, j)
    for every Â_l[i, j] > 0."""
    import igraph

    m = a_hat.shape[-1] if tokens is None else tokens
    sources, targets, capacity = [], [], []
    for layer in range(bottom + 1, top + 1):
        i, j = np.nonzero(a_hat[layer - 1, :m, :m] > 0)  # a causal layer has no edge to a later token
        sources.append((layer - bottom) * m + i)
        targets.append((layer - 1 - bottom) * m + j)
        capacity.append(a_hat[layer - 1, i, j])
    edges = np.stack([np.concatenate(sources), np.concatenate(targets)], axis=1)  # (E, 2)
    g = igraph.Graph(n=(top - bottom + 1) * m, edges=edges.tolist(), directed=True)
    return g, np.concatenate(capacity).tolist()


def flow(a_hat: np.ndarray) -> np.ndarray:
    """F (L, n, n): F[l − 1][i, j] = the maximum flow from (l, i) to (0, j), each row divided by its sum.

    A row's sum is never 0: the residual half of Â carries at least 0.5 of every node straight down.
    Under a causal mask token i reaches tokens 0 … i only: its flows to later tokens are 0."""
    layers, n = a_hat.shape[0], a_hat.shape[-1]
    causal = is_causal(a_hat)
    out = np.zeros((layers, n, n))
    for layer in range(1, layers + 1):
        g, capacity = _graph(a_hat, layer)  # layers 0 … layer: the ones a node of `layer` reaches
        for i in range(n):
            reached = i + 1 if causal else n
            out[layer - 1, i, :reached] = [g.maxflow_value(layer * n + i, j, capacity) for j in range(reached)]
    out /= out.sum(axis=-1, keepdims=True)
    return out


def flow_through(a_hat: np.ndarray, focus: int) -> np.ndarray:
    """through (L + 1, n): the maximum flow from (L, focus) down to each (l, k), each row divided by its sum.

    Each flow runs over a small graph that holds every path from the focus down to its sink (b, k):
      - the top layer's edges are the focus's own (no other token after the last layer is on a path);
      - the bottom layer's are the ones into k, as edges into one sink vertex; the layers in between
        hold the tokens of a window;
      - under a causal mask each layer's edges go to tokens ≤ the node's own, so a path from the focus
        down to k only visits tokens k … focus: the window of sinks low … low + 3 is tokens low … focus
        (a token below k is on no path to k: it adds edges to the graph, never flow). With a full mask
        the window is every token, for every sink.
    A window's graph grows one layer down at a time (bottom L − 2 first); its sinks differ only in the
    capacities of the edges into the sink. The single layer under the focus is one edge: Â_L[focus, k]."""
    layers, n = a_hat.shape[0], a_hat.shape[-1]
    causal = is_causal(a_hat)
    m = focus + 1 if causal else n  # under a causal mask the focus reaches tokens 0 … focus only
    through = np.zeros((layers + 1, n))
    through[layers, focus] = 1.0
    through[layers - 1, :m] = a_hat[layers - 1, focus, :m]
    windows = [(low, range(low, min(low + SINKS_PER_WINDOW, m))) for low in range(0, m, SINKS_PER_WINDOW)]
    if not causal:
        windows = [(0, range(m))]  # (the window's lowest token, its sinks)
    for low, sinks in windows:
        for bottom, g, capacity, into_sink in _window(a_hat, focus, low, m, causal):
            for k in sinks:
                capacity[into_sink:] = a_hat[bottom, low:m, k].tolist()  # (low … m − 1, bottom + 1) → (bottom, k)
                through[bottom, k] = g.maxflow_value(0, 1, capacity)
    through[:layers] /= through[:layers].sum(axis=-1, keepdims=True)
    return through


def _window(
    a_hat: np.ndarray, focus: int, low: int, m: int, causal: bool
) -> Iterator[tuple[int, Any, list[float], int]]:
    """The graphs from (L, focus) down to a sink below layer L − 1 … 1, over tokens low … m − 1, as igraph
    holds them: vertex 0 the focus, vertex 1 the sink, then w = m − low vertices a layer (L − 1 first).
    Yields (bottom, graph, capacities, the first edge into the sink) for bottom = L − 2 … 0: the graph
    holds layers L − 1 … bottom + 1, its last w edges run from layer bottom + 1 into the sink (their
    capacities are the caller's: a column of Â_(bottom + 1)), and the sink's earlier edges are kept at 0."""
    import igraph

    layers, w = a_hat.shape[0], m - low
    i, j = np.tril_indices(w) if causal else np.divmod(np.arange(w * w), w)  # one layer's edges, in the window
    inner = a_hat[1 : layers - 1, low + i, low + j]  # (L − 2, edges): Â_2 … Â_(L−1) on them
    tokens = np.arange(w)
    g = igraph.Graph(n=2, directed=True)
    capacity: list[float] = []
    for bottom in range(layers - 2, -1, -1):
        first = g.vcount()  # layer bottom + 1's vertices: first … first + w − 1
        g.add_vertices(w)
        if bottom == layers - 2:  # the focus's own edges: (L, focus) → (L − 1, low + t), Â_L
            cap, source, target = a_hat[layers - 1, focus, low:m], np.zeros(w, dtype=np.int64), first + tokens
        else:  # (bottom + 2, low + i) → (bottom + 1, low + j), Â_(bottom + 2)
            cap, source, target = inner[bottom], first - w + i, first + j
        keep = cap > 0
        if capacity:
            capacity[-w:] = [0.0] * w  # the sink's edges from the layer above: no longer on a path
        into_sink = len(capacity) + int(np.count_nonzero(keep))
        into_layer = zip(source[keep].tolist(), target[keep].tolist(), strict=True)
        g.add_edges([*into_layer, *((first + t, 1) for t in range(w))])  # then layer bottom + 1 → the sink
        capacity += cap[keep].tolist()
        capacity += [0.0] * w
        yield bottom, g, capacity, into_sink


def _pairs(layers: int, n: int, causal: bool) -> tuple[int, int]:
    """One layer's edges (n², or n(n + 1)/2 under a causal mask: to tokens j ≤ i only), and Σ over the
    layers of the layers below (or above) them, L(L + 1)/2: how often a flow crosses a layer."""
    return (n * (n + 1) // 2 if causal else n * n), layers * (layers + 1) // 2


def focus_work(layers: int, n: int, causal: bool) -> int:
    """Edges the maximum flows of flow_through() run over, counted once per flow as it builds its graphs:
    a window of w tokens, for each bottom layer b = L − 2 … 0, has w edges from the focus, L − 2 − b
    layers of w(w + 1)/2 edges (w² with a full mask) and L − 1 − b layers of w edges into the sink (the
    one in use and those kept at 0), for each of its sinks. Causal: a window of n − low tokens for the
    sinks low … low + 3 (the focus counted as the last token); full: one window of n tokens, n sinks.
    About 10⁷ edges take 1.1 s of one core here (docs/inside.md)."""
    d = layers - 1  # bottoms L − 2 … 0: the one layer under the focus is an edge, not a flow

    def window(w: int) -> int:
        pairs = w * (w + 1) // 2 if causal else w * w
        return d * w + pairs * d * (d - 1) // 2 + w * d * (d + 1) // 2

    if not causal:
        return n * window(n)
    return sum(min(SINKS_PER_WINDOW, n - low) * window(n - low) for low in range(0, n, SINKS_PER_WINDOW))


def flow_work(layers: int, n: int, causal: bool) -> int:
    """Edges the maximum flows of flow() and flow_through() run over, counted once per flow: every
    node's flows to the input tokens it reaches (n² per layer, n(n + 1)/2 under a causal mask), each
    over the graph of the layers below it, and the focus's (focus_work)."""
    edges, pairs = _pairs(layers, n, causal)
    flows = edges  # from one layer's nodes to the input tokens they reach: as many as a layer's edges
    return flows * edges * pairs + focus_work(layers, n, causal)


def through_layers(a_hat: np.ndarray, method: Method, focus: int) -> np.ndarray:
    return rollout_through(a_hat, focus) if method == "rollout" else flow_through(a_hat, focus)


def layers_of(a_hat: np.ndarray, method: Method) -> np.ndarray:
    return rollout(a_hat) if method == "rollout" else flow(a_hat)
