"""Results: a fast `import gpusched`, picklable Results, the placements table, CSV readers."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import pickle
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import gpusched
from gpusched.result import PLACEMENT_COLUMNS, Result, read_csv
from conftest import EXAMPLES, medium_scenario

HEAVY = ("pandas", "matplotlib", "numpy", "dask", "tqdm", "gymnasium")


def _modules_after(code: str) -> list:
    """The HEAVY modules loaded after running ``code`` in a fresh interpreter."""
    probe = code + "\nimport sys\nprint('HEAVY:' + ','.join(m for m in %r if m in sys.modules), file=sys.stderr)" % (HEAVY,)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    (line,) = [x for x in out.stderr.splitlines() if x.startswith("HEAVY:")]
    return [m for m in line[len("HEAVY:"):].split(",") if m]


# -- fast start -----------------------------------------------------------------------------------


def test_import_gpusched_loads_neither_pandas_nor_matplotlib_nor_numpy():
    assert _modules_after("import gpusched") == []


def test_the_version_command_loads_no_heavy_module():
    code = "import sys\nfrom gpusched.cli import main\nassert main(['version']) == 0"
    assert _modules_after(code) == []


def test_python_dash_m_gpusched_version_works():
    out = subprocess.run([sys.executable, "-m", "gpusched", "version"], capture_output=True, text=True, check=True)
    assert gpusched.__version__ in out.stdout


def test_plotting_and_experiments_load_on_first_use():
    code = "import gpusched\nassert 'gpusched.plotting' not in sys.modules\nf = gpusched.plotting.cdf\nimport gpusched.experiments"
    mods = _modules_after("import sys\n" + code)
    assert "pandas" in mods and "numpy" in mods
    assert "plotting" in dir(gpusched) and "experiments" in dir(gpusched)
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        gpusched.nonexistent  # noqa: B018


# -- pickling ---------------------------------------------------------------------------------------


def _assert_same_result(a: Result, b: Result) -> None:
    assert a.summary == b.summary
    assert a.stamp == b.stamp
    assert a.profile == b.profile
    assert a.format_summary() == b.format_summary() and str(a) == str(b) and repr(a) == repr(b)
    assert a.event_log == b.event_log
    for table in ("jobs", "timeseries", "fragmentation", "events", "placements"):
        pd.testing.assert_frame_equal(getattr(a, table), getattr(b, table), obj=table)


def _same_files(a: list, b: list) -> None:
    assert [p.name for p in a] == [p.name for p in b]
    for x, y in zip(a, b):
        assert x.read_bytes() == y.read_bytes(), x.name


def test_a_result_survives_pickling_with_every_table_and_identical_files(small_path, tmp_path):
    r = gpusched.run(small_path)
    data = pickle.dumps(r)
    u = pickle.loads(data)
    assert isinstance(u, Result) and u.raw is None and r.raw is not None
    _assert_same_result(r, u)
    # small.json records events and fragmentation: the copy has them too.
    assert len(u.events) > 0 and len(u.fragmentation) > 0 and len(u.placements) == 23
    original = r.write(tmp_path / "a")
    copy = u.write(tmp_path / "b" / "nested")
    _same_files(original, copy)
    assert {p.name for p in copy} >= {"summary.json", "jobs.csv", "timeseries.csv", "events.csv", "report.md"}
    # Pickling the copy again gives the same state; the reloaded copy still writes the same files.
    again = pickle.loads(pickle.dumps(u))
    _assert_same_result(r, again)
    _same_files(original, again.write(tmp_path / "c"))


def test_pickling_does_not_disturb_cached_tables(small_path):
    r = gpusched.run(small_path)
    jobs = r.jobs  # cached before pickling
    u = pickle.loads(pickle.dumps(r))
    assert r.jobs is jobs
    pd.testing.assert_frame_equal(u.jobs, jobs)


def test_an_unpickled_result_reports_unwritable_outputs_as_output_error(small_path, tmp_path):
    u = pickle.loads(pickle.dumps(gpusched.run(small_path)))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(gpusched.OutputError):
        u.write(blocker / "out")


def test_a_pickle_of_an_unknown_state_version_is_refused():
    r = Result.__new__(Result)
    with pytest.raises(ValueError, match="state version 99"):
        r.__setstate__({"version": 99})


def _run_in_worker(scenario: dict, seed: int) -> Result:
    return gpusched.run(scenario, seed=seed)


def test_results_come_back_from_a_process_pool(tmp_path):
    scenario = medium_scenario(jobs=400)
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        remote = list(pool.map(_run_in_worker, [scenario, scenario], [1, 2]))
    local = [gpusched.run(scenario, seed=s) for s in (1, 2)]
    for i, (a, b) in enumerate(zip(local, remote)):
        assert b.raw is None
        _assert_same_result(a, b)
        _same_files(a.write(tmp_path / f"local{i}"), b.write(tmp_path / f"remote{i}"))
    assert remote[0].summary["seed"] == 1 and remote[1].summary["seed"] == 2
    assert not remote[0].jobs.equals(remote[1].jobs)


# -- placements -------------------------------------------------------------------------------------


def _grants(placement: str) -> set:
    """(node, gpu) pairs of a jobs.csv placement string with whole GPUs, e.g. 'a[0,1];b[2]'."""
    out = set()
    for node, gpus in re.findall(r"([^;\[]+)\[([0-9,]+)\]", placement):
        out |= {(node, int(g)) for g in gpus.split(",")}
    return out


def test_placements_has_one_row_per_job_task_and_gpu(small_path):
    r = gpusched.run(small_path)
    p = r.placements
    assert tuple(p.columns) == PLACEMENT_COLUMNS
    assert str(p["gpu"].dtype) == "Int64" and str(p["mig_start"].dtype) == "Int64"
    assert p["start_s"].dtype == np.float64 and p["end_s"].dtype == np.float64
    # Whole-GPU jobs: the rows name exactly the GPUs of the jobs.csv placement.
    jobs = r.jobs.set_index("job")
    for name in ("train-4gpu", "train-2gpu", "gang-2x2", "t4-only", "urgent", "late-4gpu"):
        rows = p[p["job"] == name]
        assert {(n, int(g)) for n, g in zip(rows["node"], rows["gpu"])} == _grants(jobs.loc[name, "placement"]), name
        assert len(rows) == jobs.loc[name, "tasks"] * jobs.loc[name, "gpus"]
        assert (rows["share_milli"] == 1000).all()
        assert (rows["start_s"] == jobs.loc[name, "start_s"]).all() and (rows["end_s"] == jobs.loc[name, "end_s"]).all()
    gang = p[p["job"] == "gang-2x2"]
    assert sorted(gang["task"].unique()) == [0, 1] and gang.groupby("task")["node"].nunique().eq(1).all()
    # A CPU-only task: one row without a GPU.
    etl = p[p["job"] == "etl"]
    assert len(etl) == 1 and etl["gpu"].isna().all() and etl["node"].iloc[0] == "cpu-a"
    # Shares: compute share in milli, memory share in MiB; the notebook still runs (end NaN).
    assert p.loc[p["job"] == "infer-a", "share_milli"].tolist() == [300]
    assert p.loc[p["job"] == "infer-b", "gpu_memory_mib"].tolist() == [8192]
    assert np.isnan(p.loc[p["job"] == "notebook", "end_s"].iloc[0])
    assert p["mig_profile"].isna().all() and p["vgpu_profile"].isna().all() and (p["tpu_chips"] == 0).all()
    # Jobs that never ran have no rows; every job that started has some.
    started = set(r.jobs.loc[r.jobs["start_s"].notna(), "job"])
    assert set(p["job"]) == started


def test_placements_name_mig_instances_vgpu_profiles_and_tpu_chips():
    r = gpusched.run(EXAMPLES / "devices.json")
    p = r.placements
    mig = p[p["job"] == "mig-3g"]
    assert mig["mig_profile"].tolist() == ["3g.40gb"] * 3
    # jobs.csv writes a MIG grant as node[gpu:mig-<profile>@<start>]: the table has the same.
    placement = r.jobs.set_index("job").loc["mig-3g", "placement"]
    expected = re.findall(r"([^;\[]+)\[(\d+):mig-([^@]+)@(\d+)\]", placement)
    got = [(n, str(g), m, str(s)) for n, g, m, s in zip(mig["node"], mig["gpu"], mig["mig_profile"], mig["mig_start"])]
    assert got == expected
    vgpu = p[p["job"] == "vm-vgpu"]
    assert (vgpu["vgpu_profile"] == "A100-10C").all() and vgpu["mig_start"].isna().all()
    tpu = p[p["job"] == "tpu-slice"]
    assert len(tpu) == 4 and (tpu["tpu_chips"] == 4).all() and tpu["gpu"].isna().all()


# -- reading output files -----------------------------------------------------------------------------


def test_read_csv_reads_files_with_and_without_a_leading_stamp_line(small_path, tmp_path):
    r = gpusched.run(small_path)
    (path,) = [p for p in r.write(tmp_path) if p.name == "timeseries.csv"]
    plain = read_csv(path)
    pd.testing.assert_frame_equal(plain, r.timeseries, check_dtype=False, check_exact=False, atol=1e-4)
    old = tmp_path / "old.csv"
    old.write_bytes(b"# gpusched 0.1.0 scenario=small digest=x seed=7\n" + path.read_bytes())
    pd.testing.assert_frame_equal(read_csv(old), plain)
    from gpusched.plotting import read_timeseries_csv

    pd.testing.assert_frame_equal(read_timeseries_csv(old), plain)
    pd.testing.assert_frame_equal(read_timeseries_csv(path), plain)
