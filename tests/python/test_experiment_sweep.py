"""The FGD experiment over several workloads (issue 14): `--workload all` / a comma list on the
command line, `workload="all"` / a list from Python, one pool for every run, a workload column,
the same bytes whatever the number of threads, and unknown names reported with the known ones.

Tests on the real openb trace run when ../shared/traces (or $GPUSCHED_TRACES_DIR) holds it and
are skipped with the reason otherwise. Runs stop at 15% arrived demand to stay short."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import gpusched
from gpusched import _core, experiments

from conftest import OPENB, TRACES, cli as _cli, needs_openb
FILES = ("curve.csv", "summary.csv", "runs.csv", "report.md", "meta.json")


def test_all_names_the_24_openb_variants_and_lists_parse_in_order():
    names = experiments.FGD_WORKLOADS
    assert len(names) == 24 and len(set(names)) == 24 and names[0] == "default"
    for family, count in (("cpu", 9), ("gpushare", 5), ("gpuspec", 5), ("multigpu", 4)):
        assert sum(n.startswith(family) for n in names) == count, family
    assert list(_core.parse_fgd_workloads("all")) == names
    assert list(_core.parse_fgd_workloads(" gpushare80 , default,gpushare80")) == ["gpushare80", "default"]
    assert list(_core.parse_fgd_workloads("cpu050,all"))[:2] == ["cpu050", "default"]
    assert len(_core.parse_fgd_workloads("cpu050,all")) == 24
    with pytest.raises(gpusched.ScenarioError, match="empty entry"):
        _core.parse_fgd_workloads("default,,cpu050")


@needs_openb
def test_every_listed_variant_is_in_the_trace_folder():
    for name in experiments.FGD_WORKLOADS:
        assert (OPENB / f"openb_pod_list_{name}.csv").exists(), name


@needs_openb
def test_an_unknown_workload_is_named_with_the_known_ones_before_any_run(tmp_path):
    out = tmp_path / "out"
    p = _cli("experiment", "fgd", "--traces", TRACES, "--workload", "default,gpushare85", "--seeds", "42",
             "--policies", "fgd", "--max-arrived", "5", "--out", out)
    assert p.returncode == 1
    assert 'unknown workload "gpushare85"' in p.stderr
    for name in ("default", "gpushare80", "multigpu50", "cpu037"):
        assert name in p.stderr, name
    assert not out.exists()   # nothing ran, nothing written
    with pytest.raises(gpusched.TraceError, match="gpushare85"):
        experiments.fgd(TRACES, workload=["default", "gpushare85"], seeds=[42], policies="fgd", max_arrived_pct=5.0,
                        plot=False, progress=False)


@needs_openb
def test_a_comma_list_writes_one_set_of_files_with_a_workload_column_the_same_at_any_parallelism(tmp_path):
    args = ["experiment", "fgd", "--traces", TRACES, "--workload", "gpushare80,default", "--seeds", "42-43",
            "--policies", "bestfit,fgd,random", "--max-arrived", "15", "--progress", "never"]
    p1 = _cli(*args, "--jobs", "1", "--out", tmp_path / "j1")
    assert p1.returncode == 0, p1.stderr
    p2 = _cli(*args, "--jobs", "2", "--out", tmp_path / "j2")
    assert p2.returncode == 0, p2.stderr
    p3 = _cli(*args, "--jobs", "5", "--out", tmp_path / "j5")
    assert p3.returncode == 0, p3.stderr
    for name in FILES:
        a = (tmp_path / "j1" / name).read_bytes()
        assert a == (tmp_path / "j2" / name).read_bytes(), name
        assert a == (tmp_path / "j5" / name).read_bytes(), name
    curve = pd.read_csv(tmp_path / "j1" / "curve.csv")
    assert list(curve.columns)[-1] == "workload"
    assert list(dict.fromkeys(curve["workload"])) == ["gpushare80", "default"]   # the order asked
    assert len(curve) == 2 * 3 * 2 * 16
    summary = pd.read_csv(tmp_path / "j1" / "summary.csv")
    assert list(zip(summary["workload"], summary["policy"]))[:4] == [
        ("gpushare80", "bestfit"), ("gpushare80", "fgd"), ("gpushare80", "random"), ("default", "bestfit")]
    # Paper figures only beside the default workload.
    assert summary.query("workload == 'gpushare80'")["paper_unallocated_pct_100"].isna().all()
    assert summary.query("workload == 'default' and policy == 'fgd'")["paper_unallocated_pct_100"].iloc[0] == 4.77
    runs = pd.read_csv(tmp_path / "j1" / "runs.csv")
    assert len(runs) == 12 and list(runs.columns)[-1] == "workload"
    meta = json.loads((tmp_path / "j1" / "meta.json").read_text())
    assert meta["workloads"] == ["gpushare80", "default"]
    assert meta["scenario"]["name"] == "fgd-gpushare80,default"
    assert len(meta["pod_lists"]) == 2 and meta["pod_lists"][0].endswith("openb_pod_list_gpushare80.csv")
    report = (tmp_path / "j1" / "report.md").read_text()
    assert "## gpushare80: unallocated GPU %" in report and "## default: unallocated GPU %" in report
    assert "12 runs on" in p1.stdout and "gpushare80" in p1.stdout


@needs_openb
def test_one_workload_of_a_sweep_matches_its_own_experiment(tmp_path):
    kw = dict(seeds=[44], policies="packing,fgd", max_arrived_pct=15.0, plot=False, progress=False)
    both = experiments.fgd(TRACES, workload="multigpu50,cpu200", **kw)
    one = experiments.fgd(TRACES, workload="cpu200", **kw)
    assert both.info["workloads"] == ["multigpu50", "cpu200"] and both.info["workload"] == "multigpu50,cpu200"
    assert one.info["workloads"] == ["cpu200"] and one.info["workload"] == "cpu200"
    pd.testing.assert_frame_equal(both.curve.query("workload == 'cpu200'").reset_index(drop=True), one.curve)
    pd.testing.assert_frame_equal(both.summary.query("workload == 'cpu200'").reset_index(drop=True), one.summary)
    # A list, the same as the comma text; bands per workload.
    listed = experiments.fgd(TRACES, workload=["multigpu50", "cpu200"], **kw)
    pd.testing.assert_frame_equal(listed.curve, both.curve)
    assert set(both.bands()["workload"]) == {"multigpu50", "cpu200"}


@needs_openb
def test_a_sweep_on_an_executor_gives_the_built_in_files(tmp_path):
    kw = dict(workload=["gpuspec33", "default"], policies="random,fgd", seeds=[42], max_arrived_pct=10.0, plot=False,
              progress=False)
    built_in = experiments.fgd(TRACES, out=tmp_path / "built-in", **kw)
    fanned = experiments.fgd(TRACES, out=tmp_path / "threads", executor="threads", jobs=2, **kw)
    pd.testing.assert_frame_equal(fanned.curve, built_in.curve)
    pd.testing.assert_frame_equal(fanned.summary, built_in.summary)
    for name in ("curve.csv", "summary.csv", "runs.csv", "report.md"):
        assert (tmp_path / "threads" / name).read_bytes() == (tmp_path / "built-in" / name).read_bytes(), name
