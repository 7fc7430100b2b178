"""Simulations release the GIL: two Python threads run two simulations at once, correctly."""

from __future__ import annotations

import threading

import pandas as pd

import gpusched
from conftest import medium_scenario


def test_two_threads_run_two_simulations_and_both_are_right():
    docs = [medium_scenario(jobs=6000, seed=1, name="one"), medium_scenario(jobs=4000, seed=2, name="two")]
    expected = [gpusched.run(d) for d in docs]          # one after the other
    results = [None, None]
    errors = []
    progress_threads = [set(), set()]
    start = threading.Barrier(2)

    def work(i):
        try:
            start.wait()
            results[i] = gpusched.run(docs[i], progress=lambda f: progress_threads[i].add(threading.get_ident()))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    for i in range(2):
        assert results[i] is not None
        assert results[i].stamp["scenario"] == docs[i]["name"]
        assert results[i].summary["jobs"] == expected[i].summary["jobs"]
        pd.testing.assert_frame_equal(results[i].jobs, expected[i].jobs)
        pd.testing.assert_frame_equal(results[i].timeseries, expected[i].timeseries)
        # The progress callback ran in the thread that started the run, holding the GIL.
        assert progress_threads[i] == {threads[i].ident}
