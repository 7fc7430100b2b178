"""Admission at submission (ResourceQuota charge: created) and Kueue's waitForPodsReady requeues,
as the Python tables and the written files show them (issue 12, items 4 and 5)."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pandas as pd

import gpusched
from gpusched.sweep import flatten_summary


def _scenario(jobs: List[Dict[str, Any]], **extra: Any) -> Dict[str, Any]:
    doc: Dict[str, Any] = {
        "schema_version": 1,
        "name": "admission",
        "seed": 1,
        "cluster": {"nodes": [{"name": "n0", "cpu": 64, "memory": "256Gi", "gpus": 4, "gpu_model": "T4"}]},
        "workload": {"jobs": jobs},
        "profile": "first-fit",
    }
    doc.update(extra)
    return doc


def _job(name: str, submit: float, duration: float, gpus: int, tasks: int = 1, queue: str = "default") -> Dict[str, Any]:
    return {"id": name, "submit_time": submit, "duration": duration, "tasks": tasks, "queue": queue,
            "requests": {"cpu": "1", "nvidia.com/gpu": gpus}}


def test_a_gang_requeued_by_wait_for_pods_ready_shows_in_jobs_and_summary(tmp_path):
    # The blocker holds the node until 130; the gang times out at 100, backs off 60 s, starts at 160.
    doc = _scenario([_job("blocker", 0, 130, 4), _job("gang", 0, 100, 2, tasks=2)],
                    wait_for_pods_ready={"timeout_s": 100}, outputs={"event_log": True})
    r = gpusched.run(doc)
    jobs = r.jobs.set_index("job")
    assert list(r.jobs.columns)[-8:] == ["requeues", "bound", "attained_s", "attained_gpu_s", "queue_level", "preemptions",
                                         "resumptions", "overhead_s"]
    assert jobs.loc["gang", "requeues"] == 1 and jobs.loc["blocker", "requeues"] == 0
    assert jobs.loc["gang", "start_s"] == 160.0
    assert r.summary["jobs"]["pods_ready_requeues"] == 1
    backoff = r.events[r.events["event"] == "backoff"]
    assert backoff["job"].tolist() == ["gang"] and backoff["time_s"].tolist() == [100.0]
    r.write(tmp_path / "out")
    written = pd.read_csv(tmp_path / "out" / "jobs.csv")
    assert list(written.columns) == list(r.jobs.columns)
    assert written.set_index("job").loc["gang", "requeues"] == 1
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["jobs"]["pods_ready_requeues"] == 1
    assert flatten_summary(summary)["jobs_pods_ready_requeues"] == 1


def test_resource_quota_refuses_at_submission_while_a_pending_job_holds_the_quota():
    quota = {"quotas": {"team-a": {"requests.nvidia.com/gpu": 4}}}
    profile = {"extends": "first-fit", "pre_filter": [{"name": "resource-quota", "args": quota}]}
    jobs = [_job("b-fill", 0, 100, 4, queue="team-b"), _job("a-big", 10, 100, 3, queue="team-a"),
            _job("a-small", 20, 100, 2, queue="team-a")]
    r = gpusched.run(_scenario(jobs, profile=profile))
    rows = r.jobs.set_index("job")
    assert rows.loc["a-small", "state"] == "failed"
    assert rows.loc["a-small", "reason"] == (
        'pods "a-small" is forbidden: exceeded quota: team-a, requested: requests.nvidia.com/gpu=2, '
        "used: requests.nvidia.com/gpu=3, limited: requests.nvidia.com/gpu=4")
    assert rows.loc["a-big", "state"] == "completed" and rows.loc["a-big", "start_s"] == 100.0
    assert r.summary["jobs"]["rejected"] == 1 and r.summary["jobs"]["failed"] == 1

    running = {"extends": "first-fit", "pre_filter": [{"name": "resource-quota", "args": {**quota, "charge": "running"}}]}
    r = gpusched.run(_scenario(jobs, profile=running))
    rows = r.jobs.set_index("job")
    assert rows.loc["a-small", "state"] == "completed" and r.summary["jobs"]["rejected"] == 0
