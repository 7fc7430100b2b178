"""The event log from Python (issue 13, classes 9 and 10): a preemption victim's requeue comes
before its preemptor's start, a job on a new MIG instance is `placed` then `start`s at the
job table's start_s, and an elastic gang grows when room appears or is reported `partial`."""

from __future__ import annotations

import gpusched
from gpusched.builders import Cluster, Profile, Scenario, job, jobs


def _lines(result: gpusched.RunResult, job_id: str) -> list:
    ev = result.events
    return [f"{e}@{t:g}" for t, e in zip(ev[ev.job == job_id].time_s, ev[ev.job == job_id].event)]


def test_the_log_releases_before_it_acquires_and_agrees_with_the_job_table():
    cluster = (Cluster()
               .node("n0", cpu=8, memory="32Gi", gpus=2, gpu_model="A100-80GB")
               .node("h0", cpu=16, memory="64Gi", gpus=1, gpu_model="A100-80GB",
                     gpu_partition={"mode": "mig", "dynamic": True}))
    sc = Scenario(
        cluster,
        Profile("p", extends="first-fit").post_filter("priority-preemption"),
        jobs([
            job("low", 0, 1000, cpu=1, gpus=2, gpu_model="A100-80GB"),
            job("high", 100, 50, cpu=1, gpus=2, priority_class="prod"),
            job("mig", 0, 100, cpu=1, requests={"nvidia.com/mig-3g.40gb": 1}),
            job("elastic", 200, 100, cpu=1, gpus=1, tasks=3, min_available=1),
        ]),
        priority_classes={"prod": 1000},
        devices={"mig_reconfigure_s": 5},
        event_log=True,
    )
    r = gpusched.run(sc)
    ev = r.events
    table = r.jobs.set_index("job")
    # Preemption: the victim leaves before the preemptor arrives, at the same instant.
    requeue = ev.index[(ev.job == "low") & (ev.event == "requeue")][0]
    start = ev.index[(ev.job == "high") & (ev.event == "start")][0]
    assert requeue < start and ev.time_s[requeue] == ev.time_s[start] == 100.0
    # MIG: placed at once, started after the reconfiguration, as the job table says.
    assert _lines(r, "mig") == ["submit@0", "placed@0", "start@5", "finish@105"]
    assert table.loc["mig", "start_s"] == 5.0
    # Elastic gang: n0 is busy with low (restarted at 150) until 1150; then 2 of its 3 tasks
    # fit, the third never does: it completes "partial" and says how many ran.
    assert _lines(r, "elastic") == ["submit@200", "start@1150", "finish@1250"]
    assert table.loc["elastic", "state"] == "partial"
    assert table.loc["elastic", "reason"] == "ran 2 of 3 tasks (min_available 1); the others never fitted before it ended"
    assert r.summary["jobs"]["partial"] == 1 and r.summary["jobs"]["completed"] == 4

def test_an_elastic_gang_takes_its_other_tasks_when_a_job_ends():
    cluster = Cluster().node("n0", cpu=16, memory="64Gi", gpus=4, gpu_model="A100-80GB")
    sc = Scenario(
        cluster, "first-fit",
        jobs([job("filler", 0, 100, cpu=1, gpus=2), job("elastic", 10, 1000, cpu=1, gpus=1, tasks=4, min_available=1)]),
        event_log=True,
    )
    r = gpusched.run(sc)
    assert _lines(r, "elastic") == ["submit@10", "start@10", "grow@100", "finish@1010"]
    row = r.jobs.set_index("job").loc["elastic"]
    assert row["state"] == "completed" and row["placement"].count(";") == 3
    assert r.summary["jobs"]["partial"] == 0
