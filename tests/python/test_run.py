"""Running scenarios from Python: results as pandas DataFrames, outputs, plots."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import gpusched
from conftest import medium_scenario

JOB_COLUMNS = [
    "job", "queue", "priority", "tasks", "cpu_milli", "memory_mib", "gpus", "gpu_milli", "gpu_memory_mib",
    "submit_s", "start_s", "end_s", "wait_s", "jct_s", "state", "attempts", "evictions", "lost_gpu_hours", "placement", "reason",
    "requeues", "bound", "attained_s", "attained_gpu_s", "queue_level", "preemptions", "resumptions", "overhead_s",
]
TIMESERIES_COLUMNS = [
    "time_s", "gpu_alloc_pct", "gpus_busy_pct", "cpu_alloc_pct", "memory_alloc_pct", "pending_jobs", "running_jobs",
]


def test_the_small_example_runs_and_gives_pandas_tables(small_path):
    r = gpusched.run(small_path)
    assert isinstance(r.jobs, pd.DataFrame)
    assert list(r.jobs.columns) == JOB_COLUMNS
    assert len(r.jobs) == 10
    assert r.summary["jobs"] == {
        "total": 10, "completed": 9, "failed": 0, "running": 1, "pending": 0, "not_arrived": 0, "requeued": 1,
        "rejected": 0, "deactivated": 0, "partial": 0, "pods_ready_requeues": 0,
    }
    assert r.summary["scenario"]["name"] == "small"
    assert r.stamp["seed"] == 7 and r.stamp["scenario"] == "small"
    assert r.profile == "binpack"

    jobs = r.jobs.set_index("job")
    assert jobs.loc["train-4gpu", "gpus"] == 4
    assert jobs.loc["train-4gpu", "cpu_milli"] == 16000
    assert jobs.loc["infer-a", "gpu_milli"] == 300
    assert jobs.loc["train-4gpu", "placement"].startswith("gpu-")
    # The notebook never ends: it has a start but no end, and NaN for the optional times.
    assert jobs.loc["notebook", "state"] == "running"
    assert not math.isnan(jobs.loc["notebook", "start_s"])
    assert math.isnan(jobs.loc["notebook", "end_s"]) and math.isnan(jobs.loc["notebook", "jct_s"])
    # Proper dtypes.
    for col in ("priority", "tasks", "cpu_milli", "memory_mib", "gpus", "gpu_milli", "gpu_memory_mib", "attempts"):
        assert pd.api.types.is_integer_dtype(r.jobs[col]), col
    for col in ("submit_s", "start_s", "end_s", "wait_s", "jct_s"):
        assert r.jobs[col].dtype == np.float64, col
    for col in ("job", "queue", "state", "placement", "reason"):
        assert pd.api.types.is_string_dtype(r.jobs[col]) or r.jobs[col].dtype == object, col

    ts = r.timeseries
    assert list(ts.columns) == TIMESERIES_COLUMNS
    assert len(ts) > 1 and ts["time_s"].is_monotonic_increasing
    assert ts["time_s"].dtype == np.float64 and pd.api.types.is_integer_dtype(ts["pending_jobs"])
    assert ts["gpu_alloc_pct"].between(0, 100).all()

    # small.json turns the event log on: submits, starts, the node failure ...
    ev = r.events
    assert list(ev.columns) == ["time_s", "event", "job", "node", "detail"]
    assert ev["time_s"].dtype == np.float64
    assert (ev["event"] == "submit").sum() == 10
    assert {"start", "finish"} <= set(ev["event"])
    assert len(ev) == len(r.event_log)


def test_the_demo_runs_with_its_documented_size(demo_result):
    r = demo_result
    assert r.summary["jobs"]["total"] == 20000
    assert r.summary["cluster"] == {"nodes": 1000, "gpus": 6400}
    assert len(r.jobs) == 20000
    assert r.stamp["source"] == "<built-in demo>" and r.stamp["seed"] == 42
    assert len(r.timeseries) > 10
    assert r.events.empty and list(r.events.columns) == ["time_s", "event", "job", "node", "detail"]
    completed = r.jobs[r.jobs["state"] == "completed"]
    assert len(completed) == r.summary["jobs"]["completed"]
    assert completed["jct_s"].notna().all()
    assert completed["wait_s"].mean() == pytest.approx(r.summary["wait"]["mean_s"], rel=1e-6, abs=1e-6)


def test_result_writes_the_cli_files_and_a_plot(small_path, tmp_path):
    r = gpusched.run(small_path)
    written = r.write(tmp_path / "out")
    names = sorted(p.name for p in written)
    assert names == ["events.csv", "fragmentation.csv", "jobs.csv", "meta.json", "report.md", "summary.json", "timeseries.csv"]
    assert all(p.exists() for p in written)
    # Every CSV starts with its header row: pandas reads it with no options.
    on_disk = pd.read_csv(tmp_path / "out" / "jobs.csv")
    assert list(on_disk["job"]) == list(r.jobs["job"])
    assert list(pd.read_csv(tmp_path / "out" / "timeseries.csv").columns) == list(r.timeseries.columns)
    assert list(pd.read_csv(tmp_path / "out" / "events.csv")["event"]) == list(r.events["event"])
    assert len(pd.read_csv(tmp_path / "out" / "fragmentation.csv")) == len(r.fragmentation)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["jobs"] == r.summary["jobs"]
    meta = json.loads((tmp_path / "out" / "meta.json").read_text())
    assert meta["schema_version"] == 1 and meta["seed"] == r.stamp["seed"] == 7
    assert meta["scenario"] == {"name": r.stamp["scenario"], "source": r.stamp["source"], "digest": r.stamp["digest"]}
    assert meta["profile"] == summary["profile"]
    assert sorted(meta["files"]) == names

    pytest.importorskip("matplotlib")
    fig = r.plot(tmp_path / "ts.png")
    assert (tmp_path / "ts.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(fig.axes) == 2
    assert "small" in repr(r) and "completed" in repr(r)
    assert "jobs" in str(r)


def test_write_into_an_unwritable_place_raises_output_error(small_path, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    r = gpusched.run(small_path)
    with pytest.raises(gpusched.OutputError) as info:
        r.write(blocker / "sub")
    assert info.value.id == "gpusched.io_error.601"


def test_a_dict_scenario_json_text_and_a_seed_override_all_run():
    doc = medium_scenario(jobs=500)
    a = gpusched.run(doc)
    b = gpusched.run(json.dumps(doc))
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    assert a.stamp["source"] == "<python>"
    c = gpusched.run(doc, seed=6)
    assert c.stamp["seed"] == 6 and c.summary["seed"] == 6


def test_progress_is_reported_and_its_exceptions_stop_the_run():
    seen = []
    gpusched.run(medium_scenario(jobs=5000), progress=seen.append)
    assert seen[0] == 0.0 and seen[-1] == 1.0
    assert seen == sorted(seen)

    def stop(fraction):
        if fraction > 0:
            raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        gpusched.run(medium_scenario(jobs=5000), progress=stop)


def test_validate_and_the_listings():
    info = gpusched.validate(gpusched.demo_scenario())
    assert info["kind"] == "scenario" and info["nodes"] == 1000 and info["jobs"] == 20000
    assert gpusched.validate("demo")["name"] == "demo"
    names = [m["name"] for m in gpusched.gpu_models()]
    assert "A100-80GB" in names and "T4" in names
    plugins = {p["name"]: p for p in gpusched.plugins()}
    assert "node-resources-fit" in plugins and "filter" in plugins["node-resources-fit"]["hooks"]
    assert all({"name", "hooks", "description", "args"} <= set(p) for p in plugins.values())
    profiles = gpusched.profiles()
    assert "binpack" in profiles and profiles["binpack"]["device_select"]["name"] == "gpu-binpack"
    assert gpusched.__version__ == gpusched._core.version


def test_a_bad_scenario_argument_type_is_a_type_error():
    with pytest.raises(TypeError):
        gpusched.run(42)  # type: ignore[arg-type]
