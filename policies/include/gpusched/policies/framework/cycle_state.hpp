#pragma once
/// Per-cycle scratch state, keyed per plugin and typed (Kubernetes CycleState).
///
/// Example:
///   inline const StateKey<BestGpus> kBest{"gpu-binpack/best"};
///   state.write(kBest, BestGpus{...});
///   if (auto* b = state.read(kBest)) ...
#include <atomic>
#include <cstddef>
#include <memory>
#include <string_view>
#include <vector>

namespace gpusched::policies {

namespace detail {
inline std::size_t next_state_key() {
  static std::atomic<std::size_t> counter{0};
  return counter++;
}
struct StateBase {
  virtual ~StateBase() = default;
  [[nodiscard]] virtual std::unique_ptr<StateBase> clone() const = 0;
};
template <class T>
struct StateBox final : StateBase {
  T value;
  explicit StateBox(T v) : value(std::move(v)) {}
  [[nodiscard]] std::unique_ptr<StateBase> clone() const override { return std::make_unique<StateBox>(value); }
};
}  // namespace detail

/// A typed slot in CycleState. Define one per plugin datum, with static storage duration.
template <class T>
class StateKey {
 public:
  explicit StateKey(std::string_view name) : name_(name), index_(detail::next_state_key()) {}
  [[nodiscard]] std::size_t index() const { return index_; }
  [[nodiscard]] std::string_view name() const { return name_; }

 private:
  std::string_view name_;
  std::size_t index_;
};

/// Scratch data for one scheduling attempt of one task. Clonable for what-if evaluation.
class CycleState {
 public:
  CycleState() = default;
  CycleState(const CycleState& o) { *this = o; }
  CycleState& operator=(const CycleState& o) {
    if (this == &o) return *this;
    slots_.clear();
    slots_.resize(o.slots_.size());
    for (std::size_t i = 0; i < o.slots_.size(); ++i) {
      if (o.slots_[i]) slots_[i] = o.slots_[i]->clone();
    }
    return *this;
  }
  CycleState(CycleState&&) noexcept = default;
  CycleState& operator=(CycleState&&) noexcept = default;

  template <class T>
  T& write(const StateKey<T>& key, T value) {
    if (slots_.size() <= key.index()) slots_.resize(key.index() + 1);
    slots_[key.index()] = std::make_unique<detail::StateBox<T>>(std::move(value));
    return static_cast<detail::StateBox<T>*>(slots_[key.index()].get())->value;
  }
  template <class T>
  [[nodiscard]] T* read(const StateKey<T>& key) const {
    if (slots_.size() <= key.index() || !slots_[key.index()]) return nullptr;
    return &static_cast<detail::StateBox<T>*>(slots_[key.index()].get())->value;
  }
  /// Forgets everything (keeps capacity).
  void clear() {
    for (auto& s : slots_) s.reset();
  }

 private:
  std::vector<std::unique_ptr<detail::StateBase>> slots_;
};

}  // namespace gpusched::policies
