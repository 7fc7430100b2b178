"""gpusched.tpu: slice topologies and host counts (../shared/reference/tpu.md)."""

import pytest

import gpusched
from gpusched import tpu


@pytest.mark.parametrize(
    "generation,topology,hosts",
    [("v4", "2x2x1", 1), ("v4", "2x2x4", 4), ("v4", "4x4x8", 32), ("v5p", "16x16x24", 1536),
     ("v5e", "1x1", 1), ("v5e", "2x4", 1), ("v5e", "16x16", 32)],
)
def test_hosts(generation, topology, hosts):
    assert tpu.hosts(generation, topology) == hosts


def test_v5e_host_size_is_a_parameter():
    assert tpu.hosts("v5e", "4x4", chips_per_host=4) == 4


@pytest.mark.parametrize("generation,topology", [("v4", "2x2x3"), ("v5e", "2x2x2"), ("v5p", "2x2x4"), ("v4", "8x4x4")])
def test_shapes_a_generation_does_not_offer_raise_value_error(generation, topology):
    with pytest.raises(ValueError, match=topology) as info:
        tpu.hosts(generation, topology)
    assert isinstance(info.value, gpusched.CatalogError)
    assert info.value.id == "gpusched.catalog_error.404"


def test_unknown_generation():
    with pytest.raises(ValueError, match="unknown TPU generation"):
        tpu.hosts("v3", "2x2")
    assert [g["name"] for g in tpu.generations()] == ["v4", "v5e", "v5p"]
