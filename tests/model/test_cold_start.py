"""Start-up imports nothing heavy: torch only when a GPU driver says there may be a GPU to use."""

from __future__ import annotations

import subprocess
import sys

import pytest

from app import attention


def test_no_gpu_driver_means_numpy_without_importing_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(attention, "GPU_DRIVER_FILES", ("/nonexistent/nvidia/version",))
    before = "torch" in sys.modules
    assert attention.default_backend() == "numpy"
    assert ("torch" in sys.modules) == before  # decided without importing it


@pytest.mark.skipif(attention.gpu_driver_present(), reason="this machine has a GPU driver: torch is rightly imported")
def test_the_server_module_imports_no_torch() -> None:
    code = "import sys, app.main; print(sorted(m for m in ('torch', 'transformers', 'scipy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
