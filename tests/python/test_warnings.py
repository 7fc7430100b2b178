"""Configuration warnings reach Python: summary["warnings"], a list of strings (issue 12, item 8)."""

from __future__ import annotations

import json

import gpusched
from gpusched.builders import Cluster, Scenario, job, jobs
from gpusched.sweep import flatten_summary


def _run(profile: object) -> gpusched.Result:
    cluster = Cluster().node("g", cpu=16, memory="64Gi", gpus=2, gpu_model="T4")
    work = jobs([job("a", 0, 10, cpu=1, memory="1Gi", gpus=1), job("b", 5, 10, cpu=1, memory="1Gi", gpus=2)])
    return Scenario(cluster, profile, work, seed=1).run()


def test_a_bare_kueue_preset_warns_in_the_summary_and_summary_json(tmp_path):
    r = _run("kueue-cohorts")
    warnings = r.summary["warnings"]
    assert len(warnings) == 1
    assert warnings[0].startswith("capacity-queues: no ClusterQueue configured: every job is admitted without quota")
    r.write(tmp_path / "out")
    on_disk = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert on_disk["warnings"] == warnings
    # A list of strings is not a figure: the sweep's flat row leaves it out.
    assert not any(k.startswith("warnings") for k in flatten_summary(r.summary))


def test_a_profile_that_needs_nothing_has_an_empty_warning_list():
    r = _run("kube-default")
    assert r.summary["warnings"] == []
    assert r.summary["jobs"]["completed"] == 2
