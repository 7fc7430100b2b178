"""Every example scenario, and what the builders produce, validates against the JSON Schema."""

from __future__ import annotations

import json

import pytest

from gpusched.builders import Cluster, Profile, Scenario, synthetic
from conftest import EXAMPLES, REPO

jsonschema = pytest.importorskip("jsonschema")
SCHEMA = REPO / "schemas" / "scenario.schema.json"
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.json"))


def _registry():
    """Every schema in schemas/, under its $id and its file URI, so relative $refs such as
    "trace.schema.json#/$defs/job" resolve."""
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    resources = []
    for path in sorted((REPO / "schemas").glob("*.json")):
        contents = json.loads(path.read_text(encoding="utf-8"))
        resource = Resource.from_contents(contents, default_specification=DRAFT202012)
        resources.append((path.as_uri(), resource))
        if isinstance(contents, dict) and "$id" in contents:
            resources.append((contents["$id"], resource))
    return Registry().with_resources(resources)


def _validator():
    if not SCHEMA.exists():
        pytest.skip(f"{SCHEMA.relative_to(REPO)} does not exist yet (the scenario JSON Schema)")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, registry=_registry())


def test_there_are_examples():
    assert len(EXAMPLE_FILES) >= 3


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_example_matches_the_scenario_schema(path):
    validator = _validator()
    doc = json.loads(path.read_text(encoding="utf-8"))
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{path.name} {list(e.path)}: {e.message}" for e in errors)


def test_a_built_scenario_matches_the_schema():
    validator = _validator()
    sc = Scenario(
        Cluster().node_group("g", 2, cpu=8, memory="64Gi", gpus=2, gpu_model="T4").node("c", cpu="4", memory="8Gi"),
        Profile("p", extends="binpack").score("least-allocated", weight=0.5),
        synthetic(jobs=10, load=0.5),
        event_log=True,
    ).node_down(10, "c")
    errors = list(validator.iter_errors(sc.to_dict()))
    assert not errors, [e.message for e in errors]


def test_the_schema_lists_every_built_in_profile():
    import gpusched

    schema = json.loads((REPO / "schemas" / "scenario.schema.json").read_text(encoding="utf-8"))
    names = schema["properties"]["profile"]["oneOf"][0]["enum"]
    assert sorted(names) == sorted(gpusched.profiles())
