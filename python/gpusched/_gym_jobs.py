"""The jobs of one gpusched.gym episode as the engine reports them, and the reward integrals.

:class:`JobRecord` is driven only by what the engine tells the environment, in the engine's
order: each decision (a job offered, with its submit time and duration, at the decision's
time ``job.now_s``), each start (``job_started``: time, tasks placed, the GPU share they take)
and each stop (``job_stopped``: finish, eviction, node failure). The integrals advance from one
of those instants to the next with the rates in force between them (jobs waiting, jobs in the
system weighted by 1/duration, GPU milli held by running jobs), so they are exact for what the
environment has been told. Without retry (fill mode), a job offered and not started (the agent
waited, too few tasks of a gang, a permit said no) failed at that offer.

Two things the engine does not announce are learned late, and charged when they are learned
(the step's integrals then hold some of the past, and an episode's return stays exact):

- a job's arrival: the environment learns of a job at its first offer, and charges its time in
  the queue since ``submit_s`` then. The engine offers a job at its arrival only if some node
  passes the built-in filters, and retries waiting jobs only when capacity frees; a job that
  never finds a feasible node is never offered.
- whether a stopped job left the system: a stop counts as leaving (finished, or failed); when
  the same job is offered or started again (evicted and requeued), the time since the stop is
  charged as waiting.

:meth:`JobRecord.settle` closes the books with the finished run's job table: jobs never offered
add their waiting time, and a job whose end differs from what the record believed (requeued and
never offered again, or timed out while waiting) adds or removes the difference. Jobs never
offered cost nothing in the slowdown (their duration is not known).

Times are float seconds made from the engine's integer microseconds (``SimTime::seconds()``),
so equal instants compare equal.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

#: A job's state in the record.
UNKNOWN, WAITING, RUNNING, LEFT = 0, 1, 2, 3

#: Kinds of the job events the environment's plugin logs.
STARTED, STOPPED = 0, 1

#: A logged job event: (kind, time_s, job id, GPU milli the job holds while running).
JobEvent = Tuple[int, float, int, int]


class JobRecord:
    """Which jobs are waiting, running or gone, and the time integrals of a step (see the
    module docstring). ``retry``: the scenario retries waiting jobs (else a job offered and not
    started failed at that offer)."""

    def __init__(self, *, retry: bool, jobs_hint: int = 0) -> None:
        self.retry = retry
        n = max(0, jobs_hint)
        self.state: List[int] = [UNKNOWN] * n
        self.submit: List[float] = [0.0] * n
        self.inv_duration: List[float] = [0.0] * n  # 1 / duration; 0 for jobs that never end
        self.left_at: List[float] = [math.inf] * n  # when a LEFT job left
        self.milli: List[int] = [0] * n  # GPU milli a RUNNING job holds
        self.waiting = 0
        self.running = 0
        self.in_system = 0
        self._inv_sum = 0.0  # sum of 1/duration over waiting and running jobs
        self._gpu_milli = 0  # GPU milli held by running jobs
        self.clock = -math.inf  # the integrals are accrued up to here
        self._acc_gpu = 0.0  # GPU milli x seconds
        self._acc_slowdown = 0.0  # seconds in the system / duration
        self._acc_wait = 0.0  # jobs x seconds waiting
        self._attempt = -1  # the job of the last decision
        self._attempt_s = 0.0

    # ---- what the engine reports
    def decision(self, job: int, task_index: int, now_s: float, submit_s: float, duration_s: float,
                 log: Sequence[JobEvent]) -> None:
        """The engine asks about task ``task_index`` of ``job`` at ``now_s``; ``log`` holds the
        job events since the previous decision."""
        if self._attempt >= 0 and (job != self._attempt or task_index == 0):
            self._close_attempt(log)
        self.apply(log)
        self.advance(now_s)
        self._grow(job)
        st = self.state[job]
        if st == UNKNOWN:
            self.submit[job] = submit_s
            self.inv_duration[job] = 1.0 / duration_s if 0.0 < duration_s < math.inf else 0.0
            self._enter(job, now_s, since=submit_s)
        elif st == LEFT:  # it stopped and was requeued: it waited since the stop
            self._enter(job, now_s, since=self.left_at[job])
        self._attempt = job
        self._attempt_s = now_s

    def end(self, end_s: float, log: Sequence[JobEvent]) -> None:
        """The run ended at ``end_s``; ``log`` holds the job events since the last decision."""
        if self._attempt >= 0:
            self._close_attempt(log)
        self.apply(log)
        self.advance(end_s)

    def apply(self, log: Sequence[JobEvent]) -> None:
        """Job starts and stops, in the engine's order."""
        for kind, t, job, milli in log:
            self.advance(t)
            self._grow(job)
            st = self.state[job]
            if kind == STARTED:
                if st == LEFT:  # requeued and started without an offer in between (not expected)
                    self._enter(job, t, since=self.left_at[job])
                    st = WAITING
                if st == WAITING:
                    self.waiting -= 1
                elif st == UNKNOWN:  # started without an offer (not expected): in the system from now
                    self.in_system += 1
                    self._inv_sum += self.inv_duration[job]
                self.state[job] = RUNNING
                self.milli[job] = milli
                self.running += 1
                self._gpu_milli += milli
            elif st == RUNNING:
                self._leave(job, t)
                self.running -= 1
                self._gpu_milli -= self.milli[job]
                self.milli[job] = 0

    def advance(self, t: float) -> None:
        """Accrues the integrals up to ``t``."""
        dt = t - self.clock
        if dt > 0.0:
            if self.clock > -math.inf:
                self._acc_gpu += self._gpu_milli * dt
                self._acc_slowdown += self._inv_sum * dt
                self._acc_wait += self.waiting * dt
            self.clock = t

    # ---- what the environment reads
    def take(self) -> Tuple[float, float, float]:
        """(GPU milli x seconds, slowdown, waiting job x seconds) accrued since the last take."""
        out = (self._acc_gpu, self._acc_slowdown, self._acc_wait)
        self._acc_gpu = self._acc_slowdown = self._acc_wait = 0.0
        return out

    def settle(self, end_s: float, table: Mapping[str, Any]) -> Dict[str, float]:
        """Closes the books with the finished run's job table (columns ``state``, ``submit_s``,
        ``end_s``, in job id order): adds what the record could not see to the integrals and
        returns it (``waiting_job_s``, ``slowdown``, ``jobs``: how many jobs it concerned,
        ``unseen_jobs``: jobs never offered that spent time in the queue)."""
        states = np.asarray(table["state"], dtype=object)
        submit = np.asarray(table["submit_s"], dtype=np.float64)
        ended = np.asarray(table["end_s"], dtype=np.float64)
        n = states.shape[0]
        self._grow(n - 1)
        arrived = states != "not_arrived"
        gone = (states == "completed") | (states == "failed")
        true_end = np.minimum(np.where(gone & ~np.isnan(ended), ended, end_s), end_s)
        mine = np.asarray(self.state[:n], dtype=np.int8)
        believed = np.minimum(np.where(mine == LEFT, np.asarray(self.left_at[:n]), end_s), end_s)
        unseen = arrived & (mine == UNKNOWN)
        extra = np.where(unseen, np.maximum(true_end - submit, 0.0), 0.0)
        seen = arrived & (mine != UNKNOWN)
        diff = np.where(seen, true_end - believed, 0.0)
        slowdown = float((diff * np.asarray(self.inv_duration[:n])).sum())
        waiting = float(extra.sum() + diff.sum())
        self._acc_wait += waiting
        self._acc_slowdown += slowdown
        return {"waiting_job_s": waiting, "slowdown": slowdown,
                "jobs": int(np.count_nonzero(extra) + np.count_nonzero(diff)),
                "unseen_jobs": int(np.count_nonzero(extra))}

    # ---- internals
    def _grow(self, job: int) -> None:
        n = job + 1 - len(self.state)
        if n > 0:
            self.state.extend([UNKNOWN] * n)
            self.submit.extend([0.0] * n)
            self.inv_duration.extend([0.0] * n)
            self.left_at.extend([math.inf] * n)
            self.milli.extend([0] * n)

    def _enter(self, job: int, now_s: float, since: float) -> None:
        """``job`` is waiting at ``now_s`` and has been since ``since`` (the integrals are at
        ``now_s``: the time before is charged at once)."""
        late = max(0.0, now_s - since)
        self._acc_wait += late
        self._acc_slowdown += late * self.inv_duration[job]
        self.state[job] = WAITING
        self.left_at[job] = math.inf
        self.waiting += 1
        self.in_system += 1
        self._inv_sum += self.inv_duration[job]

    def _leave(self, job: int, t: float) -> None:
        """``job`` (waiting or running; the counters of its state are the caller's) left at ``t``."""
        self.state[job] = LEFT
        self.left_at[job] = t
        self.in_system -= 1
        self._inv_sum -= self.inv_duration[job]
        if self.in_system == 0:
            self._inv_sum = 0.0  # no rounding left behind

    def _close_attempt(self, log: Sequence[JobEvent]) -> None:
        """Without retry, a job offered and not started (the agent waited, too few tasks of a
        gang, a permit said no) failed at that offer."""
        job = self._attempt
        self._attempt = -1
        if self.retry or self.state[job] != WAITING:
            return
        if any(kind == STARTED and j == job for kind, _, j, _ in log):
            return
        # Its failure happened at the offer, before anything in `log`; the integrals are there.
        over = self.clock - self._attempt_s
        self._acc_wait -= over
        self._acc_slowdown -= over * self.inv_duration[job]
        self.waiting -= 1
        self._leave(job, self._attempt_s)
