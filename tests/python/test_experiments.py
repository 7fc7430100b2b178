"""The FGD experiment from Python and the command line, and trace conversion / validation.

Tests on the real openb trace run when ../shared/traces (or $GPUSCHED_TRACES_DIR) holds it and
are skipped with the reason otherwise."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import gpusched
from gpusched import experiments

from conftest import TRACES, cli as _cli, needs_openb

POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"


@needs_openb
def test_fgd_from_python_returns_the_curve_the_summary_and_a_plot(tmp_path):
    r = experiments.fgd(TRACES, policies="bestfit,fgd", seeds="42-43", out=tmp_path / "fgd")
    assert list(r.curve.columns) == ["policy", "seed", "arrived_pct", "unallocated_pct", "frag_pct", "frag_ratio_pct", "workload"]
    # One row per policy, seed and integer arrived % from 0 to 130.
    assert len(r.curve) == 2 * 2 * 131
    assert sorted(r.curve["arrived_pct"].unique()) == list(range(0, 131))
    by = r.summary.set_index("policy")
    assert list(by.index) == ["bestfit", "fgd"]
    assert by.loc["fgd", "unallocated_pct_100"] < by.loc["bestfit", "unallocated_pct_100"]
    assert by.loc["fgd", "paper_unallocated_pct_100"] == pytest.approx(4.77)
    # The summary is the median over seeds of the curve at 100%.
    at100 = r.curve.query("policy == 'fgd' and arrived_pct == 100")["unallocated_pct"]
    assert by.loc["fgd", "unallocated_pct_100"] == pytest.approx(at100.median(), abs=0.006)
    assert set(r.runs["seed"]) == {42, 43} and (r.runs["pods"] > 8152).all()
    bands = r.bands()
    assert (bands["q25"] <= bands["median"] + 1e-9).all() and (bands["median"] <= bands["q75"] + 1e-9).all()
    for name in ("curve.csv", "summary.csv", "runs.csv", "report.md", "fgd.png"):
        assert (tmp_path / "fgd" / name).exists(), name
    again = experiments.read_fgd_outputs(tmp_path / "fgd")
    pd.testing.assert_frame_equal(again.curve, r.curve, check_dtype=False, atol=1e-4)


@needs_openb
def test_fgd_is_deterministic_whatever_the_number_of_threads():
    a = experiments.fgd(TRACES, policies="random,fgd", seeds=[44, 45], jobs=1)
    b = experiments.fgd(TRACES, policies="random,fgd", seeds=[44, 45], jobs=2)
    pd.testing.assert_frame_equal(a.curve, b.curve)


@needs_openb
def test_experiment_fgd_on_the_command_line_writes_its_files_and_plot(tmp_path):
    out = tmp_path / "cli"
    p = _cli("experiment", "fgd", "--traces", TRACES, "--workload", "gpushare80", "--policies", "fgd",
             "--seeds", "42", "--out", out)
    assert p.returncode == 0, p.stderr
    assert "fgd" in p.stdout and "plot" in p.stdout
    curve = pd.read_csv(out / "curve.csv")   # the header row comes first: no options needed
    assert (curve["policy"] == "fgd").all() and curve["arrived_pct"].max() == 130
    for name in ("curve.csv", "summary.csv", "runs.csv"):
        assert (out / name).read_text().splitlines()[0].startswith("policy,"), name
    meta = json.loads((out / "meta.json").read_text())
    assert meta["schema_version"] == 1 and meta["experiment"] == "fgd" and meta["seeds"] == [42]
    assert meta["scenario"]["name"] == "fgd-gpushare80" and "gpushare80" in meta["scenario"]["source"]
    assert meta["policies"] == ["fgd"] and meta["gpusched_version"] == gpusched.__version__
    assert meta["files"] == ["curve.csv", "summary.csv", "runs.csv", "report.md", "meta.json"]
    assert (out / "fgd.png").stat().st_size > 1000


def test_experiment_fgd_rejects_bad_arguments(tmp_path):
    p = _cli("experiment", "fgd", "--traces", tmp_path, "--policies", "fgd,tetris")
    assert p.returncode == 1 and "tetris" in p.stderr
    p = _cli("experiment", "fgd", "--traces", tmp_path, "--seeds", "9-3")
    assert p.returncode == 1 and "--seeds" in p.stderr
    p = _cli("experiment", "fgd", "--traces", tmp_path, "--seeds", "42")
    assert p.returncode == 1 and "openb_node_list_gpu_node.csv" in p.stderr
    with pytest.raises(gpusched.ScenarioError):
        experiments.fgd(tmp_path, policies="nope")


def test_convert_and_validate_an_openb_pod_list(tmp_path):
    src = tmp_path / "pods.csv"
    src.write_text(POD_HEADER + "p-0,4000,8192,1,500,,LS,Running,0,100,0\np-1,8000,16384,2,1000,T4,BE,Running,10,50,10\n")
    p = _cli("validate", src)
    assert p.returncode == 0, p.stderr
    assert "openb-pods" in p.stdout and "2 jobs" in p.stdout
    out = tmp_path / "native.csv"
    p = _cli("convert", src, out)
    assert p.returncode == 0, p.stderr
    p = _cli("validate", out)
    assert p.returncode == 0 and "native" in p.stdout, p.stdout + p.stderr
    text = out.read_text()
    assert "p-1" in text and "T4" in text
    swf = tmp_path / "pods.swf"
    p = _cli("convert", src, swf)
    assert p.returncode == 1 and "p-0" in p.stderr   # a GPU share has no SWF form: named, not dropped


def test_a_bad_trace_row_is_reported_with_its_line_and_column(tmp_path):
    src = tmp_path / "pods.csv"
    src.write_text(POD_HEADER + "p-0,4000,8192,1,500,,LS,Running,0,100,0\np-1,8000,16384,2,1500,,BE,Running,10,50,10\n")
    p = _cli("validate", src)
    assert p.returncode == 1
    assert "pods.csv:3" in p.stderr and "gpu_milli" in p.stderr


def test_formats_lists_every_reader():
    p = _cli("formats")
    assert p.returncode == 0
    for name in ("openb-pods", "philly", "swf", "kubectl-pods", "openb-nodes", "philly-machines", "kubectl-nodes"):
        assert name in p.stdout


def test_a_run_with_gpu_shares_reports_fragmentation(small_path):
    r = gpusched.run(small_path)
    f = r.fragmentation
    assert list(f.columns) == ["t_s", "decisions", "arrived_pct", "unallocated_pct", "frag_pct", "frag_ratio_pct"]
    assert f["decisions"].tolist() == list(range(len(f)))
    assert f["unallocated_pct"].iloc[0] == pytest.approx(100.0)
    assert (f["frag_pct"] <= f["unallocated_pct"] + 1e-9).all()
    assert r.summary["fragmentation"]["samples"] == len(f)


@needs_openb
def test_fgd_on_a_dask_cluster_or_threads_gives_the_built_in_numbers_and_files(tmp_path, capsys):
    import distributed  # installed by tools/install-deps.sh: a missing one fails, never skips
    kw = dict(policies="random,fgd", seeds=[42, 43], max_arrived_pct=70.0, plot=False)
    built_in = experiments.fgd(TRACES, out=tmp_path / "built-in", progress=False, **kw)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1") as cluster, distributed.Client(cluster) as client:
        fanned = experiments.fgd(TRACES, out=tmp_path / "dask", executor=client, progress=True, **kw)
    assert "4/4" in capsys.readouterr().err   # the progress bar reached the end
    pd.testing.assert_frame_equal(fanned.curve, built_in.curve)
    pd.testing.assert_frame_equal(fanned.summary, built_in.summary)   # medians computed by the same C++
    pd.testing.assert_frame_equal(fanned.runs.drop(columns="wall_s"), built_in.runs.drop(columns="wall_s"))
    assert fanned.info == built_in.info
    assert fanned.curve["arrived_pct"].max() == 70 and len(fanned.curve) == 2 * 2 * 71
    for name in ("curve.csv", "summary.csv", "runs.csv", "report.md"):
        assert (tmp_path / "dask" / name).read_bytes() == (tmp_path / "built-in" / name).read_bytes(), name
    one = experiments.fgd(TRACES, policies="fgd", seeds=[43], max_arrived_pct=70.0, plot=False, executor="threads",
                          progress=False)
    pd.testing.assert_frame_equal(one.curve, built_in.curve.query("policy == 'fgd' and seed == 43").reset_index(drop=True))


def test_fgd_with_an_executor_checks_its_arguments_before_fanning_out(tmp_path):
    with pytest.raises(gpusched.ScenarioError, match="max_arrived_pct"):
        experiments.fgd(tmp_path, policies="fgd", seeds=[1], max_arrived_pct=0, executor="threads")
    with pytest.raises(gpusched.TraceError, match="openb_node_list_gpu_node.csv"):
        experiments.fgd(tmp_path, policies="fgd", seeds=[1], executor="threads")
    with pytest.raises(ValueError, match="executor"):
        experiments.fgd(tmp_path, policies="fgd", seeds=[1], executor="gpus")


@pytest.mark.skipif(not (TRACES / "tiresias" / "60_job.csv").exists(), reason="../shared/traces/tiresias/60_job.csv is absent")
def test_tiresias_compat_from_the_command_line_writes_the_simulators_figures(tmp_path):
    """`gpusched experiment tiresias --compat`: summary.csv and jobs-<policy>.csv. On n1g4 the
    simulator's averages over the 50 jobs that complete are fjf 840.58 s, srtf 608.02 s and srsf
    587.16 s (its run_sim.py with --scheme=count; the per-job figures are checked in C++)."""
    import csv
    p = _cli("experiment", "tiresias", "--compat", "--traces", TRACES, "--cluster", "n1g4", "--policies", "fjf,srtf,srsf",
             "--out", tmp_path / "t")
    assert p.returncode == 0, p.stderr
    assert "60 jobs" in p.stdout and "on 4 GPUs" in p.stdout
    rows = {r["policy"]: r for r in csv.DictReader(open(tmp_path / "t" / "summary.csv"))}
    assert list(rows) == ["fjf", "srtf", "srsf"]
    assert {k: float(r["mean_jct_s"]) for k, r in rows.items()} == {"fjf": 840.58, "srtf": 608.02, "srsf": 587.16}
    assert all(r["completed"] == "50" and r["stuck"] == "true" for r in rows.values())
    jobs = list(csv.DictReader(open(tmp_path / "t" / "jobs-srtf.csv")))
    assert len(jobs) == 60 and sum(j["completed"] == "true" for j in jobs) == 50
    # gittins has no compat mode: the simulator's fails as published.
    p = _cli("experiment", "tiresias", "--compat", "--traces", TRACES, "--policies", "gittins", "--out", tmp_path / "u")
    assert p.returncode == 1 and "without --compat" in p.stderr and "gpusched.scenario_error.203" in p.stderr
    assert not (tmp_path / "u").exists()


@pytest.mark.skipif(not (TRACES / "tiresias" / "60_job.csv").exists(), reason="../shared/traces/tiresias/60_job.csv is absent")
def test_tiresias_from_python_gives_dataframes_equal_to_the_command_line(tmp_path):
    import csv
    r = experiments.tiresias(TRACES, cluster="n1g4", policies="fjf,srtf,2d-las", compat=True)
    assert list(r.summary["policy"]) == ["fjf", "srtf", "2d-las"] and r.gpus == 4 and r.compat
    assert len(r.jobs) == 3 * 60
    p = _cli("experiment", "tiresias", "--compat", "--traces", TRACES, "--cluster", "n1g4", "--policies", "fjf,srtf,2d-las",
             "--out", tmp_path / "t", "--quiet")
    assert p.returncode == 0, p.stderr
    for row in csv.DictReader(open(tmp_path / "t" / "summary.csv")):
        mine = r.summary[r.summary["policy"] == row["policy"]].iloc[0]
        assert int(row["completed"]) == mine["completed"]
        for col in ("mean_jct_s", "median_jct_s", "p95_jct_s", "mean_queueing_s"):
            assert float(row[col]) == pytest.approx(mine[col], abs=1e-3), col
        assert int(row["makespan_s"]) == mine["makespan_s"] and int(row["preemptions"]) == mine["preemptions"]
    # Jobs that never completed (8 GPUs on 4) have no end.
    never = r.jobs[(r.jobs["policy"] == "srtf") & ~r.jobs["completed"]]
    assert len(never) == 10 and (never["num_gpu"] == 8).all() and never["end_time"].isna().all()
    fig = r.plot_cdf(tmp_path / "cdf.png")
    assert (tmp_path / "cdf.png").stat().st_size > 1000 and len(fig.axes[0].get_lines()) == 3
    with pytest.raises(ValueError, match="unknown policy 'gittins'.*compat=False"):
        experiments.tiresias(TRACES, cluster="n1g4", policies="gittins", compat=True)


@pytest.mark.skipif(not (TRACES / "tiresias" / "60_job.csv").exists(), reason="../shared/traces/tiresias/60_job.csv is absent")
def test_tiresias_on_the_engine_from_python_and_the_command_line_agree(tmp_path):
    """The default: gpusched's engine (preemptive mode, the profile's placement). With GPUs
    counted only it gives the simulator's averages on n1g4 (no job is demoted at the default
    thresholds): fjf 840.58 s, srtf 608.02 s, srsf 587.16 s."""
    import csv
    counted = experiments.tiresias(TRACES, cluster="n1g4", policies="fjf,srtf,srsf", placement="count")
    assert not counted.compat
    assert dict(zip(counted.summary["policy"], counted.summary["mean_jct_s"].round(2))) == {
        "fjf": 840.58, "srtf": 608.02, "srsf": 587.16}
    r = experiments.tiresias(TRACES, cluster=TRACES / "tiresias" / "n1g4.csv", policies="srtf,2d-las,gittins",
                             restart_overhead=30, thresholds="300,900", quantum=600)
    assert r.gpus == 4 and list(r.summary["policy"]) == ["srtf", "2d-las", "gittins"]
    assert (r.summary["preemptions"] > 0).all() and (r.summary["overhead_gpu_hours"] > 0).all()
    assert r.summary["stuck"].all()   # the 8-GPU jobs never fit 4 GPUs
    # jobs.csv's columns, after the policy.
    for col in ("job", "state", "placement", "attained_s", "attained_gpu_s", "queue_level", "preemptions", "resumptions",
                "overhead_s"):
        assert col in r.jobs.columns, col
    # 2d-las: a job's queue level follows from its attained GPU-time (no promotion without K).
    las = r.jobs[(r.jobs["policy"] == "2d-las") & (r.jobs["state"] == "completed")]
    expected = (las["attained_gpu_s"] >= 300 - 1e-6).astype(int) + (las["attained_gpu_s"] >= 900 - 1e-6).astype(int)
    assert (las["queue_level"] == expected).all()
    p = _cli("experiment", "tiresias", "--traces", TRACES, "--cluster", "n1g4", "--policies", "srtf,2d-las,gittins",
             "--restart-overhead", "30", "--thresholds", "300,900", "--quantum", "600", "--out", tmp_path / "e", "--quiet")
    assert p.returncode == 0, p.stderr
    for row in csv.DictReader(open(tmp_path / "e" / "summary.csv")):
        mine = r.summary[r.summary["policy"] == row["policy"]].iloc[0]
        assert int(row["completed"]) == mine["completed"] == 50
        for col in ("mean_jct_s", "median_jct_s", "p95_jct_s", "mean_queueing_s", "makespan_s", "overhead_gpu_hours"):
            assert float(row[col]) == pytest.approx(mine[col], abs=1e-3), col
        assert int(row["preemptions"]) == mine["preemptions"]
    engine_jobs = pd.read_csv(tmp_path / "e" / "jobs-2d-las.csv")
    mine = r.jobs[r.jobs["policy"] == "2d-las"].reset_index(drop=True)
    pd.testing.assert_series_equal(engine_jobs["end_s"], mine["end_s"], check_names=False)
    assert list(engine_jobs["job"].astype(str)) == list(mine["job"])
    fig = r.plot_cdf(tmp_path / "cdf.png")
    assert len(fig.axes[0].get_lines()) == 3 and "engine" in fig.axes[0].get_title()
    with pytest.raises(gpusched.ProfileError):
        experiments.tiresias(TRACES, cluster="n1g4", policies="las", thresholds="900,300")


@pytest.mark.skipif(not (TRACES / "tiresias" / "60_job.csv").exists(), reason="../shared/traces/tiresias/60_job.csv is absent")
def test_tiresias_options_that_would_change_nothing_are_refused_from_python_and_the_command_line(tmp_path):
    """Review of issue 17: these were accepted and ignored (or truncated, or aborted the CLI)."""
    with pytest.raises(ValueError, match="placement applies to gpusched's engine only"):
        experiments.tiresias(TRACES, cluster="n1g4", compat=True, placement="spread")
    with pytest.raises(ValueError, match="whole numbers of seconds"):
        experiments.tiresias(TRACES, cluster="n1g4", compat=True, policies="las", thresholds=(300.9, 900))
    with pytest.raises(ValueError, match="within_queue must be"):
        experiments.tiresias(TRACES, cluster="n1g4", policies="las", within_queue="bogus")
    with pytest.raises(ValueError, match="whole numbers of seconds"):
        experiments.tiresias(TRACES, cluster="n1g4", policies="las", thresholds=[float("inf")])
    # The same refusals as the command line's, below (review of issue 17).
    with pytest.raises(ValueError, match="placement applies to gpusched's engine only"):
        experiments.tiresias(TRACES, cluster="n1g4", compat=True, placement="binpack")
    for kwargs in ({"thresholds": "300,900"}, {"starvation": 5}, {"quantum": 60}, {"within_queue": "fifo"},
                   {"distribution": "/nonexistent.csv"}):
        with pytest.raises(ValueError, match="which policies does not list"):
            experiments.tiresias(TRACES, cluster="n1g4", policies="srtf", **kwargs)
    with pytest.raises(ValueError, match="restart_overhead applies to"):
        experiments.tiresias(TRACES, cluster="n1g4", policies="fifo,fjf", restart_overhead=30)
    for args, text in [
        (["--compat", "--restart-overhead", "5"], "--restart-overhead applies to gpusched's engine only"),
        (["--compat", "--distribution", "nope.csv"], "--distribution applies to gpusched's engine only"),
        (["--policies", "srtf", "--thresholds", "300,900"], "--thresholds applies to las and 2d-las"),
        (["--policies", "las", "--quantum", "60"], "--quantum applies to gittins"),
        (["--policies", "fifo,fjf", "--restart-overhead", "30"], "--restart-overhead applies to the policies that preempt"),
    ]:
        p = _cli("experiment", "tiresias", "--traces", TRACES, "--cluster", "n1g4", *args, "--out", tmp_path / "x", "--quiet")
        assert p.returncode == 1 and text in p.stderr, (args, p.returncode, p.stderr)
    a_file = tmp_path / "afile"
    a_file.write_text("")
    p = _cli("experiment", "tiresias", "--traces", TRACES, "--cluster", "n1g4", "--out", a_file, "--quiet")
    assert p.returncode == 3 and "cannot create the output folder" in p.stderr, (p.returncode, p.stderr)


@pytest.mark.skipif(not (TRACES / "tiresias" / "60_job.csv").exists(), reason="../shared/traces/tiresias/60_job.csv is absent")
def test_experiment_tiresias_on_the_command_line_draws_the_jct_cdf(tmp_path):
    for extra, name in ((["--policies", "fjf,srtf"], "engine"), (["--compat", "--policies", "fjf,srtf"], "compat")):
        out = tmp_path / name
        p = _cli("experiment", "tiresias", "--traces", TRACES, "--cluster", "n1g4", *extra, "--out", out)
        assert p.returncode == 0, p.stderr
        assert "plot" in p.stdout
        assert (out / "jct-cdf.png").stat().st_size > 1000
        back = experiments.read_tiresias_outputs(out)
        assert back.compat == (name == "compat") and list(back.summary["policy"]) == ["fjf", "srtf"]
        fig = back.plot_cdf()
        assert len(fig.axes[0].get_lines()) == 2
        # Each policy's line ends at its completed jobs' count.
        done = back.jobs[back.jobs["completed"]] if back.compat else back.jobs[back.jobs["state"] == "completed"]
        assert len(done) == int(back.summary["completed"].sum())
