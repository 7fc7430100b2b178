// The EventQueue contract: (time, seq) order, insertion order for equal times, lazy cancel.
#include <catch2/catch.hpp>

#include <vector>

#include <gpusched/sim/event_queue.hpp>

using namespace gpusched;
using namespace gpusched::sim;

namespace {
SimTime s(std::int64_t seconds) { return SimTime::from_seconds(seconds); }
std::uint32_t job_of(const EventQueue::Entry& e) { return std::get<JobArrival>(e.event).job.value; }
}  // namespace

TEST_CASE("Events pop in time order", "[sim][event_queue]") {
  EventQueue q;
  q.push(s(5), JobArrival{JobId{5}});
  q.push(s(1), JobArrival{JobId{1}});
  q.push(s(3), JobArrival{JobId{3}});
  q.push(s(2), JobArrival{JobId{2}});
  std::vector<std::uint32_t> got;
  std::vector<std::int64_t> times;
  while (!q.empty()) {
    const auto e = q.pop();
    got.push_back(job_of(e));
    times.push_back(e.time.us);
  }
  CHECK(got == std::vector<std::uint32_t>{1, 2, 3, 5});
  CHECK(times == std::vector<std::int64_t>{1'000'000, 2'000'000, 3'000'000, 5'000'000});
}

TEST_CASE("Simultaneous events fire in insertion order", "[sim][event_queue]") {
  EventQueue q;
  for (std::uint32_t i = 0; i < 50; ++i) q.push(s(i % 2 == 0 ? 10 : 7), JobArrival{JobId{i}});
  std::vector<std::uint32_t> got;
  while (!q.empty()) got.push_back(job_of(q.pop()));
  std::vector<std::uint32_t> expected;
  for (std::uint32_t i = 1; i < 50; i += 2) expected.push_back(i);
  for (std::uint32_t i = 0; i < 50; i += 2) expected.push_back(i);
  CHECK(got == expected);
}

TEST_CASE("Event ids are the sequence numbers in push order", "[sim][event_queue]") {
  EventQueue q;
  const auto a = q.push(s(9), NodeDown{NodeId{0}});
  const auto b = q.push(s(1), NodeUp{NodeId{0}});
  CHECK(b == a + 1);
  CHECK(q.pushed() == 2);
  const auto e = q.pop();
  CHECK(e.seq == b);
  CHECK(std::holds_alternative<NodeUp>(e.event));
}

TEST_CASE("Cancelled events are skipped when popped", "[sim][event_queue]") {
  EventQueue q;
  q.push(s(1), JobArrival{JobId{1}});
  const auto two = q.push(s(2), JobArrival{JobId{2}});
  q.push(s(3), JobArrival{JobId{3}});
  const auto zero = q.push(s(0), JobArrival{JobId{0}});
  q.cancel(two);
  q.cancel(zero);
  CHECK(q.next_time() == s(1));
  std::vector<std::uint32_t> got;
  while (!q.empty()) got.push_back(job_of(q.pop()));
  CHECK(got == std::vector<std::uint32_t>{1, 3});
}

TEST_CASE("A queue holding only cancelled events is empty", "[sim][event_queue]") {
  EventQueue q;
  const auto a = q.push(s(1), JobFinish{JobId{0}});
  const auto b = q.push(s(1), JobFinish{JobId{1}});
  q.cancel(a);
  q.cancel(b);
  CHECK(q.empty());
}

TEST_CASE("Cancelling after the pop, twice, or an unknown id is harmless", "[sim][event_queue]") {
  EventQueue q;
  const auto a = q.push(s(1), JobArrival{JobId{1}});
  q.push(s(2), JobArrival{JobId{2}});
  const auto first = q.pop();
  CHECK(first.seq == a);
  q.cancel(a);        // already fired
  q.cancel(a);
  q.cancel(12345);    // never pushed
  const auto c = q.push(s(3), JobArrival{JobId{3}});
  q.cancel(c);
  q.cancel(c);
  REQUIRE_FALSE(q.empty());
  CHECK(job_of(q.pop()) == 2);
  CHECK(q.empty());
}

TEST_CASE("Events keep their payload through the queue", "[sim][event_queue]") {
  EventQueue q;
  q.push(s(4), Timer{17});
  q.push(s(4), NodeDown{NodeId{3}});
  auto e = q.pop();
  REQUIRE(std::holds_alternative<Timer>(e.event));
  CHECK(std::get<Timer>(e.event).id == 17);
  e = q.pop();
  REQUIRE(std::holds_alternative<NodeDown>(e.event));
  CHECK(std::get<NodeDown>(e.event).node == NodeId{3});
}

TEST_CASE("Interleaved pushes and pops keep (time, seq) order", "[sim][event_queue]") {
  EventQueue q;
  std::uint64_t x = 12345;
  std::vector<std::pair<std::int64_t, EventId>> popped;
  for (int round = 0; round < 200; ++round) {
    for (int k = 0; k < 3; ++k) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      const std::int64_t t = (popped.empty() ? 0 : popped.back().first) + static_cast<std::int64_t>((x >> 33) % 5);
      q.push(SimTime::from_us(t), Timer{0});
    }
    for (int k = 0; k < 2 && !q.empty(); ++k) {
      const auto e = q.pop();
      popped.emplace_back(e.time.us, e.seq);
    }
  }
  while (!q.empty()) {
    const auto e = q.pop();
    popped.emplace_back(e.time.us, e.seq);
  }
  CHECK(popped.size() == 600);
  for (std::size_t i = 1; i < popped.size(); ++i) REQUIRE(popped[i - 1] < popped[i]);
}
