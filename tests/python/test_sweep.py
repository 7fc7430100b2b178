"""gpusched.sweep: grids, seeds, tidy frames, long-form jobs/time series, errors, and the same
numbers on threads, processes and a real Dask cluster (LocalCluster on loopback)."""

from __future__ import annotations

import copy
import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpusched
from gpusched.sweep import ParameterPathError, SweepResult, flatten_summary, set_path

from conftest import EXAMPLES, medium_scenario

HEAD = ["run", "workload.synthetic.load", "cluster.node_groups[0].count", "seed"]
FIGURES = ["jobs_total", "jobs_completed", "jobs_failed", "wait_mean_s", "wait_p95_s", "jct_p50_s",
           "gpu_alloc_pct", "makespan_s", "gpu_hours"]


def small(jobs: int = 400) -> dict:
    return medium_scenario(jobs=jobs, seed=5, name="sweep-small")


GRID = {"workload.synthetic.load": [0.3, 2.0], "cluster.node_groups[0].count": [10, 40]}


@pytest.fixture(scope="module")
def dask_client():
    """A real two-process Dask cluster on loopback, shared by this module's tests."""
    import distributed  # installed by tools/install-deps.sh: a missing one fails, never skips
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, host="127.0.0.1")
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def test_a_grid_times_seeds_gives_one_tidy_row_per_run():
    df = gpusched.sweep(small(), GRID, seeds="1-3", progress=False)
    assert isinstance(df, pd.DataFrame)
    assert len(df) == 2 * 2 * 3
    assert list(df.columns[:4]) == HEAD
    for col in FIGURES:
        assert col in df.columns, col
    assert df["run"].tolist() == list(range(12))
    # Cartesian product in key order (the last key fastest), then seeds.
    expected = [(load, count, seed) for load, count in itertools.product([0.3, 2.0], [10, 40]) for seed in (1, 2, 3)]
    assert list(df[HEAD[1:]].itertuples(index=False, name=None)) == expected
    assert (df["jobs_total"] == 400).all()
    # More load on the same cluster allocates more GPU.
    by = df.groupby(["cluster.node_groups[0].count", "workload.synthetic.load"])["gpu_alloc_pct"].mean()
    assert by[(40, 2.0)] > by[(40, 0.3)] and by[(10, 2.0)] > by[(10, 0.3)]
    assert df["gpu_alloc_pct"].between(0, 100).all()


def test_a_row_holds_the_figures_of_the_same_run_made_directly():
    df = gpusched.sweep(small(), GRID, seeds=[7, 8], progress=False)
    row = df[(df["workload.synthetic.load"] == 2.0) & (df["cluster.node_groups[0].count"] == 10) & (df["seed"] == 8)]
    assert len(row) == 1
    doc = small()
    doc["workload"]["synthetic"]["load"] = 2.0
    doc["cluster"]["node_groups"][0]["count"] = 10
    s = gpusched.run(doc, seed=8).summary
    row = row.iloc[0]
    assert row["wait_mean_s"] == s["wait"]["mean_s"]
    assert row["jct_p95_s"] == s["jct"]["p95_s"]
    assert row["gpu_alloc_pct"] == s["allocation"]["gpu_pct_time_weighted"]
    assert row["jobs_completed"] == s["jobs"]["completed"]
    assert row["makespan_s"] == s["time"]["makespan_s"]
    assert row["gpus"] == s["cluster"]["gpus"] == 10 * 8 + 20 * 4


def test_seeds_default_to_the_scenarios_and_accept_every_form():
    assert gpusched.sweep(small(), progress=False)["seed"].tolist() == [5]
    assert gpusched.sweep(small(), seeds=11, progress=False)["seed"].tolist() == [11]
    assert gpusched.sweep(small(), seeds="1,4-5", progress=False)["seed"].tolist() == [1, 4, 5]
    assert gpusched.sweep(small(), seeds=np.arange(2), progress=False)["seed"].tolist() == [0, 1]
    # Sweeping the scenario's "seed" key works too (without seeds=...).
    df = gpusched.sweep(small(), {"seed": [3, 9]}, progress=False)
    assert df["seed"].tolist() == [3, 9] and list(df.columns).count("seed") == 1
    with pytest.raises(ValueError, match="seed"):
        gpusched.sweep(small(), {"seed": [3]}, seeds=[1])
    with pytest.raises(gpusched.ScenarioError, match="out of range") as info:   # the one seed error
        gpusched.sweep(small(), seeds=[-1])
    assert info.value.id == "gpusched.scenario_error.211"


def test_results_are_identical_on_threads_processes_and_a_dask_cluster(dask_client):
    kw = dict(seeds=[1, 2], jobs=True, timeseries=True, progress=False)
    grid = {"workload.synthetic.load": [0.5, 1.8], "profile": ["binpack", "spread"]}
    threads = gpusched.sweep(small(), grid, executor="threads", **kw)
    processes = gpusched.sweep(small(), grid, executor="processes", max_workers=2, **kw)
    dask = gpusched.sweep(small(), grid, executor=dask_client, **kw)
    for other in (processes, dask):
        pd.testing.assert_frame_equal(other.runs, threads.runs)
        pd.testing.assert_frame_equal(other.jobs, threads.jobs)
        pd.testing.assert_frame_equal(other.timeseries, threads.timeseries)
    # The default (None) is the thread pool: same frame again.
    pd.testing.assert_frame_equal(gpusched.sweep(small(), grid, seeds=[1, 2], progress=False), threads.runs)
    # And the profiles really differ.
    by = threads.runs.groupby("profile")["gpu_alloc_peak_pct"].mean()
    assert by["binpack"] != by["spread"]


def test_long_form_jobs_and_timeseries_carry_the_run_and_match_each_run():
    r = gpusched.sweep(small(300), {"workload.synthetic.load": [0.4, 1.6]}, seeds=[1, 2], jobs=True,
                       timeseries=True, progress=False)
    assert isinstance(r, SweepResult)
    assert r.parameters == ["workload.synthetic.load"]
    assert list(r.jobs.columns[:3]) == ["run", "workload.synthetic.load", "seed"]
    assert list(r.timeseries.columns[:3]) == ["run", "workload.synthetic.load", "seed"]
    assert len(r.jobs) == 4 * 300
    assert r.jobs.groupby("run").size().tolist() == [300] * 4
    doc = small(300)
    doc["workload"]["synthetic"]["load"] = 1.6
    direct = gpusched.run(doc, seed=2)
    run = int(r.runs.query("`workload.synthetic.load` == 1.6 and seed == 2")["run"].iloc[0])
    mine = r.jobs[r.jobs["run"] == run].drop(columns=["run", "workload.synthetic.load", "seed"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(mine, direct.jobs)
    ts = r.timeseries[r.timeseries["run"] == run].drop(columns=["run", "workload.synthetic.load", "seed"])
    pd.testing.assert_frame_equal(ts.reset_index(drop=True), direct.timeseries)
    assert r.wall_s > 0
    only_jobs = gpusched.sweep(small(300), seeds=1, jobs=True, progress=False)
    assert only_jobs.timeseries is None and len(only_jobs.jobs) == 300


def test_a_bad_path_is_an_error_naming_it_before_anything_runs():
    with pytest.raises(ParameterPathError, match=r"cluster\.node_groups\[5\]\.count.*3 entries") as e:
        gpusched.sweep(small(), {"cluster.node_groups[5].count": [1]})
    assert e.value.path == "cluster.node_groups[5].count"
    assert isinstance(e.value, KeyError) and isinstance(e.value, ValueError)
    with pytest.raises(KeyError, match="no key 'synth'"):
        gpusched.sweep(small(), {"workload.synth.load": [1.0]})
    with pytest.raises(ValueError, match="not an object"):
        gpusched.sweep(small(), [{"cluster.node_groups.count": 3}])
    with pytest.raises(ParameterPathError, match="empty key"):
        gpusched.sweep(small(), {"workload..load": [1.0]})
    with pytest.raises(ValueError, match="list of values"):
        gpusched.sweep(small(), {"workload.synthetic.load": 0.5})
    # A created last key is checked at once: a typo is the scenario's error, naming the path.
    with pytest.raises(gpusched.ScenarioError, match="lod") as e:
        gpusched.sweep(small(), {"workload.synthetic.lod": [1.0]})
    assert "workload.synthetic.lod" in "\n".join(getattr(e.value, "__notes__", []))


def test_set_path_creates_only_a_last_key():
    doc = small()
    assert set_path(doc, "outputs.event_log", True) is True
    assert set_path(doc, "cluster.node_groups[-1].count", 3) is False
    assert doc["outputs"]["event_log"] is True and doc["cluster"]["node_groups"][2]["count"] == 3
    with pytest.raises(ParameterPathError):
        set_path(doc, "outputs.missing.key", 1)


def test_a_failing_run_raises_the_gpusched_error_with_its_parameters():
    grid = {"cluster.node_groups[1].gpu_model": ["T4", "NoSuchGPU"]}
    with pytest.raises(gpusched.CatalogError, match="NoSuchGPU") as e:
        gpusched.sweep(small(), grid, seeds=[1, 2], progress=False)
    notes = "\n".join(getattr(e.value, "__notes__", []))
    assert "sweep run 2" in notes and "cluster.node_groups[1].gpu_model='NoSuchGPU'" in notes and "seed=1" in notes
    # A failure cancels the runs not started yet (and still raises the run's own error).
    many = {"cluster.node_groups[1].gpu_model": ["NoSuchGPU"] + ["T4"] * 20}
    for executor in ("threads", "processes"):
        with pytest.raises(gpusched.CatalogError) as e:
            gpusched.sweep(small(), many, seeds=[1], executor=executor, max_workers=1, progress=False)
        assert "sweep run 0" in "\n".join(e.value.__notes__)


def test_a_list_of_overrides_profiles_and_several_scenarios():
    mine = gpusched.Profile("mine", extends="binpack").score("least-allocated", weight=2)
    points = [{"profile": "spread"}, {"profile": mine}, {"profile": {"name": "dict-prof", "extends": "binpack"},
                                                         "workload.synthetic.load": 0.4}]
    df = gpusched.sweep([small(), medium_scenario(jobs=200, name="other")], points, seeds=[1], progress=False)
    assert list(df.columns[:5]) == ["run", "scenario", "profile", "workload.synthetic.load", "seed"]
    assert df["scenario"].tolist() == ["sweep-small"] * 3 + ["other"] * 3
    assert df["profile"].tolist() == ["spread", "mine", "dict-prof"] * 2
    assert df["workload.synthetic.load"].isna().tolist() == [True, True, False] * 2
    assert df["jobs_total"].tolist() == [400] * 3 + [200] * 3
    twice = gpusched.sweep([small(), small()], progress=False)
    assert twice["scenario"].tolist() == ["sweep-small#0", "sweep-small#1"]


def test_a_scenario_file_resolves_its_relative_trace_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    df = gpusched.sweep(EXAMPLES / "trace-replay.json", {"cluster.node_groups[1].count": [2, 8]}, progress=False)
    direct = gpusched.run(EXAMPLES / "trace-replay.json")
    assert df["seed"].tolist() == [1, 1]
    assert df["jobs_total"].iloc[1] == direct.summary["jobs"]["total"] > 0
    assert df["wait_mean_s"].iloc[1] == direct.summary["wait"]["mean_s"]
    assert df["gpus"].tolist() == [8 * 8 + 2 * 4, 8 * 8 + 8 * 4]


def test_progress_is_a_bar_with_an_eta_only_when_asked_or_watched(capsys):
    gpusched.sweep(small(100), seeds="1-3", progress=True)
    err = capsys.readouterr().err
    assert "3/3" in err and "gpusched sweep" in err
    gpusched.sweep(small(100), seeds="1-3", progress=False)
    gpusched.sweep(small(100), seeds="1-3")   # stderr is not a terminal under pytest
    assert capsys.readouterr().err == ""


def test_flatten_summary_names_carry_units():
    flat = flatten_summary(gpusched.run(small(100)).summary)
    for name in FIGURES + ["wait_count", "cpu_alloc_pct", "peak_pending_jobs"]:
        assert name in flat, name
    assert not any(k.startswith("inputs") or k == "seed" for k in flat)
    assert all(isinstance(v, (int, float)) for v in flat.values())


def test_importing_gpusched_loads_neither_dask_nor_tqdm():
    code = "import sys, gpusched; print(sorted(m for m in ('dask', 'distributed', 'tqdm') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_python_plugins_travel_to_process_and_dask_workers(dask_client):
    class NoFourGpuNodes:
        """Refuses the 4-GPU (T4) nodes: defined here, so workers can only get it by value."""

        def filter(self, job, nodes):
            return np.asarray(nodes.gpus_total) != 4

    gpusched.register_plugin("py-sweep-no-4gpu", NoFourGpuNodes, replace=True)
    try:
        prof = {"name": "no-t4", "extends": "binpack",
                "filter": ["node-resources-fit", "taint-toleration", "node-affinity", "py-sweep-no-4gpu"]}
        grid = {"profile": ["binpack", prof], "workload.synthetic.load": [1.5]}
        threads = gpusched.sweep(small(), grid, seeds=[1, 2], progress=False, jobs=True)
        processes = gpusched.sweep(small(), grid, seeds=[1, 2], executor="processes", max_workers=2, progress=False,
                                   jobs=True)
        dask = gpusched.sweep(small(), grid, seeds=[1, 2], executor=dask_client, progress=False, jobs=True)
        for other in (processes, dask):
            pd.testing.assert_frame_equal(other.runs, threads.runs)
            pd.testing.assert_frame_equal(other.jobs, threads.jobs)
        # The plugin really ran: no job of the "no-t4" runs sits on a t4 node.
        placed = threads.jobs[threads.jobs["placement"] != ""]
        on_t4 = placed["placement"].str.contains("t4")
        assert on_t4[placed["profile"] == "binpack"].any()
        assert not on_t4[placed["profile"] == "no-t4"].any()
    finally:
        gpusched.unregister_plugin("py-sweep-no-4gpu")
