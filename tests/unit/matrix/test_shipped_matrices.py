"""Every matrix the repository ships (matrices/*.yaml) loads and expands with the registered engines, so a schema
change or an engine's new rule cannot leave one that a user's first `validate` would refuse."""

from pathlib import Path

import pytest

from evalharness.serving.engines import load_matrix

SHIPPED = sorted((Path(__file__).resolve().parents[3] / "matrices").glob("*.yaml"))


def test_the_repository_ships_its_matrices():
    assert {"sm120.yaml", "cpu-smollm2.yaml", "llamacpp.yaml"} <= {p.name for p in SHIPPED}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_matrix_loads_and_expands(path):
    matrix, cells, reference = load_matrix(path)
    assert cells and reference in cells and matrix.name
