"""notebooks/walkthrough.ipynb runs from top to bottom in a fresh kernel and prints the seed's numbers."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Any

import pytest

# looked up, not imported: nbformat imports jsonschema, whose format checkers cost ~5 s, and every
# worker of the suite collects this file (the fixture imports them where the test runs)
_MISSING = [m for m in ("nbformat", "nbclient", "ipykernel", "pythreejs") if importlib.util.find_spec(m) is None]
pytestmark = pytest.mark.skipif(bool(_MISSING), reason=f"the notebook extra is missing: {', '.join(_MISSING)}")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "walkthrough.ipynb"


def seed_softmax(q: list[float], keys: list[list[float]]) -> list[float]:
    """The seed's own recipe, by hand: scores q·k / √d_k, then softmax."""
    scores = [sum(a * b for a, b in zip(q, k, strict=True)) / math.sqrt(len(q)) for k in keys]
    exps = [math.exp(s - max(scores)) for s in scores]
    return [e / sum(exps) for e in exps]


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Everything the notebook prints, run by nbclient in a kernel of this Python."""
    nbformat: Any = importlib.import_module("nbformat")  # untyped, as pytest.importorskip gave it
    nbclient: Any = importlib.import_module("nbclient")
    nb: Any = nbformat.read(NOTEBOOK, as_version=4)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    home = tmp_path_factory.mktemp("jupyter")
    with pytest.MonkeyPatch.context() as mp:
        for name in ("IPYTHONDIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR"):
            mp.setenv(name, str(home / name.lower()))  # nothing read or written outside the test's folder
        mp.delenv("JUPYTER_PATH", raising=False)
        client = nbclient.NotebookClient(
            nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "notebooks")}}
        )
        client.execute()  # raises CellExecutionError on any error, naming the cell
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            assert o["output_type"] != "error", o
            if o["output_type"] == "stream" and o["name"] == "stdout":
                out.append(o["text"])
    return "".join(out)


def test_every_step_prints_the_seeds_numbers(printed: str) -> None:
    k: list[list[float]] = [[0, 0], [3, 0], [0, 3], [0.5, 0], [1, 0.5]]
    v: list[list[float]] = [[0, 0], [1, 0], [0, 0.5], [0.3, 0], [0, 1]]
    w = seed_softmax([2, 0], k)  # "its"
    z = [sum(wj * vj[c] for wj, vj in zip(w, v, strict=True)) for c in range(2)]
    assert f"{w[1]:.3f}" == "0.895" and [f"{x:.3f}" for x in z] == ["0.903", "0.059"]  # the seed's text
    assert "scores of 'its': [0.0, 6.0, 0.0, 1.0, 2.0]" in printed
    assert "scaled scores of 'its': [0.0, 4.243, 0.0, 0.707, 1.414]" in printed
    assert "masked scores of 'its': [0.0, 4.243, 0.0, 0.707, 1.414]" in printed
    assert f"weights of 'its': {[round(x, 3) for x in w]}" in printed
    assert "'its' -> 'cat': 0.895" in printed
    assert "row sum: 1.000" in printed
    assert "z of 'its' = [0.903, 0.059]" in printed


def test_causal_splits_cat_50_50(printed: str) -> None:
    assert "masked scores of 'cat': [0.0, 0.0, None, None, None]" in printed
    assert "weights of 'cat': [0.5, 0.5, 0.0, 0.0, 0.0]" in printed
    assert "'cat' -> 'the': 0.500, 'cat' -> 'cat': 0.500  (50/50)" in printed


def test_a_real_sentence(printed: str) -> None:
    assert "all-MiniLM-L6-v2 layer 3 head 1" in printed
    assert "'it' -> 'animal': 0.677, 'it' -> 'street': 0.050" in printed
