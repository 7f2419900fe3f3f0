"""Only what a client asks for: stages, float32 frames, and CSV / JSON downloads of one stage."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app import frame
from app.attention import STAGES, attention
from app.examples import EXAMPLES
from tests.budget import examples

CAT = EXAMPLES["the-cat-ate-its-fish"]
CAT_BODY: dict[str, Any] = {"tokens": list(CAT.tokens), "q": CAT.q.tolist(), "k": CAT.k.tolist(), "v": CAT.v.tolist()}
FRAME = {"accept": frame.FRAME_MEDIA_TYPE}
RNG = np.random.default_rng(3)
Q3, K3, V3 = RNG.normal(size=(3, 70, 8)), RNG.normal(size=(3, 70, 8)), RNG.normal(size=(3, 70, 5))  # streamed


def test_stages_select_the_arrays_in_json(client: TestClient) -> None:
    r = client.post("/api/attention", json={**CAT_BODY, "stages": ["output", "weights"]})
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"tokens", "mask", "d_k", "weights", "output"}
    want = attention(CAT.q, CAT.k, CAT.v)
    assert body["weights"] == want.weights.tolist() and body["output"] == want.output.tolist()


@pytest.mark.parametrize("body", [CAT_BODY, {"q": Q3.tolist(), "k": K3.tolist(), "v": V3.tolist()}])
@pytest.mark.parametrize("mask", ["full", "causal"])
def test_stages_and_float32_in_frames(client: TestClient, body: dict[str, Any], mask: str) -> None:
    q, k, v = (np.array(body[n]) for n in ("q", "k", "v"))
    want = attention(q, k, v, mask)  # type: ignore[arg-type]
    for stages in (["weights"], ["scaled", "masked"], ["q", "weights", "output"], ["v"]):
        for dtype in ("float64", "float32"):
            r = client.post(
                "/api/attention", json={**body, "mask": mask, "stages": stages, "dtype": dtype}, headers=FRAME
            )
            assert r.status_code == 200 and r.headers["content-type"] == frame.FRAME_MEDIA_TYPE
            assert int(r.headers["content-length"]) == len(r.content)
            fields, arrays = frame.decode(r.content)
            assert set(arrays) == set(stages) and fields["mask"] == mask
            for name in stages:
                expected = {"q": q, "k": k, "v": v, **want.as_dict()}[name]
                assert arrays[name].dtype == np.dtype(dtype)
                np.testing.assert_array_equal(arrays[name], expected.astype(dtype))


def test_float32_and_unknown_stages_are_refused_by_name(client: TestClient) -> None:
    for body, loc in (
        ({**CAT_BODY, "dtype": "float32"}, ["body", "dtype"]),  # JSON is float64
        ({**CAT_BODY, "dtype": "float16"}, ["body", "dtype"]),
        ({**CAT_BODY, "stages": ["weights", "softmax"]}, ["body", "stages", 1]),
        ({**CAT_BODY, "stages": []}, ["body", "stages"]),
    ):
        r = client.post("/api/attention", json=body)
        assert r.status_code == 422 and r.json()["detail"][0]["loc"] == loc, r.text
    r = client.post("/api/attention?format=xml", json=CAT_BODY)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "format"]
    r = client.post("/api/attention?format=csv&stage=z", json=CAT_BODY)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "stage"]


def read_csv(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def cells(rows: list[list[str]], first: int) -> np.ndarray:
    return np.array([[-math.inf if x == "" else float(x) for x in row[first:]] for row in rows[1:]])


@pytest.mark.parametrize("stage", STAGES)
def test_csv_of_a_stage_equals_the_json_answer(client: TestClient, stage: str) -> None:
    body = {**CAT_BODY, "mask": "causal"}
    r = client.post(f"/api/attention?format=csv&stage={stage}", json=body)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert r.headers["content-disposition"] == f'attachment; filename="attention-{stage}.csv"'
    rows = read_csv(r.text)
    want = client.post("/api/attention", json=body).json()[stage]
    first = ["query", *CAT.tokens] if stage != "output" else ["token", "d0", "d1"]
    assert rows[0] == first and [row[0] for row in rows[1:]] == list(CAT.tokens)
    np.testing.assert_array_equal(cells(rows, 1), [[-math.inf if x is None else x for x in row] for row in want])


def test_csv_of_three_d_stages_has_a_head_column(client: TestClient) -> None:
    body = {"q": Q3[:, :6].tolist(), "k": K3[:, :6].tolist(), "v": V3[:, :6].tolist()}
    r = client.post("/api/attention?format=csv", json=body)  # the default stage: weights
    rows = read_csv(r.text)
    assert rows[0] == ["head", "query", *[f"t{i}" for i in range(6)]] and len(rows) == 1 + 3 * 6
    assert [row[0] for row in rows[1:]] == [str(h) for h in range(3) for _ in range(6)]
    want = np.array(client.post("/api/attention", json=body).json()["weights"])
    np.testing.assert_array_equal(cells(rows, 2).reshape(3, 6, 6), want)


def test_csv_token_text_is_data(client: TestClient) -> None:
    tokens = ["=1+1", "+SUM(A1)", "-2", "@cmd", "\tx", "a,b", 'say "hi"', "line\nbreak", "\rcr"]
    n = len(tokens)
    body = {"tokens": tokens, "q": np.eye(n).tolist(), "k": np.eye(n).tolist(), "v": np.eye(n).tolist()}
    r = client.post("/api/attention?format=csv&stage=scores", json=body)
    rows = read_csv(r.text)
    shown = ["'=1+1", "'+SUM(A1)", "'-2", "'@cmd", "'\tx", "a,b", 'say "hi"', "line\nbreak", "'\rcr"]
    assert rows[0] == ["query", *shown] and [row[0] for row in rows[1:]] == shown
    assert all(len(row) == n + 1 for row in rows)  # commas, quotes and line breaks did not break a column
    np.testing.assert_array_equal(cells(rows, 1), np.eye(n))
    assert '"a,b"' in r.text and '"say ""hi"""' in r.text


def test_csv_stays_float64_and_exports_one_array(client: TestClient) -> None:
    r = client.post("/api/attention?format=csv", json={**CAT_BODY, "stages": ["weights", "output"]})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "stages"]
    r = client.post("/api/attention?format=csv&stage=weights", json={**CAT_BODY, "stages": ["weights"]})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "stage"]


def test_json_download(client: TestClient) -> None:
    r = client.post("/api/attention?format=json", json=CAT_BODY)
    assert r.headers["content-disposition"] == 'attachment; filename="attention.json"'
    assert r.json() == client.post("/api/attention", json=CAT_BODY).json()
    r = client.post("/api/attention?format=json&stage=weights", json=CAT_BODY)
    assert r.headers["content-disposition"] == 'attachment; filename="attention-weights.json"'
    assert set(r.json()) == {"tokens", "mask", "d_k", "weights"}


junk = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
    max_leaves=10,
)
names = st.sampled_from(["q", "k", "v", "scores", "weights", "output", "softmax", ""])
fields = st.fixed_dictionaries(
    {},
    optional={
        "stages": st.lists(names, max_size=3) | junk,
        "dtype": st.sampled_from(["float64", "float32", "int8"]) | junk,
        "mistake": st.sampled_from(["no-scale", "softmax-columns", "mask-after-softmax", "x"]) | junk,
        "mask": st.sampled_from(["full", "causal", None]) | junk,
        "layer": junk,
        "head": junk,
        "sentence": st.none() | st.text(max_size=8),
    },
)


@settings(max_examples=examples(200, 50), deadline=None, suppress_health_check=list(HealthCheck))
@given(
    extra=fields,
    use_qkv=st.booleans(),
    query=st.sampled_from(["", "?format=csv", "?format=json&stage=masked", "?stage=output", "?format=csv&stage=q"]),
    accept=st.sampled_from([None, "application/json", frame.FRAME_MEDIA_TYPE, "*/*;q=0"]),
)
def test_the_new_fields_never_get_a_5xx(
    client: TestClient, extra: dict[str, Any], use_qkv: bool, query: str, accept: str | None
) -> None:
    body = {**(CAT_BODY if use_qkv else {}), **extra}
    headers = {"content-type": "application/json", **({"accept": accept} if accept else {})}
    r = client.post("/api/attention" + query, content=json.dumps(body), headers=headers)  # NaN too
    assert r.status_code in (200, 422, 503), r.text
    if r.status_code != 200:
        assert all(set(d) == {"loc", "msg", "type"} for d in r.json()["detail"])
