"""A reinforcement-learning environment over a gpusched scenario: a random agent and a best-fit
heuristic each schedule one episode, and a built-in profile runs the same scenario and seed.

Trains nothing: it shows the environment's API (``gpusched.gym.SchedulingEnv``) and gives a
baseline any learned policy should beat. Run from anywhere::

    python examples/rl_env.py            # 8 nodes, 200 jobs
    python examples/rl_env.py --quick    # 8 nodes, 50 jobs (what the tests run)

Needs gymnasium (``pip install gymnasium``, or ``pip install .[gym]``).
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, Dict, List

import numpy as np

import gpusched
from gpusched import Cluster, Scenario, synthetic
from gpusched.gym import JOB_FEATURES, NODE_FEATURES, SchedulingEnv

Agent = Callable[[Dict[str, np.ndarray]], int]

CPU_FREE = NODE_FEATURES.index("cpu_free")
GPU_FREE = NODE_FEATURES.index("gpu_milli_free")
JOB_GPUS = JOB_FEATURES.index("gpus")


def scenario(jobs: int) -> Scenario:
    """8 nodes (4 with 4 A100s, 4 with 2 T4s), a busy synthetic workload, replay mode."""
    cluster = (Cluster()
               .node_group("a100", count=4, cpu=32, memory="256Gi", gpus=4, gpu_model="A100-80GB")
               .node_group("t4", count=4, cpu=16, memory="128Gi", gpus=2, gpu_model="T4"))
    mix = {"cpu_only": 0.1, "fractional": 0.4, "gpu1": 0.3, "gpu2": 0.15, "gpu4": 0.05}
    workload = synthetic(jobs=jobs, load=0, arrival_rate_per_hour=240, duration_median_s=1800,
                         duration_max_s=7200, mix=mix)
    return Scenario(cluster, "default", workload, seed=1, name="rl-small")


def random_agent(seed: int) -> Agent:
    """Any valid action (a candidate node or wait), uniformly."""
    rng = np.random.default_rng(seed)

    def act(obs: Dict[str, np.ndarray]) -> int:
        return int(rng.choice(np.flatnonzero(obs["action_mask"])))

    return act


def best_fit(obs: Dict[str, np.ndarray]) -> int:
    """The candidate left with the least free GPU (GPU tasks) or CPU (others); never waits
    while a node fits. Ties go to the lowest node index."""
    nodes = obs["nodes"]
    candidates = np.flatnonzero(obs["action_mask"][:-1])
    if candidates.size == 0:
        return len(obs["action_mask"]) - 1
    column = GPU_FREE if obs["job"][JOB_GPUS] > 0 else CPU_FREE
    free = nodes[candidates, column]
    return int(candidates[int(np.argmin(free))])


def episode(env: SchedulingEnv, agent: Agent, seed: int) -> Dict[str, Any]:
    """Runs one episode; returns the return, the step count, the run's summary and what the last
    step settled from the run's job table (jobs the agent was never offered, see gpusched.gym)."""
    obs, info = env.reset(seed=seed)
    total, steps, done = 0.0, 0, False
    while not done:
        obs, reward, terminated, truncated, info = env.step(agent(obs))
        total += reward
        steps += 1
        done = terminated or truncated
    assert env.result is not None
    return {"return": total, "steps": steps, "summary": env.result.summary, "settled": info.get("settled")}


def row(name: str, summary: Dict[str, Any], ret: str = "", steps: str = "") -> List[str]:
    jobs, wait, jct, alloc = summary["jobs"], summary["wait"], summary["jct"], summary["allocation"]
    return [name, str(jobs["completed"]), f"{wait['mean_s']:.0f}", f"{jct['mean_s']:.0f}",
            f"{alloc['gpu_pct_while_arriving']:.1f}", f"{alloc['gpu_pct_time_weighted']:.1f}", steps, ret]


def main(argv: List[str] | None = None) -> Dict[str, Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50 jobs instead of 200")
    parser.add_argument("--seed", type=int, default=1, help="simulation seed (default 1)")
    parser.add_argument("--reward", default="slowdown", help="slowdown, utilisation or wait (default slowdown)")
    parser.add_argument("--profile", default="default", help="the built-in profile to compare with (default: default)")
    args = parser.parse_args(argv)

    sc = scenario(50 if args.quick else 200)
    env = SchedulingEnv(sc, reward=args.reward)
    try:
        results = {
            "random agent": episode(env, random_agent(args.seed), args.seed),
            "best-fit agent": episode(env, best_fit, args.seed),
        }
    finally:
        env.close()
    builtin = Scenario(sc.cluster, args.profile, sc.workload, seed=args.seed, name="rl-small")
    results[f"profile {args.profile}"] = {"summary": gpusched.run(builtin, seed=args.seed).summary}

    header = ["policy", "completed", "mean wait s", "mean JCT s", "GPU % arriving", "GPU % overall", "steps",
              f"return ({args.reward})"]
    rows = [header]
    for name, r in results.items():
        rows.append(row(name, r["summary"], f"{r['return']:.2f}" if "return" in r else "",
                        str(r["steps"]) if "steps" in r else ""))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for r in rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    print(f"{env.observation_space['nodes'].shape[0]} nodes, seed {args.seed}; GPU % arriving: time-weighted GPU "
          "allocation until the last job arrived")
    return results


if __name__ == "__main__":
    main()
