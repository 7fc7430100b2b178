#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include <gpusched/compact_string.hpp>
#include <gpusched/job.hpp>

using namespace gpusched;

TEST_CASE("CompactString holds text in one pointer and reads as the std::string it was given", "[core][compact_string]") {
  STATIC_REQUIRE(sizeof(CompactString) == sizeof(void*));
  CompactString empty;
  CHECK(empty.empty());
  CHECK(empty.size() == 0);
  CHECK(empty.str().empty());
  CHECK(std::string(empty.c_str()).empty());
  CHECK(CompactString("").empty());              // empty text allocates nothing
  CHECK(CompactString(std::string()).empty());

  const CompactString app = "web";
  const std::string& s = app;                    // implicit, as the std::string field read
  CHECK(s == "web");
  CHECK(app.size() == 3);
  CHECK(std::string_view(app) == "web");
  CHECK("x-" + app == "x-web");
  CHECK(app + "-1" == "web-1");

  // Copies share the text; assigning makes a new value and leaves the copy alone.
  CompactString copy = app;
  CHECK(copy.data() == app.data());
  copy = "api";
  CHECK(app == "web");
  CHECK(copy == "api");
  copy.clear();
  CHECK(copy.empty());
  CompactString moved = std::move(copy);
  CHECK(moved.empty());
}

TEST_CASE("CompactString compares and orders by content, never by address", "[core][compact_string]") {
  const CompactString a = "alpha", a2 = std::string("alpha"), b = "beta";
  CHECK(a.data() != a2.data());                  // two allocations of equal text
  CHECK(a == a2);
  CHECK(a != b);
  CHECK(a < b);
  CHECK(b > a2);
  CHECK(a == std::string("alpha"));
  CHECK(a == std::string_view("alpha"));
  CHECK(a != "alph");
  CHECK(CompactString() == CompactString(""));
  CHECK(CompactString() < a);
  // Ordered containers see the text: the same order as std::string's.
  std::map<CompactString, int> m{{"c", 3}, {"a", 1}, {"b", 2}};
  std::vector<std::string> keys;
  for (const auto& [k, v] : m) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"a", "b", "c"});
  std::unordered_set<CompactString> set{a, a2, b};
  CHECK(set.size() == 2);
}

TEST_CASE("CompactString copies may be made and dropped from several threads at once", "[core][compact_string]") {
  const CompactString shared = "tenant-a";
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&shared] {
      for (int i = 0; i < 20000; ++i) {
        CompactString c = shared;
        CompactString d = std::move(c);
        if (d != "tenant-a") std::abort();
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(shared == "tenant-a");
}

TEST_CASE("A job stays small: a 1M-job replay keeps every JobSpec (issue 14: under 1 GB)", "[core][compact_string]") {
  // 656 bytes before the fields most jobs leave empty became CompactStrings; 488 after. The
  // 10,000-node, 1,000,000-job replay (BENCHMARKS.md, "A million jobs") holds a million of them.
  STATIC_REQUIRE(sizeof(JobSpec) <= 512);
  JobSpec j;
  j.constraints.app = "svc";
  j.request.gpu.profile = "3g.40gb";
  const JobSpec copy = j;
  CHECK(copy.constraints.app.data() == j.constraints.app.data());   // a copied job copies no text
  CHECK(copy.request.gpu.profile == "3g.40gb");
  CHECK(copy.request == j.request);
}

namespace {
CompactString make_text() { return CompactString("temporary text, longer than any small-string buffer"); }
}  // namespace

TEST_CASE("A temporary CompactString hands out no reference into its text", "[core][compact_string]") {
  // With a std::string field, `const std::string& s = f().field;` extended the temporary's life;
  // a reference into a CompactString's block would dangle once the temporary dies, so an rvalue
  // does not convert to a reference or a view (a compile error); str() copies its text out.
  STATIC_REQUIRE_FALSE(std::is_convertible_v<CompactString&&, const std::string&>);
  STATIC_REQUIRE_FALSE(std::is_convertible_v<CompactString&&, std::string_view>);
  STATIC_REQUIRE(std::is_convertible_v<const CompactString&, const std::string&>);
  STATIC_REQUIRE(std::is_convertible_v<const CompactString&, std::string_view>);
  const std::string copied = make_text().str();
  CHECK(copied == "temporary text, longer than any small-string buffer");
  const CompactString kept = make_text();
  const std::string& bound = kept;
  CHECK(bound == copied);
}
