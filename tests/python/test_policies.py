"""Issue 4's policies from Python: presets, priority classes and preemption with a restart
policy, taint events, backfill and autoscaling, built with the builders and read back from the
job table and the summary."""

from __future__ import annotations

import gpusched
from gpusched.builders import Cluster, Profile, Scenario, job, jobs


def _one_node(gpus: int = 4) -> Cluster:
    return Cluster().node("a", cpu=16, memory="64Gi", gpus=gpus, gpu_model="A100-80GB")


def test_the_presets_are_listed_and_each_runs():
    names = gpusched.profiles()
    for preset in ("kube-default", "gpushare-binpack", "volcano-gang-drf", "kueue-cohorts", "slurm-backfill", "fgd"):
        assert preset in names
        r = gpusched.run(Scenario(_one_node(), preset, jobs([job("x", 0, 10, cpu=1, gpus=1)]), seed=1))
        assert r.summary["jobs"]["completed"] == 1


def test_a_high_priority_class_preempts_and_the_victim_keeps_its_checkpoint():
    sc = Scenario(
        _one_node(),
        Profile("p", extends="first-fit").post_filter("priority-preemption"),
        jobs([job("low", 0, 1000, cpu=1, gpus=4), job("high", 250, 100, cpu=1, gpus=4, priority_class="prod")]),
        priority_classes={"prod": 1000},
        preemption={"restart": "checkpoint", "checkpoint_interval_s": 100},
    )
    r = gpusched.run(sc)
    t = r.jobs.set_index("job")
    assert t.loc["high", "start_s"] == 250.0
    assert t.loc["low", "evictions"] == 1
    # 250 s done, 200 s kept: 800 s left after high ends at 350 s
    assert t.loc["low", "end_s"] == 1150.0
    assert abs(t.loc["low", "lost_gpu_hours"] - 50 * 4 / 3600) < 1e-9
    assert r.summary["preemption"]["preemptions"] == 1


def test_a_noexecute_taint_evicts_only_jobs_without_the_toleration():
    sc = Scenario(
        Cluster().node("a", cpu=16, memory="64Gi", gpus=2, gpu_model="A100-80GB"),
        "kube-default",
        jobs([job("plain", 0, 100, cpu=1, gpus=1),
              job("tolerant", 0, 100, cpu=1, gpus=1, tolerations=[{"key": "drain", "operator": "Exists"}])]),
    ).taint(40, "a", "drain", effect="NoExecute").untaint(60, "a", "drain")
    t = gpusched.run(sc).jobs.set_index("job")
    assert t.loc["tolerant", "evictions"] == 0 and t.loc["tolerant", "end_s"] == 100.0
    assert t.loc["plain", "evictions"] == 1 and t.loc["plain", "start_s"] == 60.0


def test_easy_backfill_keeps_the_reservation():
    work = jobs([job("running", 0, 100, cpu=1, gpus=2), job("big", 1, 50, cpu=1, gpus=4),
                 job("short", 2, 50, cpu=1, gpus=1), job("long", 3, 500, cpu=1, gpus=1)])
    t = gpusched.run(Scenario(_one_node(), Profile("bf", extends="first-fit").queueing("easy-backfill"), work)).jobs.set_index("job")
    assert t.loc["short", "start_s"] == 2.0
    assert t.loc["big", "start_s"] == 100.0
    assert t.loc["long", "start_s"] == 150.0
    greedy = gpusched.run(Scenario(_one_node(), "first-fit", work)).jobs.set_index("job")
    assert greedy.loc["long", "start_s"] == 3.0 and greedy.loc["big", "start_s"] > 100.0


def test_an_autoscaled_group_reports_node_hours():
    cluster = Cluster().node_group("gpu", count=2, cpu=64, memory="256Gi", gpus=8, gpu_model="A100-80GB",
                                   autoscale={"min": 0, "provisioning_delay_s": 300, "scale_down_idle_s": 600})
    sc = Scenario(cluster, "first-fit", jobs([job("train", 0, 1000, cpu=8, gpus=8)]), autoscaler={"scan_interval_s": 10})
    r = gpusched.run(sc)
    assert r.jobs.set_index("job").loc["train", "start_s"] == 310.0
    assert abs(r.summary["autoscaler"]["node_hours"] - 1900 / 3600) < 1e-9


def test_an_unknown_priority_class_is_an_error_naming_the_job():
    sc = Scenario(_one_node(), "first-fit", jobs([job("x", 0, 10, cpu=1, priority_class="nope")]), priority_classes={"a": 1})
    try:
        gpusched.run(sc)
    except gpusched.GpuschedError as e:
        assert "nope" in str(e) and "priority_class" in str(e)
    else:
        raise AssertionError("no error")


def test_training_orders_in_a_profile_preempt_and_report_attained_service():
    """Issue 17: the Tiresias orders are queue sorts of any profile with "preemptive" queueing.
    1 node x 4 GPUs. srtf: long (4 GPUs x 1,000 s at 0) is preempted at 100 by short (4 GPUs x
    50 s), which ends at 150; long resumes after a 20 s restart overhead (its own, not the
    scenario's 5 s) and ends at 150 + 20 + 900 = 1,070."""
    work = jobs([job("long", 0, 1000, cpu=1, gpus=4, restart_overhead=20), job("short", 100, 50, cpu=1, gpus=4)])
    sc = Scenario(_one_node(), Profile("srtf", extends="binpack").queue_sort("srtf").queueing("preemptive"), work,
                  preemption={"restart_overhead_s": 5})
    r = gpusched.run(sc)
    t = r.jobs.set_index("job")
    assert t.loc["short", "end_s"] == 150.0 and t.loc["long", "end_s"] == 1070.0
    assert t.loc["long", "preemptions"] == 1 and t.loc["long", "resumptions"] == 1 and t.loc["long", "overhead_s"] == 20.0
    # Restoring is not service: 100 s before the preemption, 900 s after.
    assert t.loc["long", "attained_s"] == 1000.0 and t.loc["long", "attained_gpu_s"] == 4000.0
    assert r.summary["preemption"]["overhead_gpu_hours"] == 20 * 4 / 3600
    assert r.summary["queueing"]["count"] == 2
    # 2d-las: thresholds in GPU-seconds; long drops to queue 1 at 400 GPU-s (100 s) and short,
    # arriving then in queue 0, preempts it: the same run, now by attained service.
    las = Profile("las", extends="binpack").queue_sort("2d-las", thresholds=[400], starvation_k=0).queueing("preemptive")
    t2 = gpusched.run(Scenario(_one_node(), las, work)).jobs.set_index("job")
    assert t2.loc["long", "queue_level"] == 1 and t2.loc["short", "queue_level"] == 0
    assert t2.loc["long", "end_s"] == 1070.0
    # greedy queueing with the same order never preempts.
    t3 = gpusched.run(Scenario(_one_node(), Profile("g", extends="binpack").queue_sort("srtf"), work)).jobs.set_index("job")
    assert t3.loc["long", "preemptions"] == 0 and t3.loc["short", "start_s"] == 1000.0
