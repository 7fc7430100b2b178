#pragma once
/// Queue order. `priority-fifo` (Kubernetes PrioritySort): higher priority first, then earlier
/// submission, then job id. `fifo`: submission time, then job id.
#include <gpusched/policies/framework/plugin.hpp>

namespace gpusched::policies {

class PriorityFifoSort final : public QueueSortPlugin {
 public:
  [[nodiscard]] std::string_view name() const override { return "priority-fifo"; }
  [[nodiscard]] bool less(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const override {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.submit != b.submit) return a.submit < b.submit;
    return ia < ib;
  }
};

/// Also registered as `fjf` (first job fit, the Tiresias simulator's name): the same order, which
/// with greedy queueing skips a job that does not fit and preempts nothing (FJF).
class FifoSort final : public QueueSortPlugin {
 public:
  explicit FifoSort(std::string_view name = "fifo") : name_(name) {}
  [[nodiscard]] std::string_view name() const override { return name_; }
  [[nodiscard]] bool less(const JobSpec& a, JobId ia, const JobSpec& b, JobId ib) const override {
    if (a.submit != b.submit) return a.submit < b.submit;
    return ia < ib;
  }

 private:
  std::string_view name_;   // a literal: "fifo" or "fjf"
};

}  // namespace gpusched::policies
