"""gpusched.gym.SchedulingEnv: the Gymnasium API, determinism, actions, rewards against the
engine's own metrics, and clean threads."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install .[gym])")

import gpusched  # noqa: E402
from gpusched import Cluster, Scenario, synthetic  # noqa: E402
from gpusched.gym import CLUSTER_FEATURES, JOB_FEATURES, NODE_FEATURES, SchedulingEnv  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _load_example():
    spec = importlib.util.spec_from_file_location("rl_env_example", REPO / "examples" / "rl_env.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


rl_env = _load_example()


def small() -> Scenario:
    """The example's scenario, quick size: 8 nodes, 50 synthetic jobs, replay mode."""
    return rl_env.scenario(50)


def _cluster() -> Cluster:
    return (Cluster()
            .node_group("a100", count=4, cpu=32, memory="256Gi", gpus=4, gpu_model="A100-80GB")
            .node_group("t4", count=4, cpu=16, memory="128Gi", gpus=2, gpu_model="T4"))


@pytest.fixture
def env():
    e = SchedulingEnv(small())
    yield e
    e.close()


def episode_threads() -> int:
    """Live simulation threads of environments (by name: other tests' pools may come and go)."""
    return sum(t.name == "gpusched-gym-episode" for t in threading.enumerate())


def play(env: SchedulingEnv, agent, seed: int, limit: int = 100_000) -> Tuple[List[Dict[str, np.ndarray]], List[float], Dict[str, Any]]:
    obs, info = env.reset(seed=seed)
    observations, rewards = [obs], []
    for _ in range(limit):
        obs, reward, terminated, truncated, info = env.step(agent(obs))
        observations.append(obs)
        rewards.append(reward)
        if terminated or truncated:
            break
    return observations, rewards, info


def test_the_environment_passes_gymnasiums_env_checker(env):
    from gymnasium.utils.env_checker import check_env

    check_env(env, skip_render_check=True)
    made = gymnasium.make("gpusched/Scheduling-v0", scenario=small().to_dict(), render_mode="ansi")
    try:
        check_env(made.unwrapped)   # through its spec: render modes and close twice
    finally:
        made.close()


def test_spaces_have_one_node_row_per_cluster_node_and_wait_as_the_last_action(env):
    assert env.action_space.n == 9
    assert env.observation_space["nodes"].shape == (8, len(NODE_FEATURES))
    assert env.observation_space["job"].shape == (len(JOB_FEATURES),)
    assert env.observation_space["cluster"].shape == (len(CLUSTER_FEATURES),)
    obs, info = env.reset(seed=2)
    assert obs in env.observation_space
    # With seed 2 the first job needs 4 whole GPUs and 32 CPUs: only the A100 nodes (0-3) can take it.
    assert obs["action_mask"].tolist() == [1, 1, 1, 1, 0, 0, 0, 0, 1]
    assert obs["nodes"][:, NODE_FEATURES.index("candidate")].tolist() == [1, 1, 1, 1, 0, 0, 0, 0]
    assert np.allclose(obs["nodes"][:4, NODE_FEATURES.index("gpu_milli_total")], 1.0)
    assert np.allclose(obs["nodes"][4:, NODE_FEATURES.index("gpu_milli_total")], 0.5)
    assert obs["job"][JOB_FEATURES.index("gpus")] == 1.0 and obs["job"][JOB_FEATURES.index("gpu_share")] == 1.0
    assert info["job"] == "job-000001" and info["candidates"] == 4
    assert env.action_masks().dtype == bool and env.action_masks().tolist() == obs["action_mask"].astype(bool).tolist()


def test_same_seed_and_actions_give_identical_observations_and_rewards():
    runs = []
    for _ in range(2):
        e = SchedulingEnv(small(), reward="wait")
        try:
            runs.append(play(e, rl_env.random_agent(7), seed=3))
        finally:
            e.close()
    (obs_a, rew_a, info_a), (obs_b, rew_b, info_b) = runs
    assert len(obs_a) == len(obs_b) > 50
    assert rew_a == rew_b
    for a, b in zip(obs_a, obs_b):
        for key in a:
            assert np.array_equal(a[key], b[key]), key
    # The summaries differ only in the scenario digest: each environment's plugin has its own name.
    assert {k: v for k, v in info_a["summary"].items() if k != "scenario"} == \
        {k: v for k, v in info_b["summary"].items() if k != "scenario"}
    # Another simulation seed is another episode.
    e = SchedulingEnv(small(), reward="wait")
    try:
        _, rew_c, _ = play(e, rl_env.random_agent(7), seed=4)
    finally:
        e.close()
    assert rew_c != rew_a


def test_waiting_defers_the_job_until_capacity_frees(env):
    obs, info = env.reset(seed=1)
    first, t0 = info["job_id"], info["time_s"]
    obs, reward, terminated, truncated, info = env.step(env.action_space.n - 1)   # wait
    assert info["placed"] is False and info["invalid_action"] is False
    seen_again = None
    while not (terminated or truncated):
        if info["job_id"] == first:
            seen_again = info["time_s"]
            break
        obs, reward, terminated, truncated, info = env.step(rl_env.best_fit(obs))
    assert seen_again is not None and seen_again > t0


def test_a_node_that_is_not_a_candidate_counts_as_wait_plus_the_penalty():
    outcomes = {}
    for name, pick in (("wait", lambda obs: len(obs["action_mask"]) - 1),
                       ("infeasible", lambda obs: int(np.flatnonzero(obs["action_mask"][:-1] == 0)[0]))):
        e = SchedulingEnv(small(), reward="slowdown", invalid_action_penalty=2.5)
        try:
            obs, _ = e.reset(seed=2)
            assert obs["action_mask"][:-1].min() == 0   # some node cannot take the first job
            outcomes[name] = e.step(pick(obs))
        finally:
            e.close()
    (obs_w, rew_w, _, _, info_w), (obs_i, rew_i, _, _, info_i) = outcomes["wait"], outcomes["infeasible"]
    assert info_i["invalid_action"] is True and info_i["placed"] is False and info_w["invalid_action"] is False
    assert rew_i == pytest.approx(rew_w - 2.5, abs=1e-12)
    for key in obs_w:
        assert np.array_equal(obs_w[key], obs_i[key])


def test_an_episode_terminates_when_the_run_ends_and_then_step_needs_reset(env):
    observations, rewards, info = play(env, rl_env.best_fit, seed=1)
    assert info["summary"]["jobs"]["completed"] == 50
    assert info["job_id"] == -1 and info["action_mask"].tolist() == [False] * 8 + [True]
    assert env.result is not None and env.result.summary["jobs"]["total"] == 50
    assert len(rewards) == 50          # best-fit never waits here: one decision per job
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_max_steps_truncates_and_stops_the_simulation_thread():
    before = episode_threads()
    e = SchedulingEnv(small(), max_steps=5)
    try:
        obs, _ = e.reset(seed=1)
        assert episode_threads() == before + 1
        for i in range(5):
            obs, reward, terminated, truncated, info = e.step(rl_env.best_fit(obs))
        assert truncated is True and terminated is False
        assert episode_threads() == before
    finally:
        e.close()


def test_reset_and_close_in_mid_episode_leak_no_thread_and_no_plugin():
    before, active = episode_threads(), threading.active_count()
    e = SchedulingEnv(small())
    name = e.plugin_name
    for seed in range(5):
        obs, _ = e.reset(seed=seed)
        for _ in range(3):
            obs, *_ = e.step(rl_env.best_fit(obs))
        assert episode_threads() == before + 1
    e.close()
    e.close()   # twice is fine
    assert episode_threads() == before
    assert threading.active_count() <= active
    assert name not in gpusched.registered_plugins()
    # An environment dropped without close() stops its thread when collected.
    e2 = SchedulingEnv(small())
    e2.reset(seed=1)
    assert episode_threads() == before + 1
    del e2
    import gc

    gc.collect()
    assert episode_threads() == before


def test_episode_returns_match_the_engines_metrics():
    """Each reward's episode return equals what the finished run reports, and the last step had
    nothing to settle: the job events told the environment everything as it happened."""
    totals = {}
    for reward in ("utilisation", "wait", "slowdown"):
        e = SchedulingEnv(small(), reward=reward)
        try:
            _, rewards, info = play(e, rl_env.random_agent(5), seed=2)
            assert info["settled"] == {"waiting_job_s": 0.0, "slowdown": 0.0, "jobs": 0, "unseen_jobs": 0}
            totals[reward] = (sum(rewards), e.result)
        finally:
            e.close()
    ret, result = totals["utilisation"]
    gpus = result.summary["cluster"]["gpus"]
    assert ret * gpus == pytest.approx(result.summary["allocation"]["gpu_hours"], rel=1e-9)
    ret, result = totals["wait"]
    assert result.summary["jobs"]["completed"] == 50 and result.summary["preemption"]["evictions"] == 0
    assert -ret * 3600 == pytest.approx(result.jobs["wait_s"].sum(), rel=1e-9)
    assert -ret * 3600 > 1000   # the random agent makes jobs wait
    ret, result = totals["slowdown"]
    jobs = result.jobs
    assert (jobs["state"] == "completed").all()
    # Nothing slows jobs down in this scenario: each ran for its duration.
    assert -ret == pytest.approx((jobs["jct_s"] / (jobs["end_s"] - jobs["start_s"])).sum(), rel=1e-9)


def test_gangs_start_only_with_min_available_tasks_and_the_rewards_follow_them():
    gang = [{"id": f"g{i}", "submit_time": i * 60, "duration": 1800 + 100 * i, "tasks": 3, "min_available": 2,
             "requests": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": 2}} for i in range(12)]
    share = [{"id": f"s{i}", "submit_time": i * 45, "duration": 900 + 50 * i,
              "requests": {"cpu": "2", "memory": "4Gi", "gpusched.io/gpu-milli": 300}} for i in range(20)]
    sc = Scenario(_cluster(), "default", {"jobs": gang + share}, seed=1)
    seen = []
    e = SchedulingEnv(sc, reward=lambda info: seen.append(info) or 0.0)
    try:
        _, _, info = play(e, rl_env.random_agent(4), seed=1)
        result = e.result
    finally:
        e.close()
    assert info["settled"]["jobs"] == 0
    placements = result.placements
    tasks = placements.drop_duplicates(["job", "task"]).groupby("job").size()
    gangs = tasks[tasks.index.str.startswith("g")]
    # Each gang started with at least min_available (2) tasks; one started with 2 takes its third
    # when room appears (an elastic gang grows, issue 13), so it may end with all 3.
    assert len(gangs) > 0 and (gangs >= 2).all() and (gangs <= 3).all()
    gpu_share_s = sum(i["gpu_share_s"] for i in seen)
    assert gpu_share_s / 3600 * 24 == pytest.approx(result.summary["allocation"]["gpu_hours"], rel=1e-9)
    jobs = result.jobs
    waited = jobs["wait_s"].sum() + (result.end_s - jobs["submit_s"])[jobs["start_s"].isna()].sum()
    assert sum(i["waiting_job_s"] for i in seen) == pytest.approx(waited, rel=1e-9)


def test_the_best_fit_heuristic_allocates_more_gpu_than_random_while_jobs_arrive():
    e = SchedulingEnv(small())
    try:
        for seed in (1, 2, 3, 4):
            rand = rl_env.episode(e, rl_env.random_agent(seed), seed)["summary"]["allocation"]
            best = rl_env.episode(e, rl_env.best_fit, seed)["summary"]["allocation"]
            assert best["gpu_pct_while_arriving"] >= rand["gpu_pct_while_arriving"], seed
    finally:
        e.close()


def test_a_callable_reward_sees_the_step_info(env):
    seen = []

    def reward(info: Dict[str, Any]) -> float:
        seen.append(info)
        return info["interval_s"]

    e = SchedulingEnv(small(), reward=reward)
    try:
        obs, _ = e.reset(seed=1)
        obs, r, *_ = e.step(rl_env.best_fit(obs))
        assert r == seen[-1]["interval_s"] and r > 0
        assert {"gpu_share_s", "slowdown_accrued", "waiting_job_s", "time_s"} <= set(seen[-1])
    finally:
        e.close()


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="reward"):
        SchedulingEnv(small(), reward="throughput")
    with pytest.raises(ValueError, match="easy-backfill"):
        SchedulingEnv(small(), profile="slurm-backfill")
    with pytest.raises(ValueError, match="render_mode"):
        SchedulingEnv(small(), render_mode="human")


def test_fill_mode_jobs_that_wait_fail_at_their_offer_and_the_rewards_stay_exact():
    sc = Scenario(_cluster(), "default", synthetic(jobs=80, load=0, arrival_rate_per_hour=240,
                                                   duration_median_s=1800), seed=1, mode="fill")
    seen = []
    e = SchedulingEnv(sc, reward=lambda info: seen.append(info) or info["gpu_share_s"] / 3600)
    try:
        _, rewards, info = play(e, rl_env.random_agent(2), seed=1)
    finally:
        e.close()
    summary = info["summary"]
    assert summary["jobs"]["failed"] > 0
    assert sum(rewards) * 24 == pytest.approx(summary["allocation"]["gpu_hours"], rel=1e-9)
    # A job the agent made wait failed at that offer (no retry in fill mode): nobody ever waited,
    # and the run's job table had nothing to add.
    assert sum(i["waiting_job_s"] for i in seen) == 0.0
    assert [i["waiting_jobs"] for i in seen] == [1] * (len(seen) - 1) + [0]   # only the job being decided
    assert info["settled"]["waiting_job_s"] == 0.0 and info["settled"]["slowdown"] == 0.0
    assert sum(not i["placed"] for i in seen) > 0    # the agent did make jobs wait


# ---- the engine moves jobs behind the agent's back

def _gpu_nodes(count: int) -> Cluster:
    return Cluster().node_group("n", count=count, cpu=16, memory="64Gi", gpus=2, gpu_model="A100-80GB")


def lowest_candidate(obs: Dict[str, np.ndarray]) -> int:
    """The candidate node with the lowest index, else wait."""
    nodes = np.flatnonzero(obs["action_mask"][:-1])
    return int(nodes[0]) if nodes.size else len(obs["action_mask"]) - 1


def truth_from_event_log(result, durations: Dict[str, float]) -> Dict[str, float]:
    """Per the run's own event log: job-seconds waiting (in the system, not running) and the
    summed slowdown (time in the system / duration), jobs still there counting until the end."""
    end = result.end_s
    submit, running_since, ran, left = {}, {}, {}, {}
    for line in result.event_log:
        t, event, job = line.split(",")[:3]
        t = float(t)
        if event == "submit":
            submit[job], ran[job] = t, 0.0
        elif event == "start":
            running_since[job] = t
        elif event in ("finish", "fail", "requeue"):
            if job in running_since:
                ran[job] += t - running_since.pop(job)
            if event != "requeue":
                left[job] = t
    for job, since in running_since.items():
        ran[job] += end - since
    in_system = {job: left.get(job, end) - s for job, s in submit.items()}
    return {"waiting_job_s": sum(in_system[j] - ran[j] for j in submit),
            "slowdown": sum(in_system[j] / durations[j] for j in submit if j in durations)}


class _Recorder:
    """A filter that passes every candidate and records the whole cluster at each call (class
    level: each run builds its own instance)."""

    seen: List[Tuple[str, float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def filter(self, job, nodes):
        whole = nodes.cluster()
        _Recorder.seen.append((job.name, job.now_s, np.array(nodes.index), np.array(whole.cpu_free_milli),
                               np.array(whole.gpu_milli_free), np.array(whole.memory_free_mib)))
        return np.ones(len(nodes), dtype=bool)


def test_node_failures_and_noexecute_taints_keep_observations_and_rewards_exact():
    """The engine evicts jobs (a NoExecute taint, a node going down) and restarts them elsewhere:
    every observation shows the engine's own state of every node, where placements plus
    durations (what the environment used to assume) would be wrong, and the rewards add up to
    the run's own numbers with nothing left to settle at the end."""
    durations = {f"j{i}": 600.0 + 50 * i for i in range(12)}
    jobs = [{"id": name, "submit_time": 40 * i, "duration": d,
             "requests": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": 1}}
            for i, (name, d) in enumerate(durations.items())]
    doc = Scenario(_gpu_nodes(4), "default", {"jobs": jobs}, seed=1).to_dict()
    doc["events"] = [
        {"time_s": 100, "node": "n-0000", "type": "taint", "taint": {"key": "maint", "effect": "NoExecute"}},
        {"time_s": 250, "node": "n-0001", "type": "node_down"},
        {"time_s": 400, "node": "n-0001", "type": "node_up"},
        {"time_s": 500, "node": "n-0000", "type": "untaint", "taint": {"key": "maint", "effect": "NoExecute"}},
    ]
    doc["outputs"] = {"event_log": True}
    gpusched.register_plugin("gym-test-recorder", _Recorder, replace=True)
    _Recorder.seen.clear()
    infos, observations = [], []
    e = SchedulingEnv(doc, profile={"name": "recorded", "extends": "default", "filter": ["gym-test-recorder"]},
                      reward=lambda info: infos.append(info) or 0.0)
    try:
        obs, info = e.reset(seed=1)
        observations.append((obs, info))
        while True:
            obs, _, terminated, truncated, info = e.step(lowest_candidate(obs))
            observations.append((obs, info))
            if terminated or truncated:
                break
        result = e.result
    finally:
        e.close()
        gpusched.unregister_plugin("gym-test-recorder")
    assert result.summary["preemption"]["evictions"] >= 4 and result.summary["jobs"]["completed"] == 12

    # Observations: the engine's state of all 4 nodes at each decision (the recorder saw the same
    # cluster just before the agent's plugin), not what placements and durations imply.
    decisions = observations[:-1]
    assert len(decisions) == len(_Recorder.seen) > 12        # evicted jobs were offered again
    cpu, gpu, mem = (NODE_FEATURES.index(c) for c in ("cpu_free", "gpu_milli_free", "memory_free"))
    assumed: List[Tuple[int, float]] = []                    # (node, end) per placement, by duration
    drifted = 0
    for (obs, info), (name, now, index, cpu_free, gpu_free, mem_free) in zip(decisions, _Recorder.seen):
        assert (info["job"], info["time_s"]) == (name, now)
        assert obs["action_mask"][:-1].nonzero()[0].tolist() == index.tolist()
        assert np.array_equal(obs["nodes"][:, cpu], (cpu_free / 16000).astype(np.float32))
        assert np.array_equal(obs["nodes"][:, gpu], (gpu_free / 2000).astype(np.float32))
        assert np.array_equal(obs["nodes"][:, mem], (mem_free / 65536).astype(np.float32))
        believed = np.full(4, 16000)
        for node, end in assumed:
            if end > now:
                believed[node] -= 4000
        drifted += not np.array_equal(believed, cpu_free)
        node = lowest_candidate(obs)
        if node < 4:
            assumed.append((node, now + durations[name]))
    assert drifted > 0
    # Right after the taint at t=100, node 0 is empty in the observation and not a candidate.
    after = next(o for o, i in decisions if i["time_s"] >= 100)
    assert after["nodes"][0, cpu] == 1.0 and after["action_mask"][0] == 0

    # Rewards: GPU-hours, job-seconds waiting and slowdowns as the run's own records have them.
    final = observations[-1][1]
    assert final["settled"] == {"waiting_job_s": 0.0, "slowdown": 0.0, "jobs": 0, "unseen_jobs": 0}
    truth = truth_from_event_log(result, durations)
    gpu_share_s = sum(i["gpu_share_s"] for i in infos)
    assert gpu_share_s / 3600 * 8 == pytest.approx(result.summary["allocation"]["gpu_hours"], rel=1e-9)
    assert sum(i["waiting_job_s"] for i in infos) == pytest.approx(truth["waiting_job_s"], rel=1e-9)
    assert sum(i["slowdown_accrued"] for i in infos) == pytest.approx(truth["slowdown"], rel=1e-9)
    assert truth["waiting_job_s"] > 0
    # The job table's wait_s (submit to the last start) is not the time spent waiting here.
    assert result.jobs["wait_s"].sum() > truth["waiting_job_s"] + 100


def test_what_the_agent_never_saw_is_settled_from_the_run_at_the_end():
    """A job that arrives when no node has room is not offered, nor is a job evicted when nothing
    else fits, before the horizon: the last step adds their waiting from the run's job table."""
    whole_node = {"cpu": "16", "memory": "8Gi", "nvidia.com/gpu": 2}
    jobs = [{"id": "a", "submit_time": 0, "duration": 5000, "requests": whole_node},
            {"id": "b", "submit_time": 0, "duration": 5000, "requests": whole_node},
            {"id": "late", "submit_time": 10, "duration": 100, "requests": {"cpu": "8"}}]
    doc = Scenario(_gpu_nodes(2), "default", {"jobs": jobs}, seed=1).to_dict()
    doc["events"] = [{"time_s": 100, "node": "n-0001", "type": "node_down"}]
    doc["horizon_s"] = 1000
    doc["outputs"] = {"event_log": True}
    infos = []
    e = SchedulingEnv(doc, reward=lambda info: infos.append(info) or 0.0)
    try:
        _, _, info = play(e, lowest_candidate, seed=1)
        result = e.result
    finally:
        e.close()
    assert len(infos) == 2 and result.end_s == 1000
    assert result.jobs.set_index("job")["state"].to_dict() == {"a": "running", "b": "pending", "late": "pending"}
    # b waited from its eviction (100) to the end; late from its arrival (10), never offered.
    assert info["settled"] == {"waiting_job_s": 900.0 + 990.0, "slowdown": pytest.approx(900 / 5000),
                               "jobs": 2, "unseen_jobs": 1}
    truth = truth_from_event_log(result, {"a": 5000.0, "b": 5000.0})
    assert truth["waiting_job_s"] == 1890.0
    assert sum(i["waiting_job_s"] for i in infos) == pytest.approx(truth["waiting_job_s"], rel=1e-12)
    assert sum(i["slowdown_accrued"] for i in infos) == pytest.approx(truth["slowdown"], rel=1e-12)
    assert sum(i["gpu_share_s"] for i in infos) / 3600 * 4 == pytest.approx(result.summary["allocation"]["gpu_hours"],
                                                                             rel=1e-12)


def test_autoscaled_nodes_have_rows_from_the_start_and_become_candidates_when_provisioned():
    cluster = (Cluster()
               .node_group("base", count=1, cpu=16, memory="64Gi", gpus=2, gpu_model="A100-80GB")
               .node_group("burst", count=2, cpu=16, memory="64Gi", gpus=2, gpu_model="A100-80GB",
                           autoscale={"min": 0, "provisioning_delay_s": 300, "scale_down_idle_s": 600}))
    jobs = [{"id": f"j{i}", "submit_time": 0, "duration": 1200,
             "requests": {"cpu": "16", "memory": "8Gi", "nvidia.com/gpu": 2}} for i in range(3)]
    infos = []
    e = SchedulingEnv(Scenario(cluster, "default", {"jobs": jobs}, seed=1),
                      reward=lambda info: infos.append(info) or info["gpu_share_s"] / 3600)
    try:
        assert e.observation_space["nodes"].shape == (3, len(NODE_FEATURES))
        obs, info = e.reset(seed=1)
        assert obs["action_mask"].tolist() == [1, 0, 0, 1]          # the burst nodes are not up yet
        assert np.allclose(obs["nodes"][:, NODE_FEATURES.index("cpu_total")], 1.0)
        masks = [obs["action_mask"].tolist()]
        total = 0.0
        while True:
            obs, reward, terminated, truncated, info = e.step(lowest_candidate(obs))
            total += reward
            masks.append(obs["action_mask"].tolist())
            if terminated or truncated:
                break
        summary = e.result.summary
    finally:
        e.close()
    assert any(m[1] or m[2] for m in masks)                       # provisioned nodes became candidates
    assert summary["jobs"]["completed"] == 3
    assert total * 6 == pytest.approx(summary["allocation"]["gpu_hours"], rel=1e-9)


def test_an_open_environment_does_not_stop_sweeps_on_worker_processes():
    """Sweeps ship every Python registration to their workers; the environment's own plugin
    travels as an idle one."""
    import concurrent.futures as cf

    e = SchedulingEnv(rl_env.scenario(20))
    try:
        with cf.ProcessPoolExecutor(1) as pool:
            frame = gpusched.sweep(rl_env.scenario(20), seeds=[1, 2], executor=pool, progress=False)
        assert frame["seed"].tolist() == [1, 2]
        obs, _ = e.reset(seed=1)            # and the environment still works
        assert obs in e.observation_space
    finally:
        e.close()
