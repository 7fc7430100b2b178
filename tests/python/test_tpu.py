"""gpusched.tpu: slice topologies, GKE machine types and host counts (docs/tpu.md)."""

import pytest

import gpusched
from gpusched import tpu


@pytest.mark.parametrize(
    "generation,topology,hosts",
    [("v4", "2x2x1", 1), ("v4", "2x2x4", 4), ("v4", "4x4x8", 32), ("v5p", "2x2x4", 4), ("v5p", "16x16x24", 1536),
     ("v5e", "1x1", 1), ("v5e", "2x4", 1), ("v5e", "4x4", 4), ("v5e", "16x16", 64),
     ("v6e", "2x4", 1), ("v6e", "8x8", 16), ("tpu7x", "1x1x1", 1), ("tpu7x", "2x2x4", 4)],
)
def test_hosts_default_to_the_machine_type_with_the_most_chips_that_serves_the_topology(generation, topology, hosts):
    assert tpu.hosts(generation, topology) == hosts


@pytest.mark.parametrize(
    "generation,topology,chips,nodes",
    [("v5e", "4x4", 4, 4), ("v5e", "2x4", 4, 2), ("v5e", "2x4", 8, 1), ("v6e", "16x16", 4, 64), ("v5p", "2x2x4", 4, 4)],
)
def test_gke_node_counts(generation, topology, chips, nodes):
    assert tpu.hosts(generation, topology, chips_per_host=chips) == nodes


def test_eight_chip_v5e_hosts_serve_only_2x4():
    with pytest.raises(ValueError, match="ct5lp-hightpu-8t hosts .* do not serve a 4x4 slice") as info:
        tpu.hosts("v5e", "4x4", chips_per_host=8)
    assert "ct5lp-hightpu-4t: 4 nodes x google.com/tpu: 4" in str(info.value)


@pytest.mark.parametrize("generation,topology", [("v4", "2x2x3"), ("v5e", "2x2x2"), ("v5p", "2x2x3"), ("v4", "8x4x4"),
                                                 ("v6e", "32x32"), ("tpu7x", "4x4x16")])
def test_shapes_a_generation_does_not_offer_raise_value_error(generation, topology):
    with pytest.raises(ValueError, match=topology) as info:
        tpu.hosts(generation, topology)
    assert isinstance(info.value, gpusched.CatalogError)
    assert info.value.id == "gpusched.catalog_error.404"


def test_unknown_generation():
    with pytest.raises(ValueError, match="unknown TPU generation"):
        tpu.hosts("v3", "2x2")
    gens = {g["name"]: g for g in tpu.generations()}
    assert list(gens) == ["v4", "v5e", "v5p", "v6e", "tpu7x"]
    assert gens["v5e"]["chips_per_host"] == [1, 4, 8]
    assert gens["v5e"]["default_chips_per_host"] == 4
    assert gens["v6e"]["accelerator_label"] == "tpu-v6e-slice"
