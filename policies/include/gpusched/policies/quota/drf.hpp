#pragma once
/// `drf`: weighted dominant-resource fairness between queues (Volcano's `drf` / proportion
/// queue order, YARN's DominantResourceFairnessPolicy), as a queue-sort plugin.
///
/// A queue's dominant share is max over cpu, memory, GPU (milli: whole GPUs 1000 each, shares
/// and MIG instances their compute share) and TPU chips of usage / cluster capacity, divided by
/// the queue's weight.
///
/// `"order": "current-share"` (default; the peers' rule): the queue with the lowest share of
/// what it runs now goes first (Volcano drf.go compareQueues: share/weight of the queue's
/// allocated resources; YARN DominantResourceFairnessComparator: usage/capacity/weight). Volcano's
/// allocate loop re-picks the least-served queue after every job it places; we sort once per
/// cycle, so a waiting job's key is its queue's running usage plus the requests of the queue's
/// waiting jobs ahead of it (queue-internal order: priority, then submission, then id) — the
/// share its queue has when its turn comes if the jobs ahead start. The head job of each queue
/// is keyed by exactly the queue's current share. Its own request never counts.
///
/// `"order": "share-after"` (gpusched's variant, no peer does this): the key also adds the job's
/// own request, i.e. the share the queue reaches once the job starts (progressive filling). A
/// small job in a busier queue can then overtake a big job in a less-served queue.
///
/// Ties (both orders): higher priority, earlier submission, lower id. Volcano breaks queue ties
/// by queue creation time then UID and YARN by the next-largest share, then start time, then
/// name; gpusched has neither queue creation times nor the secondary shares in the key.
///
/// "Waiting" means submitted and never started: a job that was evicted and requeued is ordered
/// by its queue's usage (plus its own request under "share-after") only. Without a JobsView,
/// every job of the workload counts as submitted.
///
/// Args: {"weights": {"team-a": 2, "team-b": 1}, "order": "current-share" | "share-after"}
/// (queues not listed weigh 1; weights > 0). Profile: {"queue_sort": {"name": "drf", "args": {...}}}.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

class DrfSort final : public QueueSortPlugin, public JobEventsPlugin {
 public:
  /// Throws ProfileError(kProfileBadArgs) on a weight that is not a number > 0, or an `order`
  /// other than "current-share" or "share-after".
  DrfSort(const nlohmann::json& args, std::string_view name);

  [[nodiscard]] std::string_view name() const override { return name_; }
  [[nodiscard]] bool reads_queue() const override { return true; }
  /// O(1) amortised: keys are recomputed once per queue after each start, stop or arrival.
  [[nodiscard]] bool less(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const override;
  void attach(const ClusterState& cluster, std::span<const JobSpec> workload, const JobsView* jobs) override;
  void job_started(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;
  void job_stopped(const JobSpec& job, JobId id, std::span<const TaskPlacement> placements) override;

  /// The queue's weighted dominant share of its running jobs now (0 when unknown).
  [[nodiscard]] double share(const std::string& queue) const;

  static constexpr std::size_t kDims = 4;   // cpu milli, memory MiB, GPU milli, TPU chips
  using Vec = std::array<double, kDims>;

 private:
  struct Queue {
    double weight = 1.0;
    Vec usage{};
    std::vector<std::uint32_t> waiting;   // arrived, never started; queue-internal order
    bool dirty = true;                    // keys of `waiting` need recomputing
  };
  [[nodiscard]] Vec request_of(const JobSpec& job) const;
  [[nodiscard]] double dominant(const Vec& v, double weight) const;
  [[nodiscard]] std::size_t queue_index(const std::string& q) const;
  [[nodiscard]] double key(const JobSpec& job, JobId id) const;
  void advance_arrivals() const;
  void refresh(std::size_t q) const;
  [[nodiscard]] bool ahead(std::uint32_t a, std::uint32_t b) const;   // queue-internal order

  std::string name_;
  std::unordered_map<std::string, double> weights_;
  bool share_after_ = false;               // "order": "share-after" (key includes the own request)
  Vec capacity_{};
  const ClusterState* cluster_ = nullptr;
  std::span<const JobSpec> workload_;
  const JobsView* jobs_ = nullptr;
  // mutable: caches refreshed lazily from less() (one scheduler, one thread).
  mutable std::vector<Queue> queues_;
  mutable std::unordered_map<std::string, std::size_t> queue_ids_;
  std::vector<std::uint32_t> job_queue_;   // per workload job
  std::vector<Vec> job_request_;           // per workload job: whole request
  std::vector<Vec> running_;               // per job id: what it was charged at start
  std::vector<std::uint8_t> started_;      // per workload job: ever started
  std::vector<std::uint32_t> by_submit_;   // workload ids by submit time
  mutable std::size_t arrived_ = 0;        // prefix of by_submit_ already in waiting lists
  mutable std::vector<double> key_;        // per workload job
  mutable bool keyed_ = false;             // arrivals were taken up to keyed_at_
  mutable SimTime keyed_at_;
};

}  // namespace gpusched::policies
