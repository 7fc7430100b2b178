"""Plots: CDFs, time-series comparisons, the node x time heatmap, comparisons across runs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpusched
from conftest import medium_scenario

pytest.importorskip("matplotlib")
from matplotlib.image import imread  # noqa: E402

from gpusched import plotting  # noqa: E402


def _assert_png(path: Path, min_bytes: int = 8000) -> np.ndarray:
    """The file is a PNG of non-trivial size that decodes to a non-blank image; returns the pixels."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    assert len(data) > min_bytes, (path, len(data))
    pixels = imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 200 and pixels.shape[1] > 300
    assert pixels[..., :3].std() > 0.05  # not a blank canvas
    return pixels


@pytest.fixture(scope="module")
def small() -> gpusched.Result:
    return gpusched.run(Path(__file__).resolve().parents[2] / "examples" / "small.json")


@pytest.fixture(scope="module")
def two_profiles() -> dict:
    """The same 600-job workload under binpack and spread."""
    out = {}
    for profile in ("binpack", "spread"):
        sc = medium_scenario(jobs=600, name="cmp")
        sc["profile"] = profile
        out[profile] = gpusched.run(sc)
    return out


# -- CDFs -------------------------------------------------------------------------------------------


def test_ecdf_steps_from_one_over_n_to_one_over_sorted_values():
    x, p = plotting.ecdf([3.0, np.nan, 1.0, 2.0, 2.0])
    assert x.tolist() == [1.0, 2.0, 2.0, 3.0]
    assert p.tolist() == [0.25, 0.5, 0.75, 1.0]
    x, p = plotting.ecdf([np.nan])
    assert len(x) == 0 and len(p) == 0


@pytest.mark.parametrize("metric,column", [("jct", "jct_s"), ("wait", "wait_s")])
def test_a_runs_cdf_covers_its_jobs_from_zero_to_one(small, tmp_path, metric, column):
    png = tmp_path / f"{metric}.png"
    fig = small.plot_cdf(png, metric=metric)
    _assert_png(png)
    (line,) = fig.axes[0].lines
    xs, ys = line.get_xdata(), line.get_ydata()
    values = small.jobs[column].dropna().sort_values().to_numpy()
    assert ys[0] == 0.0 and ys[-1] == 1.0 and np.all(np.diff(ys) > 0)
    assert len(xs) == len(values) + 1
    # small.json's times are under 3 h: minutes when they exceed 3 min, else seconds.
    scale = 60.0 if values.max() >= 180 else 1.0
    np.testing.assert_allclose(xs[1:] * scale, values)
    assert f"n={len(values)}" in fig.axes[0].get_legend().get_texts()[0].get_text()


def test_cdf_across_runs_from_a_dict_a_list_and_a_long_form_frame(two_profiles, tmp_path):
    fig = plotting.cdf(two_profiles, metric="wait", path=tmp_path / "dict.png")
    _assert_png(tmp_path / "dict.png")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert [lab.split(" ")[0] for lab in labels] == ["binpack", "spread"]
    for line in fig.axes[0].lines:
        assert line.get_ydata()[0] == 0 and line.get_ydata()[-1] == 1

    # A list of Results gets labels from what differs between them (here the profile).
    fig = plotting.cdf(list(two_profiles.values()), metric="jct")
    assert [t.get_text().split(" ")[0] for t in fig.axes[0].get_legend().get_texts()] == ["binpack", "spread"]
    seeds = [gpusched.run(medium_scenario(jobs=200), seed=s) for s in (1, 2)]
    fig = plotting.cdf(seeds)
    assert [t.get_text().split(" (")[0] for t in fig.axes[0].get_legend().get_texts()] == ["seed 1", "seed 2"]

    # A long-form jobs frame (as a sweep concatenates them) grouped by its "run" column.
    frame = pd.concat([r.jobs.assign(run=name) for name, r in two_profiles.items()], ignore_index=True)
    fig = plotting.cdf(frame, metric="wait", path=tmp_path / "frame.png")
    _assert_png(tmp_path / "frame.png")
    assert len(fig.axes[0].lines) == 2
    for line, r in zip(fig.axes[0].lines, two_profiles.values()):
        assert len(line.get_xdata()) == r.jobs["wait_s"].notna().sum() + 1
    # An explicit grouping column, and errors that say what is wrong.
    frame["policy"] = frame["run"]
    assert len(plotting.cdf(frame, by="policy").axes[0].lines) == 2
    with pytest.raises(KeyError, match="nope"):
        plotting.cdf(frame, by="nope")
    with pytest.raises(KeyError, match="no column 'bogus'"):
        plotting.cdf(two_profiles, metric="bogus")
    with pytest.raises(ValueError, match="by="):
        plotting.cdf(two_profiles, by="run")


def test_the_same_plot_saves_the_same_bytes(small, tmp_path):
    small.plot_cdf(tmp_path / "a.png")
    small.plot_cdf(tmp_path / "b.png")
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()


# -- time series --------------------------------------------------------------------------------------


def test_compare_timeseries_draws_one_line_per_run_in_each_panel(two_profiles, tmp_path):
    fig = plotting.compare_timeseries(two_profiles, path=tmp_path / "ts.png", title="binpack vs spread")
    _assert_png(tmp_path / "ts.png")
    assert len(fig.axes) == 2
    for ax, col in zip(fig.axes, ("gpu_alloc_pct", "pending_jobs")):
        assert len(ax.lines) == 2
        for line, r in zip(ax.lines, two_profiles.values()):
            np.testing.assert_allclose(line.get_ydata(), r.timeseries[col])
    long = pd.concat([r.timeseries.assign(profile=p) for p, r in two_profiles.items()])
    fig = plotting.compare_timeseries(long, columns="cpu_alloc_pct")
    assert len(fig.axes) == 1 and len(fig.axes[0].lines) == 2


# -- heatmap --------------------------------------------------------------------------------------------


def _gpu_seconds_from_jobs(r: gpusched.Result) -> float:
    """GPU-seconds of the jobs table: tasks x (whole GPUs + share) x run time (until the end)."""
    j = r.jobs[r.jobs["start_s"].notna()]
    run_s = j["end_s"].fillna(r.end_s) - j["start_s"]
    return float((j["tasks"] * (j["gpus"] + j["gpu_milli"] / 1000.0) * run_s).sum())


def test_the_heatmap_matrix_holds_every_gpu_second(small, tmp_path):
    m = small.allocation_matrix(bins=45)
    assert list(m.index) == ["gpu-a", "gpu-b", "gpu-c"]  # nodes with a GPU, by name
    assert m.shape == (3, 45) and m.attrs["bin_s"] == pytest.approx(small.end_s / 45)
    assert m.to_numpy().sum() * m.attrs["bin_s"] == pytest.approx(_gpu_seconds_from_jobs(small))
    # By hand: train-4gpu holds gpu-a's 4 GPUs from 0 to 3600 s; gpu-b has infer-a's 0.3 GPU from
    # 20 s and the notebook's 0.1 GPU from 70 s: in 0..100 s, (0.3 * 80 + 0.1 * 30) / 100.
    assert m.loc["gpu-a", 0.0] == pytest.approx(4.0)
    assert m.loc["gpu-b", 0.0] == pytest.approx(0.27)
    assert m.loc["gpu-c"].iloc[:10].sum() == 0
    fig = small.plot_heatmap(tmp_path / "heat.png", bins=45)
    _assert_png(tmp_path / "heat.png")
    assert fig.axes[0].images[0].get_array().shape == (3, 45)


def test_the_heatmap_of_a_medium_run_matches_the_jobs_table_and_summary(two_profiles):
    r = two_profiles["binpack"]
    m = r.allocation_matrix()
    total = m.to_numpy().sum() * m.attrs["bin_s"]
    assert total == pytest.approx(_gpu_seconds_from_jobs(r), rel=1e-9)
    assert total / 3600 == pytest.approx(r.summary["allocation"]["gpu_hours"], rel=1e-9)
    # Nodes sort by name with numbers compared as numbers.
    names = list(m.index)
    assert names == sorted(names, key=lambda n: (n.rsplit("-", 1)[0], int(n.rsplit("-", 1)[1])))


def test_a_large_cluster_is_summed_into_at_most_max_nodes_rows(demo_result, tmp_path):
    full = demo_result.allocation_matrix(bins=60, max_nodes=10_000)
    capped = demo_result.allocation_matrix(bins=60, max_nodes=64)
    nodes = full.attrs["nodes"]
    assert nodes > 64 and len(full) == nodes
    per_row = math.ceil(nodes / 64)
    assert capped.attrs["nodes_per_row"] == per_row and len(capped) == math.ceil(nodes / per_row) <= 64
    np.testing.assert_allclose(capped.iloc[0].to_numpy(), full.iloc[:per_row].sum().to_numpy(), atol=1e-9)
    assert (capped.to_numpy() >= 0).all()
    assert capped.to_numpy().sum() == pytest.approx(full.to_numpy().sum())
    assert capped.index[0] == f"{full.index[0]} … {full.index[per_row - 1]}"
    demo_result.plot_heatmap(tmp_path / "demo_heat.png")
    _assert_png(tmp_path / "demo_heat.png")


# -- comparisons across runs ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tidy() -> pd.DataFrame:
    """One row per run: profile, seed and summary figures (a sweep's tidy frame)."""
    rows = []
    for profile in ("binpack", "spread", "fgd"):
        for seed in (1, 2, 3):
            sc = medium_scenario(jobs=300, name="tidy")
            sc["profile"] = profile
            s = gpusched.run(sc, seed=seed).summary
            rows.append({"profile": profile, "seed": seed, "wait_mean_s": s["wait"]["mean_s"],
                         "jct_p95_s": s["jct"]["p95_s"], "load": "high" if seed > 1 else "low"})
    return pd.DataFrame(rows)


def test_compare_bars_are_group_means_with_every_run_as_a_dot(tidy, tmp_path):
    fig = plotting.compare(tidy, x="profile", y=["wait_mean_s", "jct_p95_s"], path=tmp_path / "bar.png")
    _assert_png(tmp_path / "bar.png")
    assert len(fig.axes) == 2
    for ax, col in zip(fig.axes, ("wait_mean_s", "jct_p95_s")):
        heights = [patch.get_height() for patch in ax.patches]
        np.testing.assert_allclose(heights, tidy.groupby("profile", sort=False)[col].mean().to_numpy())
        assert [t.get_text() for t in ax.get_xticklabels()] == ["binpack", "spread", "fgd"]
        assert sum(len(c.get_offsets()) for c in ax.collections if hasattr(c, "get_offsets")) >= len(tidy)


def test_compare_draws_boxes_and_hue_groups(tidy, tmp_path):
    fig = plotting.compare(tidy, x="profile", y="wait_mean_s", kind="box", path=tmp_path / "box.png")
    _assert_png(tmp_path / "box.png")
    ax = fig.axes[0]
    # Each profile's median is drawn as a horizontal line (box medians, like caps, are flat).
    flat = [float(line.get_ydata()[0]) for line in ax.lines
            if len(line.get_ydata()) == 2 and line.get_ydata()[0] == line.get_ydata()[1]]
    for median in tidy.groupby("profile", sort=False)["wait_mean_s"].median():
        assert any(math.isclose(y, median) for y in flat), (median, flat)
    fig = plotting.compare(tidy, x="profile", y="wait_mean_s", hue="load", path=tmp_path / "hue.png")
    _assert_png(tmp_path / "hue.png")
    assert len(fig.axes[0].patches) == 6  # 3 profiles x 2 hue values
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["low", "high"]
    with pytest.raises(ValueError, match="kind"):
        plotting.compare(tidy, kind="violin")
    with pytest.raises(KeyError, match="no column 'nope'"):
        plotting.compare(tidy, y="nope")
