"""Fixtures shared by the harness command tests (verify, bench)."""
import pytest

from ssmkit.granite import GraniteMambaConfig, save_slice, synthetic_slice


@pytest.fixture(scope="session")
def tiny_slice(tmp_path_factory):
    """Path of a saved synthetic slice of ``GraniteMambaConfig.tiny()`` (hidden 64, vocab 128)."""
    path = tmp_path_factory.mktemp("slice") / "tiny.safetensors"
    save_slice(synthetic_slice(GraniteMambaConfig.tiny(), seed=11), path)
    return str(path)
