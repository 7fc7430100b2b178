#include <catch2/catch.hpp>

#include <gpusched/quantity.hpp>
#include <gpusched/time.hpp>

using namespace gpusched;

namespace {
const Location kWhere{"jobs.csv", 17, "cpu"};
}

TEST_CASE("CPU quantities convert to milli-CPU", "[core][quantity]") {
  CHECK(parse_cpu_milli("4", kWhere) == 4000);
  CHECK(parse_cpu_milli("500m", kWhere) == 500);
  CHECK(parse_cpu_milli("0.5", kWhere) == 500);
  CHECK(parse_cpu_milli("1.25", kWhere) == 1250);
  CHECK(parse_cpu_milli(" 2 ", kWhere) == 2000);
  CHECK(parse_cpu_milli("0", kWhere) == 0);
}

TEST_CASE("Fractions of a milli-CPU round up to the next milli-CPU", "[core][quantity]") {
  CHECK(parse_cpu_milli("0.0001", kWhere) == 1);
  CHECK(parse_cpu_milli("1.5m", kWhere) == 2);
}

TEST_CASE("Memory quantities convert to MiB with binary and decimal suffixes", "[core][quantity]") {
  const Location w{"jobs.csv", 3, "memory"};
  CHECK(parse_memory_mib("16Gi", w) == 16 * 1024);
  CHECK(parse_memory_mib("512Mi", w) == 512);
  CHECK(parse_memory_mib("1Ti", w) == 1024 * 1024);
  CHECK(parse_memory_mib("2048Ki", w) == 2);
  // 1.5 GB = 1.5e9 bytes = 1430.51 MiB, rounded up.
  CHECK(parse_memory_mib("1.5G", w) == 1431);
  CHECK(parse_memory_mib("1M", w) == 1);        // 1e6 bytes < 1 MiB, rounded up
  CHECK(parse_memory_mib("1000k", w) == 1);
  CHECK(parse_memory_mib("1T", w) == 953675);   // 1e12 / 2^20 = 953674.3
}

TEST_CASE("A plain memory number is bytes", "[core][quantity]") {
  const Location w{"jobs.csv", 3, "memory"};
  CHECK(parse_memory_mib("1048576", w) == 1);
  CHECK(parse_memory_mib("17179869184", w) == 16 * 1024);
  CHECK(parse_memory_mib("1", w) == 1);   // any positive amount takes at least one MiB
  CHECK(parse_memory_mib("0", w) == 0);
}

TEST_CASE("Malformed quantities throw QuantityError naming the field", "[core][quantity]") {
  for (const char* bad : {"", "abc", "4x", "4 cores", "1Gi", "m", "--1", "inf", "nan", "0x10"}) {
    INFO("cpu: \"" << bad << "\"");
    try {
      (void)parse_cpu_milli(bad, kWhere);
      FAIL("no exception");
    } catch (const QuantityError& e) {
      CHECK(e.code() == ErrorCode::kQuantityBad);
      CHECK(e.where().file == "jobs.csv");
      CHECK(e.where().line == 17);
      CHECK(e.where().field == "cpu");
      CHECK_THAT(e.what(), Catch::Contains("field 'cpu'"));
    }
  }
  const Location w{"jobs.csv", 4, "memory"};
  for (const char* bad : {"", "16GB", "16gi", "lots", "1.5X", "Gi"}) {
    INFO("memory: \"" << bad << "\"");
    CHECK_THROWS_AS(parse_memory_mib(bad, w), QuantityError);
  }
}

TEST_CASE("Negative quantities are rejected with the field", "[core][quantity]") {
  try {
    (void)parse_cpu_milli("-2", kWhere);
    FAIL("no exception");
  } catch (const QuantityError& e) {
    CHECK(e.where().field == "cpu");
    CHECK_THAT(e.detail(), Catch::Contains("negative"));
  }
  try {
    (void)parse_memory_mib("-1Gi", {"jobs.csv", 9, "memory"});
    FAIL("no exception");
  } catch (const QuantityError& e) {
    CHECK(e.where().field == "memory");
    CHECK(e.where().line == 9);
  }
  CHECK_THROWS_AS(parse_cpu_milli("-500m", kWhere), QuantityError);
  CHECK_THROWS_AS(parse_count("-1", kWhere), QuantityError);
  CHECK_THROWS_AS(parse_seconds_us("-5", kWhere, true), QuantityError);
}

TEST_CASE("Counts must be whole non-negative numbers", "[core][quantity]") {
  CHECK(parse_count("2", kWhere) == 2);
  CHECK(parse_count("2.0", kWhere) == 2);
  CHECK(parse_count("0", kWhere) == 0);
  CHECK_THROWS_AS(parse_count("2.5", kWhere), QuantityError);
  CHECK_THROWS_AS(parse_count("2Gi", kWhere), QuantityError);
  CHECK_THROWS_AS(parse_count("", kWhere), QuantityError);
}

TEST_CASE("Seconds convert to microseconds and an empty or inf duration means forever", "[core][quantity]") {
  CHECK(parse_seconds_us("12", kWhere, false) == 12'000'000);
  CHECK(parse_seconds_us("0.25", kWhere, false) == 250'000);
  CHECK(parse_seconds_us("", kWhere, true) == SimTime::forever().us);
  CHECK(parse_seconds_us("inf", kWhere, true) == SimTime::forever().us);
  CHECK_THROWS_AS(parse_seconds_us("", kWhere, false), QuantityError);
  CHECK_THROWS_AS(parse_seconds_us("inf", kWhere, false), QuantityError);
  CHECK_THROWS_AS(parse_seconds_us("10s", kWhere, false), QuantityError);
}
