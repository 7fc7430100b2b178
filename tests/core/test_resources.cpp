#include <catch2/catch.hpp>

#include <algorithm>

#include <gpusched/resources.hpp>

#include "support/support.hpp"

using namespace gpusched;
using gpusched::test::Items;
using gpusched::test::request;

namespace {
/// parse_requests with a location, for the error tests.
TaskRequest parse(const Items& items, std::vector<std::string> models = {}) {
  static const GpuCatalog cat = GpuCatalog::builtin();
  ResourceTable res;
  return parse_requests(items, models, cat, res, {"jobs.csv", 5, ""});
}
}  // namespace

TEST_CASE("Whole GPUs come from nvidia.com/gpu", "[core][requests]") {
  const auto r = request({{"cpu", "8"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "2"}});
  CHECK(r.cpu_milli == 8000);
  CHECK(r.memory_mib == 65536);
  CHECK(r.gpu.mode == GpuMode::kWhole);
  CHECK(r.gpu.count == 2);
  CHECK(r.gpu.total_milli() == 2000);
}

TEST_CASE("A request without GPU names asks for no GPU", "[core][requests]") {
  const auto r = request({{"cpu", "1"}, {"memory", "1Gi"}});
  CHECK(r.gpu.mode == GpuMode::kNone);
  CHECK(r.gpu.count == 0);
  CHECK(r.gpu.total_milli() == 0);
  CHECK(request({{"cpu", "1"}, {"nvidia.com/gpu", "0"}}).gpu.mode == GpuMode::kNone);
}

TEST_CASE("gpu-milli and gpu-mem ask for a share of one GPU", "[core][requests]") {
  const auto a = request({{"cpu", "1"}, {"gpusched.io/gpu-milli", "250"}});
  CHECK(a.gpu.mode == GpuMode::kShared);
  CHECK(a.gpu.count == 1);
  CHECK(a.gpu.milli == 250);
  CHECK(a.gpu.memory_mib == 0);
  CHECK(a.gpu.total_milli() == 250);

  const auto b = request({{"aliyun.com/gpu-mem", "8"}});
  CHECK(b.gpu.mode == GpuMode::kShared);
  CHECK(b.gpu.milli == 0);
  CHECK(b.gpu.memory_mib == 8 * 1024);

  const auto c = request({{"nvidia.com/gpu", "1"}, {"gpusched.io/gpu-milli", "500"}, {"aliyun.com/gpu-mem", "4"}});
  CHECK(c.gpu.mode == GpuMode::kShared);
  CHECK(c.gpu.milli == 500);
  CHECK(c.gpu.memory_mib == 4096);
}

TEST_CASE("gpu-milli 1000 is one whole GPU", "[core][requests]") {
  const auto r = request({{"gpusched.io/gpu-milli", "1000"}});
  CHECK(r.gpu.mode == GpuMode::kWhole);
  CHECK(r.gpu.count == 1);
  CHECK(r.gpu.total_milli() == 1000);
}

TEST_CASE("gpu-milli above 1000 is rejected with the field", "[core][requests]") {
  try {
    (void)parse({{"gpusched.io/gpu-milli", "1500"}});
    FAIL("no exception");
  } catch (const QuantityError& e) {
    CHECK(e.where().file == "jobs.csv");
    CHECK(e.where().line == 5);
    CHECK(e.where().field == "gpusched.io/gpu-milli");
  }
}

TEST_CASE("A GPU share together with nvidia.com/gpu 2 is rejected", "[core][requests]") {
  try {
    (void)parse({{"nvidia.com/gpu", "2"}, {"gpusched.io/gpu-milli", "500"}});
    FAIL("no exception");
  } catch (const QuantityError& e) {
    CHECK(e.where().field == "nvidia.com/gpu");
    CHECK_THAT(e.detail(), Catch::Contains("ONE GPU"));
  }
  CHECK_THROWS_AS(parse({{"nvidia.com/gpu", "2"}, {"aliyun.com/gpu-mem", "4"}}), QuantityError);
}

TEST_CASE("Extended resources are interned and requests refer to them by id", "[core][requests]") {
  ResourceTable res;
  const auto a = request({{"cpu", "1"}, {"rdma/hca", "2"}, {"example.com/foo", "1"}}, res);
  const auto b = request({{"example.com/foo", "3"}}, res);
  REQUIRE(res.size() == 2);
  const auto hca = res.find("rdma/hca");
  const auto foo = res.find("example.com/foo");
  REQUIRE(hca);
  REQUIRE(foo);
  CHECK(res.name(*hca) == "rdma/hca");
  REQUIRE(a.extended.size() == 2);
  CHECK(std::find(a.extended.begin(), a.extended.end(), std::pair{*hca, std::int64_t{2}}) != a.extended.end());
  CHECK(std::find(a.extended.begin(), a.extended.end(), std::pair{*foo, std::int64_t{1}}) != a.extended.end());
  REQUIRE(b.extended.size() == 1);
  CHECK(b.extended[0] == std::pair{*foo, std::int64_t{3}});
  CHECK(res.intern("rdma/hca") == *hca);
}

TEST_CASE("Extended resource names need a domain and GPU names are not extended", "[core][requests]") {
  CHECK(is_extended_resource("rdma/hca"));
  CHECK_FALSE(is_extended_resource("nvidia.com/gpu"));
  CHECK_FALSE(is_extended_resource("gpusched.io/gpu-milli"));
  CHECK_FALSE(is_extended_resource("aliyun.com/gpu-mem"));
  CHECK_FALSE(is_extended_resource("gpu"));
  try {
    (void)parse({{"gpu", "1"}});
    FAIL("no exception");
  } catch (const QuantityError& e) {
    CHECK(e.code() == ErrorCode::kResourceUnknown);
    CHECK(e.where().field == "gpu");
  }
}

TEST_CASE("Bad request values name the resource as the field", "[core][requests]") {
  try {
    (void)parse({{"cpu", "abc"}});
    FAIL("no exception");
  } catch (const QuantityError& e) {
    CHECK(e.where().field == "cpu");
    CHECK(e.where().line == 5);
  }
  try {
    (void)parse({{"memory", "-4Gi"}});
    FAIL("no exception");
  } catch (const QuantityError& e) {
    CHECK(e.where().field == "memory");
  }
  try {
    (void)parse({{"nvidia.com/gpu", "1.5"}});
    FAIL("no exception");
  } catch (const QuantityError& e) {
    CHECK(e.where().field == "nvidia.com/gpu");
  }
}

TEST_CASE("GPU model constraints set the allowed-model mask", "[core][requests]") {
  const auto cat = GpuCatalog::builtin();
  const auto r = request({{"nvidia.com/gpu", "1"}}, {"T4", "v100-32gb"});
  CHECK(r.allowed_models.count() == 2);
  CHECK(r.model_allowed(*cat.find("T4")));
  CHECK(r.model_allowed(*cat.find("V100-32GB")));
  CHECK_FALSE(r.model_allowed(*cat.find("A100-80GB")));
  CHECK(request({{"nvidia.com/gpu", "1"}}).model_allowed(*cat.find("A100-80GB")));
}

TEST_CASE("A GPU model constraint needs a GPU request and a known model", "[core][requests]") {
  try {
    (void)parse({{"cpu", "1"}}, {"T4"});
    FAIL("no exception");
  } catch (const QuantityError& e) {
    CHECK(e.where().field == "gpu_model");
  }
  try {
    (void)parse({{"nvidia.com/gpu", "1"}}, {"A1000"});
    FAIL("no exception");
  } catch (const CatalogError& e) {
    CHECK(e.where().field == "gpu_model");
    CHECK(e.where().line == 5);
  }
}

TEST_CASE("format_requests writes what parse_requests reads back", "[core][requests]") {
  ResourceTable res;
  const Items items{{"cpu", "1500m"}, {"memory", "3Gi"}, {"gpusched.io/gpu-milli", "300"}, {"aliyun.com/gpu-mem", "6"},
                    {"rdma/hca", "1"}};
  const auto r = request(items, res);
  const auto back = request(format_requests(r, res), res);
  CHECK(back.cpu_milli == r.cpu_milli);
  CHECK(back.memory_mib == r.memory_mib);
  CHECK(back.gpu.mode == r.gpu.mode);
  CHECK(back.gpu.milli == r.gpu.milli);
  CHECK(back.gpu.memory_mib == r.gpu.memory_mib);
  CHECK(back.extended == r.extended);
}
