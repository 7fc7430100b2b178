"""Same scenario and seed: the same results and the same bytes; another seed: other results."""

from __future__ import annotations

import pandas as pd

import gpusched
from conftest import medium_scenario


def _files(directory):
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_the_same_scenario_and_seed_give_identical_tables_and_files(tmp_path):
    doc = medium_scenario(jobs=3000, seed=11)
    a = gpusched.run(doc)
    b = gpusched.run(doc)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    pd.testing.assert_frame_equal(a.timeseries, b.timeseries)
    assert a.summary == b.summary
    a.write(tmp_path / "a")
    b.write(tmp_path / "b")
    fa, fb = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert sorted(fa) == ["fragmentation.csv", "jobs.csv", "meta.json", "report.md", "summary.json", "timeseries.csv"]
    assert fa == fb


def test_the_small_example_with_its_event_log_is_byte_identical(small_path, tmp_path):
    a = gpusched.run(small_path)
    b = gpusched.run(small_path)
    assert a.event_log == b.event_log
    a.write(tmp_path / "a")
    b.write(tmp_path / "b")
    assert _files(tmp_path / "a") == _files(tmp_path / "b")


def test_another_seed_gives_another_demo(demo_result, tmp_path):
    other = gpusched.run("demo", seed=43)
    assert other.stamp["seed"] == 43
    assert not demo_result.jobs.equals(other.jobs)
    assert demo_result.stamp["digest"] != other.stamp["digest"]
    demo_result.write(tmp_path / "a")
    other.write(tmp_path / "b")
    assert (tmp_path / "a" / "jobs.csv").read_bytes() != (tmp_path / "b" / "jobs.csv").read_bytes()
