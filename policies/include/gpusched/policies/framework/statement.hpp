#pragma once
/// A transaction over the cluster state (Volcano's Statement): allocations and evictions apply
/// at once and are undone in reverse order unless committed. RAII: a Statement that goes out of
/// scope uncommitted rolls back.
///
/// Example:
///   Statement st(cluster);
///   for (auto& p : placements) st.allocate(job.request, p);
///   if (!enough) return;   // destructor rolls back
///   st.commit();
#include <functional>
#include <utility>
#include <vector>

#include <gpusched/cluster.hpp>

namespace gpusched::policies {

class Statement {
 public:
  explicit Statement(ClusterState& cluster) : cluster_(&cluster) {}
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { rollback(); }

  /// Takes the resources now.
  void allocate(const TaskRequest& r, TaskPlacement p) {
    cluster_->allocate(r, p);
    ops_.push_back({Op::kAllocate, &r, std::move(p), {}});
  }
  /// Gives the resources back now (an eviction); rollback takes them again.
  void evict(const TaskRequest& r, TaskPlacement p) {
    cluster_->release(r, p);
    ops_.push_back({Op::kEvict, &r, std::move(p), {}});
  }
  /// Takes back what evict() gave back (a what-if victim put back): ClusterState::undo_release,
  /// so GIs are not created or destroyed again; rollback releases it again.
  void restore(const TaskRequest& r, TaskPlacement p) {
    cluster_->undo_release(r, p);
    ops_.push_back({Op::kRestore, &r, std::move(p), {}});
  }
  /// Runs `undo` if the statement is rolled back (e.g. a plugin's unreserve), in reverse order.
  void on_rollback(std::function<void()> undo) { ops_.push_back({Op::kCallback, nullptr, {}, std::move(undo)}); }

  /// Keeps every change.
  void commit() { ops_.clear(); }
  /// Undoes every change, newest first.
  void rollback() {
    while (!ops_.empty()) {
      auto op = std::move(ops_.back());
      ops_.pop_back();
      switch (op.kind) {
        case Op::kAllocate: cluster_->undo_allocate(*op.request, op.placement); break;
        case Op::kEvict: cluster_->undo_release(*op.request, op.placement); break;
        case Op::kRestore: cluster_->release(*op.request, op.placement); break;
        case Op::kCallback: op.undo(); break;
      }
    }
  }
  [[nodiscard]] std::size_t size() const { return ops_.size(); }

 private:
  struct Op {
    enum Kind { kAllocate, kEvict, kRestore, kCallback } kind;
    const TaskRequest* request;
    TaskPlacement placement;
    std::function<void()> undo;
  };
  ClusterState* cluster_;
  std::vector<Op> ops_;
};

}  // namespace gpusched::policies
