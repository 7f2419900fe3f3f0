"""Model directories: what is understood, and what is refused with a reason."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app import cli
from app.model.spec import ModelError, read_spec


def test_default_model_spec() -> None:
    spec = read_spec()
    assert (spec.name, spec.kind, spec.layers, spec.heads, spec.head_size) == ("all-MiniLM-L6-v2", "bert", 6, 12, 32)
    assert spec.max_tokens == 512 and not spec.causal and spec.activation == "gelu"


def test_tiny_gpt2_spec(tiny_gpt2_dir: Path) -> None:
    spec = read_spec(tiny_gpt2_dir)
    assert (spec.kind, spec.layers, spec.heads, spec.head_size, spec.max_tokens) == ("gpt2", 2, 2, 8, 128)
    assert spec.causal and spec.activation == "gelu_new"


def _dir(tmp_path: Path, config: object) -> Path:
    for name in ("model.safetensors", "tokenizer.json"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ({"model_type": "t5"}, "not supported"),
        ({"model_type": "bert"}, "missing or malformed"),
        ([1, 2], "JSON object"),
        (
            {"model_type": "gpt2", "n_layer": 1, "n_head": 3, "n_embd": 16, "n_positions": 8, "vocab_size": 9},
            "multiple of heads",
        ),
        (
            {
                "model_type": "gpt2",
                "n_layer": 1,
                "n_head": 2,
                "n_embd": 16,
                "n_positions": 8,
                "vocab_size": 9,
                "activation_function": "swish",
            },
            "activation",
        ),
        ({"model_type": "bert", "position_embedding_type": "relative_key"}, "absolute"),
    ],
)
def test_refused_configs(tmp_path: Path, config: object, reason: str) -> None:
    with pytest.raises(ModelError, match=reason):
        read_spec(_dir(tmp_path, config))


def test_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="does not exist"):
        read_spec(tmp_path / "nowhere")
    with pytest.raises(ModelError, match=r"lacks config\.json, model\.safetensors, tokenizer\.json"):
        read_spec(tmp_path)


def test_cli_refuses_a_bad_model_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--model", str(tmp_path)])
    assert "--model" in capsys.readouterr().err


def test_cli_model_reaches_the_app(monkeypatch: pytest.MonkeyPatch, tiny_gpt2_dir: Path) -> None:
    started: list[str] = []
    monkeypatch.setattr("uvicorn.run", lambda target, **kw: started.append(target))
    monkeypatch.delenv("ATTENTION_MODEL", raising=False)
    try:
        cli.main(["--model", str(tiny_gpt2_dir)])
        assert started == ["app.main:app"]
        assert os.environ["ATTENTION_MODEL"] == str(tiny_gpt2_dir.resolve())
        from app.main import create_app

        assert create_app(backend="numpy").state.model_dir == str(tiny_gpt2_dir.resolve())
    finally:  # cli.main set it; monkeypatch.delenv here would restore it at teardown, for every later test
        os.environ.pop("ATTENTION_MODEL", None)
