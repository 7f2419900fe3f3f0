"""Sentence mode: stages, float32 frames and CSV exports carry the model's own numbers."""

from __future__ import annotations

import csv
import io

import numpy as np
from fastapi.testclient import TestClient

from app import frame

ANIMAL = "The animal didn't cross the street because it was too tired."


def test_sentence_csv_and_stages(api: TestClient) -> None:
    body = {"sentence": ANIMAL, "layer": 3, "head": 1}
    whole = api.post("/api/attention", json=body).json()
    r = api.post("/api/attention?format=csv&stage=weights", json=body)
    assert r.status_code == 200, r.text
    assert r.headers["content-disposition"] == 'attachment; filename="attention-layer3-head1-weights.csv"'
    rows = list(csv.reader(io.StringIO(r.text, newline="")))
    assert rows[0] == ["query", *whole["tokens"]] and [row[0] for row in rows[1:]] == whole["tokens"]
    np.testing.assert_array_equal(np.array([[float(x) for x in row[1:]] for row in rows[1:]]), whole["weights"])
    r = api.post(
        "/api/attention",
        json={**body, "stages": ["weights"], "dtype": "float32"},
        headers={"accept": f"application/json;q=0.5, {frame.FRAME_MEDIA_TYPE}"},
    )
    fields, arrays = frame.decode(r.content)
    assert list(arrays) == ["weights"] and fields["layer"] == 3 and arrays["weights"].dtype == np.float32
    np.testing.assert_array_equal(arrays["weights"], np.array(whole["weights"], dtype=np.float32))
    r = api.post("/api/attention", json=body, headers={"accept": f"application/json, {frame.FRAME_MEDIA_TYPE};q=0.5"})
    assert r.headers["content-type"] == "application/json"
