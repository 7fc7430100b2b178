// gpusched's CEL subset for DRA selectors, and the semver / quantity values behind it. Cases
// marked "compile_test.go" follow Kubernetes' staging/src/k8s.io/dynamic-resource-allocation/cel/
// compile_test.go (expression, device and expected outcome), rebuilt here.
#include <catch2/catch.hpp>

#include <gpusched/dra/cel.hpp>
#include <gpusched/dra/device.hpp>
#include <gpusched/dra/values.hpp>

using namespace gpusched::dra;

namespace {

Device h100() {
  Device d;
  d.name = "gpu-0";
  d.attributes = {{"gpu.nvidia.com/architecture", std::string("Hopper")},
                  {"gpu.nvidia.com/cudaComputeCapability", *Semver::parse("9.0.0")},
                  {"gpu.nvidia.com/driverVersion", *Semver::parse("570.124.6")},
                  {"gpu.nvidia.com/index", std::int64_t{0}},
                  {"gpu.nvidia.com/productName", std::string("NVIDIA H100 80GB HBM3")},
                  {"gpu.nvidia.com/type", std::string("gpu")},
                  {"resource.kubernetes.io/pcieRoot", std::string("pci0000:17")},
                  {"gpu.nvidia.com/coherent", false}};
  d.capacity = {{"gpu.nvidia.com/memory", *Quantity::parse("81559Mi")}};
  d.sort();
  return d;
}

CelExpression::Result eval(std::string_view expr, const Device& d = h100(), std::string_view driver = "gpu.nvidia.com") {
  return CelExpression::compile(expr).evaluate(d, driver);
}
bool yes(std::string_view expr) {
  const auto r = eval(expr);
  INFO(expr << " -> error: " << r.error);
  REQUIRE(r.error.empty());
  return r.value;
}
std::string runtime_error(std::string_view expr) { return eval(expr).error; }
std::string compile_error(std::string_view expr) {
  try {
    (void)CelExpression::compile(expr);
  } catch (const CelError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("Quantities parse exactly, with every Kubernetes suffix", "[dra][cel]") {
  auto q = [](std::string_view s) { return Quantity::parse(s).value(); };
  CHECK(q("80Gi") == Quantity::from_int(85899345920));
  CHECK(q("1Ki") == Quantity::from_int(1024));
  CHECK(q("1k") == Quantity::from_int(1000));
  CHECK(q("1.5G") == Quantity::from_int(1500000000));
  CHECK(q("2e3") == Quantity::from_int(2000));
  CHECK(q("1E") == Quantity::from_int(1000000000000000000));
  CHECK(q("500m") < Quantity::from_int(1));
  CHECK(q("500m").to_string() == "0.5");
  CHECK(q("1000m") == Quantity::from_int(1));
  CHECK(q("-2") < q("1n"));
  CHECK(q("0.0000000001").nanos() == 1);   // finer than 1n rounds up
  CHECK(q("-0.0000000001").nanos() == -1);   // Kubernetes rounds the magnitude up: away from zero
  CHECK(q("-1.5n").nanos() == -2);
  CHECK(q("1.0000000001Ki").nanos() == 1024000000103);   // rounded after the binary multiplier
  CHECK(q(".5").to_string() == "0.5");
  CHECK(q("81559Mi").as_integer() == std::int64_t{81559} * 1024 * 1024);
  CHECK_FALSE(q("1.5").as_integer());
  for (std::string_view bad : {"", "Gi", "1.2.3", "1 Gi", "1gi", "1Zi", "1e", "--1", "1e1000", "abc", "1ki"}) {
    INFO(bad);
    CHECK_FALSE(Quantity::parse(bad));
  }
}

TEST_CASE("Semantic versions follow semver.org 2.0.0 precedence; build metadata is ignored", "[dra][cel]") {
  auto v = [](std::string_view s) { return Semver::parse(s).value(); };
  CHECK(v("1.0.0").compare(v("2.0.0")) < 0);
  CHECK(v("1.10.0").compare(v("1.9.0")) > 0);
  CHECK(v("1.0.0-alpha").compare(v("1.0.0")) < 0);
  // The precedence chain of semver.org section 11.
  const char* chain[] = {"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0"};
  for (std::size_t i = 0; i + 1 < std::size(chain); ++i) {
    INFO(chain[i] << " < " << chain[i + 1]);
    CHECK(v(chain[i]).compare(v(chain[i + 1])) < 0);
  }
  CHECK(v("1.0.0+build.1") == v("1.0.0+build.2"));
  for (std::string_view bad : {"1.0", "v1.0.0", "01.0.0", "1.0.0-01", "1.0.0-", "1.0.0+", "a.b.c", "1.0.0.0"}) {
    INFO(bad);
    CHECK_FALSE(Semver::parse(bad));
  }
  CHECK(Semver::parse_normalized("v1.2")->compare(v("1.2.0")) == 0);
  CHECK(Semver::parse_normalized("v01.002.3")->compare(v("1.2.3")) == 0);
  CHECK_FALSE(Semver::parse_normalized("1.2-rc.1"));   // a short version cannot carry a pre-release
}

TEST_CASE("CEL selectors read a device's driver, attributes and capacity as Kubernetes does", "[dra][cel]") {
  // NVIDIA's DeviceClass selectors (gpu.nvidia.com chart templates).
  CHECK(yes("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"));
  CHECK_FALSE(yes("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"));
  CHECK(yes("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"));
  CHECK_FALSE(yes("device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('80Gi'))"));
  CHECK(yes("device.attributes['gpu.nvidia.com'].cudaComputeCapability.isGreaterThan(semver('8.0.0'))"));
  CHECK(yes("device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')"));
  CHECK(yes("device.attributes['gpu.nvidia.com'].productName.matches('H1[0-9]{2}')"));
  CHECK(yes("device.attributes['gpu.nvidia.com'].architecture in ['Hopper', 'Blackwell']"));
  CHECK(yes("device.attributes['resource.kubernetes.io'].pcieRoot == 'pci0000:17'"));
  CHECK(yes("device.attributes['gpu.nvidia.com'].index < 4 && !device.attributes['gpu.nvidia.com'].coherent"));
  CHECK(yes("device.attributes['gpu.nvidia.com'].index == 0.0"));   // numbers compare across types
  CHECK(yes("size(device.attributes['gpu.nvidia.com']) == 7"));
  CHECK(yes("device.attributes['gpu.nvidia.com'].exists(k, k == 'uuid') == false"));
  CHECK(yes("['a', 'b'].map(x, x + '!').join(',') == 'a!,b!'"));
  CHECK(yes("device.attributes.exists_one(d, d == 'resource.kubernetes.io')"));
  // compile_test.go: an unknown domain is an empty map; "in" tells whether a domain or key exists.
  CHECK_FALSE(yes("'no-such-domain' in device.attributes"));
  CHECK(yes("'gpu.nvidia.com' in device.attributes"));
  CHECK(yes("!('memory' in device.capacity['other.example.com']) || false"));
  CHECK(yes("has(device.attributes['gpu.nvidia.com'].type)"));
  CHECK_FALSE(yes("has(device.attributes['gpu.nvidia.com'].uuid)"));
  // compile_test.go: quantity and semver libraries.
  CHECK(yes("device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('1Ki'))"));
  CHECK(yes("semver('v0.0.1', true).isLessThan(semver('1.0.0')) && isSemver('v1.0.0', true) && !isSemver('v1.0.0')"));
  CHECK(yes("quantity('1.5').add(1).compareTo(quantity('2500m')) == 0 && sign(quantity('1').sub(quantity('2'))) == -1"));
  CHECK(yes("'asymetric'.matches('[^a]?sym') && 'some_example_value'.split('example').size() >= 2"));
}

TEST_CASE("CEL errors: missing attributes and type mismatches are runtime errors, absorbed by && and || as in CEL", "[dra][cel]") {
  // compile_test.go: a missing id in a known or unknown domain is "no such key".
  CHECK(runtime_error("device.attributes['no-such-domain'].noSuchAttr.isGreaterThan(quantity('0'))") == "no such key: noSuchAttr");
  CHECK(runtime_error("device.attributes['gpu.nvidia.com'].uuid == 'x'") == "no such key: uuid");
  CHECK(runtime_error("device.attributes['gpu.nvidia.com'].index + 'x' == 1").find("no matching overload") == 0);
  CHECK(runtime_error("9223372036854775807 + 1 > 0") == "integer overflow");
  CHECK(runtime_error("1 / 0 == 1") == "division by zero");
  CHECK(runtime_error("device.attributes['gpu.nvidia.com'].type") == "the expression must evaluate to bool, not string");
  // Commutative errors: a decisive side wins in either order.
  CHECK_FALSE(yes("device.attributes['gpu.nvidia.com'].uuid == 'x' && false"));
  CHECK_FALSE(yes("false && device.attributes['gpu.nvidia.com'].uuid == 'x'"));
  CHECK(yes("device.attributes['gpu.nvidia.com'].uuid == 'x' || true"));
  CHECK(runtime_error("device.attributes['gpu.nvidia.com'].uuid == 'x' || false") == "no such key: uuid");
  CHECK(runtime_error("quantity('bad')").find("quantities must match") == 0);
}

TEST_CASE("CEL expressions outside gpusched's subset fail to compile with the column", "[dra][cel]") {
  CHECK(compile_error("noSuchVar").find("undeclared reference to 'noSuchVar'") == 0);
  CHECK(compile_error("device.driver.frobnicate()").find("undeclared reference to 'frobnicate'") == 0);
  CHECK(compile_error("1").find("must evaluate to bool") != std::string::npos);   // compile_test.go
  CHECK_FALSE(compile_error("?!").empty());                        // compile_test.go: a syntax error
  CHECK(compile_error("{'a': 1}.size() == 1") == "map literals are not supported");
  CHECK(compile_error("device.driver == b'x'") == "bytes literals are not supported");
  CHECK(compile_error("device.driver.matches('[')").find("invalid regular expression") == 0);
  CHECK(compile_error("semver()").find("'semver' takes 1 to 2 argument(s), got 0") == 0);
  CHECK(compile_error("").find("empty") != std::string::npos);
  CHECK(compile_error(std::string(CelExpression::kMaxLength + 1, ' ') + "true").find("limit") != std::string::npos);
  CHECK(compile_error(std::string(200, '(') + "true" + std::string(200, ')')).find("nested") != std::string::npos);
  std::string chain = "1";
  for (int i = 0; i < 600; ++i) chain += " + 1";
  CHECK(compile_error(chain + " > 0").find("long chains of operators") != std::string::npos);
  // && and || chains are balanced, as cel-go builds them: 600 terms nest 10 deep.
  std::string ors = "false";
  for (int i = 0; i < 600; ++i) ors += " || false";
  CHECK_FALSE(yes(ors + " || false"));
  // Kubernetes declares sign as a function, not a method (apiserver/pkg/cel/library/quantity.go).
  CHECK(compile_error("quantity('1').sign() == 1").find("undeclared reference to 'sign' (as a method)") == 0);
  CHECK(compile_error("device.drive == 'x'").find("undefined field 'drive'") == 0);
  CHECK(compile_error("device['driver'] == 'x'").find("not a map") != std::string::npos);
  CHECK(compile_error("has(device.foo)").find("undefined field 'foo'") == 0);
  CHECK(compile_error("device.attributes['d'].?x.orValue(1) == 1").find("optional field selection") == 0);
  CHECK(compile_error("cel.bind(x, 1, x == 1)").find("cel.bind") == 0);
  CHECK(compile_error("[1].all(k, v, true)").find("two-variable comprehensions") == 0);
  CHECK(compile_error("'aa'.matches('(a)\\\\1')").find("invalid regular expression") == 0);   // RE2 has no back-references
  try {
    (void)CelExpression::compile("device.driver == 'a' &&& true");
    FAIL("compiled");
  } catch (const CelError& e) {
    CHECK(e.column() == 24);
  }
}

TEST_CASE("CEL limits and RE2: a selector's cost is bounded and matches() is linear, as in Kubernetes", "[dra][cel]") {
  // compile_test.go: nested all() beyond CELSelectorExpressionMaxCost is a runtime error.
  std::string nested = "true";
  for (int i = 0; i < 7; ++i) nested = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x" + std::to_string(i) + ", " + nested + ")";
  CHECK(runtime_error(nested).find("actual cost limit exceeded") != std::string::npos);
  // RE2 answers at once where a backtracking engine takes 2^n steps.
  Device d = h100();
  d.attributes.emplace_back("gpu.nvidia.com/s", std::string(63, 'a') + "!");
  d.sort();
  CHECK_FALSE(eval("device.attributes['gpu.nvidia.com'].s.matches('^(a+)+$')", d).value);
  CHECK(yes("'h\u00e9llo'.matches('^h.llo$')"));
  CHECK(yes("'x'.matches('\\\\pL')"));
  CHECK_FALSE(yes("'abz'.matches('b\\\\z')"));   // \z: the end of the text (std::regex read a letter z)
  CHECK(yes("'ab'.matches('b\\\\z')"));
  CHECK_FALSE(yes("'\\v'.matches('\\\\s')"));
  CHECK(yes("'Abc'.matches('(?i)^abc$')"));
}

TEST_CASE("CEL string functions follow cel-go's ext/strings.go on code points and edges", "[dra][cel]") {
  CHECK(yes("'\u00e9'.replace('', '-') == '-\u00e9-' && '\u00e9'.replace('', '-').size() == 3"));
  CHECK(yes("'\u00e9a'.split('') == ['\u00e9', 'a'] && ''.split('') == [] && 'a,b,c'.split(',', 2) == ['a', 'b,c']"));
  CHECK(runtime_error("'abc'.lastIndexOf('c', 3) == 2") == "index out of range: 3");
  CHECK(yes("'abcabc'.lastIndexOf('bc', 5) == 4 && 'abcabc'.lastIndexOf('bc', 3) == 1 && 'abcabc'.indexOf('bc', 2) == 4"));
  CHECK(yes("bool('T') && !bool('F') && string(1.5) == '1.5' && uint('5') == 5u"));
  CHECK(runtime_error("double(' 1') == 1.0").find("cannot convert") == 0);
  CHECK(runtime_error("size(device) == 3").find("no matching overload") == 0);
}

TEST_CASE("CEL literals: escapes, raw strings, hexadecimal and unsigned integers", "[dra][cel]") {
  CHECK(yes(R"('a\tb' == "a\x09b" && r'a\tb'.size() == 4 && '\u00e9'.size() == 1)"));
  CHECK(yes("0x10 == 16 && 1u < 2u && -9223372036854775808 < 0 && 2.5e1 == 25.0"));
  CHECK(yes("'ab' + 'c' == 'abc' && [1, 2] + [3] == [1, 2, 3] && 7 % 3 == 1 && -7 / 2 == -3"));
  CHECK(yes("'héllo'.charAt(1) == 'é' && 'héllo'.indexOf('l') == 2 && 'héllo'.substring(1, 3) == 'él'"));
  CHECK(yes("' x '.trim() == 'x' && 'AbC'.lowerAscii() == 'abc' && 'aaa'.replace('a', 'b', 2) == 'bba'"));
  CHECK(yes("true ? device.driver == 'gpu.nvidia.com' : false"));
  CHECK(yes("int('42') == 42 && string(7) == '7' && double(2) == 2.0 && uint(3) == 3u && bool('true')"));
}
