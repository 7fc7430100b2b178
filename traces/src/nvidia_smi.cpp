#include <gpusched/traces/nvidia_smi.hpp>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <numeric>
#include <set>
#include <sstream>
#include <type_traits>
#include <utility>

#include <pugixml.hpp>

#include <gpusched/error.hpp>

namespace gpusched::traces {
namespace {

[[noreturn]] void fail(ErrorCode code, const std::string& file, std::int64_t line, const std::string& field,
                       const std::string& message) {
  throw_error(code, {file, line, field}, message);
}

/// 1-based line of byte `offset` in `text`.
std::int64_t line_at(std::string_view text, std::ptrdiff_t offset) {
  if (offset < 0) return 0;
  const auto end = std::min(text.size(), static_cast<std::size_t>(offset));
  return 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(end), '\n');
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

/// A whole non-negative decimal integer, or false.
template <class T>
bool to_int(std::string_view s, T& out) {
  if (s.empty()) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc{} || p != s.data() + s.size()) return false;
  if constexpr (std::is_signed_v<T>) return out >= 0;
  return true;
}

// ---------------------------------------------------------------- nvidia-smi -q -x

struct XmlContext {
  std::string_view text;
  const std::string& source;
  [[nodiscard]] std::int64_t line(const pugi::xml_node& n) const { return line_at(text, n.offset_debug()); }
};

}  // namespace

std::vector<NvidiaSmiGpu> parse_nvidia_smi_query(std::string_view xml, const std::string& source) {
  pugi::xml_document doc;
  // The DOCTYPE is skipped: nvidia-smi's DTD is external and never fetched.
  const pugi::xml_parse_result parsed = doc.load_buffer(xml.data(), xml.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!parsed) {
    fail(ErrorCode::kTraceBadValue, source, line_at(xml, parsed.offset), "",
         std::string("not well-formed XML: ") + parsed.description());
  }
  const XmlContext cx{xml, source};
  const pugi::xml_node root = doc.child("nvidia_smi_log");
  if (!root) {
    fail(ErrorCode::kTraceMissingColumn, source, 0, "nvidia_smi_log",
         "no <nvidia_smi_log> root element: is this the output of `nvidia-smi -q -x`?");
  }
  std::vector<NvidiaSmiGpu> out;
  for (const pugi::xml_node gpu : root.children("gpu")) {
    const std::string where = "nvidia_smi_log/gpu[" + std::to_string(out.size()) + "]";
    NvidiaSmiGpu g;
    g.line = cx.line(gpu);
    const pugi::xml_node product = gpu.child("product_name");
    g.product_name = trim(product.text().as_string());
    if (!product || g.product_name.empty()) {
      fail(ErrorCode::kTraceMissingColumn, source, g.line, where + "/product_name", "a <gpu> needs a <product_name>");
    }
    g.bus_id = trim(gpu.child("pci").child("pci_bus_id").text().as_string());
    if (g.bus_id.empty()) g.bus_id = trim(gpu.attribute("id").as_string());

    const pugi::xml_node total = gpu.child("fb_memory_usage").child("total");
    if (!total) {
      fail(ErrorCode::kTraceMissingColumn, source, g.line, where + "/fb_memory_usage/total",
           "a <gpu> needs <fb_memory_usage><total>");
    }
    {
      const std::string v = trim(total.text().as_string());
      std::istringstream in(v);
      std::string number, unit, rest;
      in >> number >> unit >> rest;
      if (!to_int(number, g.memory_mib) || unit != "MiB" || !rest.empty()) {
        fail(ErrorCode::kTraceBadValue, source, cx.line(total), where + "/fb_memory_usage/total",
             "\"" + v + "\" is not a memory size like \"81559 MiB\"");
      }
      if (g.memory_mib > std::int64_t{1} << 30) {
        fail(ErrorCode::kTraceOutOfRange, source, cx.line(total), where + "/fb_memory_usage/total",
             "\"" + v + "\" is out of range: at most 1073741824 MiB (1 PiB) per GPU");
      }
    }

    if (const pugi::xml_node mig = gpu.child("mig_mode").child("current_mig")) {
      const std::string v = trim(mig.text().as_string());
      if (v == "Enabled") g.mig_enabled = true;
      else if (v != "Disabled" && v != "N/A") {
        fail(ErrorCode::kTraceBadValue, source, cx.line(mig), where + "/mig_mode/current_mig",
             "\"" + v + "\" is not Enabled, Disabled or N/A");
      }
    }

    if (const pugi::xml_node numa = gpu.child("numa_id")) {
      const std::string v = trim(numa.text().as_string());
      if (v != "N/A" && !v.empty() && !to_int(v, g.numa_id)) {
        fail(ErrorCode::kTraceBadValue, source, cx.line(numa), where + "/numa_id",
             "\"" + v + "\" is not a NUMA node number or N/A");
      }
    }
    out.push_back(std::move(g));
  }
  if (out.empty()) fail(ErrorCode::kTraceMissingColumn, source, cx.line(root), "nvidia_smi_log/gpu", "no <gpu> elements");
  if (const pugi::xml_node attached = root.child("attached_gpus")) {
    const std::string v = trim(attached.text().as_string());
    std::size_t n = 0;
    if (!to_int(v, n) || n != out.size()) {
      fail(ErrorCode::kTraceBadValue, source, cx.line(attached), "nvidia_smi_log/attached_gpus",
           "\"" + v + "\" but the file has " + std::to_string(out.size()) + " <gpu> element(s)");
    }
  }
  return out;
}

// ---------------------------------------------------------------- nvidia-smi topo -m

namespace {

/// Drops ANSI escape sequences (nvidia-smi underlines the header on a terminal: ESC[4m ... ESC[0m).
std::string strip_ansi(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
      i += 2;
      while (i < s.size() && !(s[i] >= '@' && s[i] <= '~')) ++i;
      continue;
    }
    out.push_back(s[i]);
  }
  return out;
}

std::vector<std::string> tokens(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(std::move(t));
  return out;
}

/// "GPU12" -> 12, else -1.
int gpu_label(std::string_view t) {
  if (t.size() < 4 || t.substr(0, 3) != "GPU") return -1;
  int k = -1;
  return to_int(t.substr(3), k) ? k : -1;
}

enum class Trailing { kCpuAffinity, kNumaAffinity, kGpuNumaId };

bool parse_cell(std::string_view t, NvidiaSmiTopoEntry& e) {
  e = {};
  if (t == "X") e.link = NvidiaSmiLink::kSelf;
  else if (t == "PIX") e.link = NvidiaSmiLink::kPix;
  else if (t == "PXB") e.link = NvidiaSmiLink::kPxb;
  else if (t == "PHB") e.link = NvidiaSmiLink::kPhb;
  else if (t == "NODE") e.link = NvidiaSmiLink::kNode;
  else if (t == "SYS" || t == "SOC") e.link = NvidiaSmiLink::kSys;
  else if (t.size() > 2 && t.substr(0, 2) == "NV") {
    e.link = NvidiaSmiLink::kNvlink;
    return to_int(t.substr(2), e.nvlinks) && e.nvlinks >= 1 && e.nvlinks <= 255;
  } else {
    return false;
  }
  return true;
}

/// The largest CPU or NUMA node number a list may name (Linux allows 8192 CPUs; this leaves room).
constexpr int kMaxCpuId = (1 << 20) - 1;
/// The most GPU columns a matrix may have (its size grows with the square).
constexpr std::size_t kMaxGpus = 1024;

/// Inclusive ranges of CPU (or NUMA node) numbers.
using CpuRanges = std::vector<std::pair<int, int>>;
enum class ListStatus : std::uint8_t { kOk, kMalformed, kOutOfRange };

/// "0-55,112-167" -> the ranges (kept as ranges: a list costs memory in its length, not in the
/// numbers it names); numbers above kMaxCpuId are out of range.
ListStatus parse_cpu_list(std::string_view s, CpuRanges& ranges) {
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const auto comma = std::min(s.find(',', pos), s.size());
    const std::string_view part = s.substr(pos, comma - pos);
    const auto dash = part.find('-');
    long long lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!to_int(part, lo)) return ListStatus::kMalformed;
      hi = lo;
    } else if (!to_int(part.substr(0, dash), lo) || !to_int(part.substr(dash + 1), hi) || hi < lo) {
      return ListStatus::kMalformed;
    }
    if (hi > kMaxCpuId) return ListStatus::kOutOfRange;
    ranges.emplace_back(static_cast<int>(lo), static_cast<int>(hi));
    pos = comma + 1;
  }
  return ListStatus::kOk;
}

/// How many distinct numbers the ranges name. O(r log r).
std::int64_t count_cpus(CpuRanges ranges) {
  std::sort(ranges.begin(), ranges.end());
  std::int64_t total = 0;
  long long covered = -1;   // the highest number counted so far
  for (const auto& [lo, hi] : ranges) {
    const long long from = std::max<long long>(lo, covered + 1);
    if (hi >= from) total += hi - from + 1;
    covered = std::max<long long>(covered, hi);
  }
  return total;
}

}  // namespace

NvidiaSmiTopo parse_nvidia_smi_topo(std::string_view text, const std::string& source) {
  std::vector<std::string> lines;
  for (std::size_t pos = 0; pos <= text.size();) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string l = strip_ansi(text.substr(pos, nl - pos));
    if (!l.empty() && l.back() == '\r') l.pop_back();
    lines.push_back(std::move(l));
    pos = nl + 1;
  }

  NvidiaSmiTopo topo;
  std::size_t i = 0;
  while (i < lines.size() && trim(lines[i]).empty()) ++i;
  const auto header = i < lines.size() ? tokens(lines[i]) : std::vector<std::string>{};
  topo.header_line = static_cast<std::int64_t>(std::min(i, lines.size() - 1) + 1);
  if (header.empty() || header[0] != "GPU0" || std::find(header.begin(), header.end(), "X") != header.end()) {
    fail(ErrorCode::kTraceMissingColumn, source, topo.header_line, "GPU0",
         "the first line must be the matrix header starting with GPU0: is this the output of `nvidia-smi topo -m`?");
  }
  // Device columns (GPUs first, then NICs), then the trailing columns, some of two or three words.
  std::vector<std::string> devices;
  std::vector<Trailing> trailing;
  for (std::size_t t = 0; t < header.size(); ++t) {
    const auto word = [&](std::size_t k) { return t + k < header.size() ? std::string_view(header[t + k]) : ""; };
    if (word(0) == "CPU" && word(1) == "Affinity") {
      trailing.push_back(Trailing::kCpuAffinity);
      t += 1;
    } else if (word(0) == "NUMA" && word(1) == "Affinity") {
      trailing.push_back(Trailing::kNumaAffinity);
      t += 1;
    } else if (word(0) == "GPU" && word(1) == "NUMA" && word(2) == "ID") {
      trailing.push_back(Trailing::kGpuNumaId);
      t += 2;
    } else if (trailing.empty()) {
      devices.push_back(header[t]);
    } else {
      fail(ErrorCode::kTraceUnknownColumn, source, topo.header_line, header[t],
           "unknown column after the device columns (expected CPU Affinity, NUMA Affinity, GPU NUMA ID)");
    }
  }
  std::size_t n = 0;
  while (n < devices.size() && gpu_label(devices[n]) == static_cast<int>(n)) ++n;
  if (n > kMaxGpus) {
    fail(ErrorCode::kTraceOutOfRange, source, topo.header_line, devices[kMaxGpus],
         std::to_string(n) + " GPU columns is out of range: at most " + std::to_string(kMaxGpus) + " GPUs per node");
  }
  for (std::size_t d = n; d < devices.size(); ++d) {
    if (gpu_label(devices[d]) >= 0) {
      fail(ErrorCode::kTraceBadValue, source, topo.header_line, devices[d],
           "GPU columns must come first and be numbered GPU0, GPU1, ... in order");
    }
  }

  topo.matrix.assign(n, std::vector<NvidiaSmiTopoEntry>(n));
  topo.cpu_affinity.assign(n, "");
  topo.numa_affinity.assign(n, -1);
  std::vector<std::int64_t> row_line(n, 0);
  for (++i; i < lines.size(); ++i) {
    const auto tok = tokens(lines[i]);
    if (tok.empty() || tok[0].rfind("Legend", 0) == 0) break;
    const auto line = static_cast<std::int64_t>(i + 1);
    const int g = gpu_label(tok[0]);
    if (g < 0) continue;  // a NIC row
    const auto r = static_cast<std::size_t>(g);
    if (r >= n) fail(ErrorCode::kTraceBadValue, source, line, tok[0], "a row for a GPU that has no column");
    if (row_line[r] != 0) {
      fail(ErrorCode::kTraceBadValue, source, line, tok[0], "second row for this GPU (first on line " +
                                                                std::to_string(row_line[r]) + ")");
    }
    row_line[r] = line;
    if (tok.size() < 1 + devices.size()) {
      fail(ErrorCode::kTraceBadValue, source, line, devices[tok.size() - 1],
           "malformed row: " + std::to_string(tok.size() - 1) + " value(s) for " + std::to_string(devices.size()) +
               " device column(s)");
    }
    if (tok.size() > 1 + devices.size() + trailing.size()) {
      fail(ErrorCode::kTraceBadValue, source, line, "",
           "malformed row: " + std::to_string(tok.size() - 1) + " values, the header has " +
               std::to_string(devices.size() + trailing.size()) + " columns");
    }
    for (std::size_t c = 0; c < n; ++c) {
      auto& e = topo.matrix[r][c];
      if (!parse_cell(tok[1 + c], e) || ((e.link == NvidiaSmiLink::kSelf) != (r == c))) {
        fail(ErrorCode::kTraceBadValue, source, line, devices[c],
             "\"" + tok[1 + c] + "\" is not a link between two GPUs" +
                 (r == c ? std::string(" (expected X on the diagonal)")
                         : std::string(" (expected NV#, PIX, PXB, PHB, NODE or SYS)")));
      }
    }
    for (std::size_t k = 0; 1 + devices.size() + k < tok.size(); ++k) {
      const std::string& v = tok[1 + devices.size() + k];
      if (trailing[k] == Trailing::kCpuAffinity) {
        CpuRanges cpus;
        const auto status = v == "N/A" ? ListStatus::kOk : parse_cpu_list(v, cpus);
        if (status == ListStatus::kOutOfRange) {
          fail(ErrorCode::kTraceOutOfRange, source, line, "CPU Affinity",
               "\"" + v + "\" is out of range: CPU numbers must be 0.." + std::to_string(kMaxCpuId));
        }
        if (status != ListStatus::kOk) {
          fail(ErrorCode::kTraceBadValue, source, line, "CPU Affinity", "\"" + v + "\" is not a CPU list like 0-55,112-167");
        }
        topo.cpu_affinity[r] = v == "N/A" ? "" : v;
      } else if (trailing[k] == Trailing::kNumaAffinity && v != "N/A") {
        // A single node as a rule; for a list or range the lowest node is taken.
        CpuRanges nodes;
        const auto status = parse_cpu_list(v, nodes);
        if (status == ListStatus::kOutOfRange) {
          fail(ErrorCode::kTraceOutOfRange, source, line, "NUMA Affinity",
               "\"" + v + "\" is out of range: NUMA node numbers must be 0.." + std::to_string(kMaxCpuId));
        }
        if (status != ListStatus::kOk || nodes.empty()) {
          fail(ErrorCode::kTraceBadValue, source, line, "NUMA Affinity", "\"" + v + "\" is not a NUMA node number or N/A");
        }
        topo.numa_affinity[r] = std::min_element(nodes.begin(), nodes.end())->first;
      }
    }
  }
  for (std::size_t r = 0; r < n; ++r) {
    if (row_line[r] == 0) fail(ErrorCode::kTraceBadValue, source, topo.header_line, devices[r], "no row for this GPU");
  }
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = a + 1; b < n; ++b) {
      if (!(topo.matrix[a][b] == topo.matrix[b][a])) {
        fail(ErrorCode::kTraceBadValue, source, row_line[b], devices[a],
             "the matrix is not symmetric: " + devices[a] + "-" + devices[b] + " and " + devices[b] + "-" + devices[a] +
                 " differ");
      }
    }
  }
  return topo;
}

// ---------------------------------------------------------------- NodeSpec

namespace {

struct UnionFind {
  std::vector<std::size_t> parent;
  explicit UnionFind(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), std::size_t{0}); }
  std::size_t find(std::size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void join(std::size_t a, std::size_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);  // the root is the group's lowest GPU
  }
};

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) fail(ErrorCode::kTraceCannotOpen, p.string(), 0, "", "cannot open the file");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

NodeSpec node_from_nvidia_smi(std::string_view query_xml, std::string_view topo_text, const GpuCatalog& catalog,
                              const std::string& query_source, const std::string& topo_source,
                              const NodeSpecDefaults& defaults) {
  const auto gpus = parse_nvidia_smi_query(query_xml, query_source);
  const auto topo = parse_nvidia_smi_topo(topo_text, topo_source);
  const std::size_t n = gpus.size();
  if (topo.matrix.size() != n) {
    fail(ErrorCode::kTraceBadValue, topo_source, topo.header_line, "GPU" + std::to_string(topo.matrix.size()),
         "the matrix has " + std::to_string(topo.matrix.size()) + " GPU(s) but " + query_source + " has " +
             std::to_string(n));
  }

  NodeSpec node;
  node.name = defaults.name;
  node.cpu_milli = defaults.cpu_milli;
  node.memory_mib = defaults.memory_mib;
  node.gpus.resize(n);
  int max_numa = -1;
  for (std::size_t g = 0; g < n; ++g) {
    auto& spec = node.gpus[g];
    const auto model = catalog.find(gpus[g].product_name);
    if (!model) {
      fail(ErrorCode::kTraceUnknownGpuModel, query_source, gpus[g].line,
           "nvidia_smi_log/gpu[" + std::to_string(g) + "]/product_name",
           "unknown GPU product \"" + gpus[g].product_name + "\"; known models: " + catalog.known_names() +
               " (add it, or an alias, to the GPU catalog)");
    }
    spec.model = *model;
    spec.bus_id = gpus[g].bus_id;
    if (gpus[g].mig_enabled) spec.partition = GpuPartition::kMig;
    const int numa = topo.numa_affinity[g] >= 0 ? topo.numa_affinity[g] : std::max(gpus[g].numa_id, 0);
    if (numa > 63) {
      fail(ErrorCode::kTraceOutOfRange, topo_source, topo.header_line, "NUMA Affinity",
           "NUMA node " + std::to_string(numa) + " is out of range (0..63)");
    }
    spec.socket = static_cast<std::int16_t>(numa);
    max_numa = std::max(max_numa, numa);
  }
  node.sockets = static_cast<std::int16_t>(std::max<int>({1, defaults.sockets, max_numa + 1}));

  // PCIe switches: groups joined by PIX. NVLink: every NV# pair; domains: NV groups that are cliques.
  UnionFind pix(n), nv(n);
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = a + 1; b < n; ++b) {
      const auto& e = topo.matrix[a][b];
      if (e.link == NvidiaSmiLink::kPix) {
        if (node.gpus[a].socket != node.gpus[b].socket) {
          fail(ErrorCode::kTraceBadValue, topo_source, topo.header_line, "NUMA Affinity",
               "GPU" + std::to_string(a) + " and GPU" + std::to_string(b) + " share a PCIe switch (PIX) but sit on NUMA nodes " +
                   std::to_string(node.gpus[a].socket) + " and " + std::to_string(node.gpus[b].socket));
        }
        pix.join(a, b);
      } else if (e.link == NvidiaSmiLink::kNvlink) {
        node.nvlinks.push_back({static_cast<std::uint16_t>(a), static_cast<std::uint16_t>(b),
                                static_cast<std::uint8_t>(e.nvlinks)});
        nv.join(a, b);
      }
    }
  }
  std::vector<int> group_size(n, 0);
  for (std::size_t g = 0; g < n; ++g) ++group_size[pix.find(g)];
  std::vector<std::int16_t> id(n, -1);
  std::int16_t next = 0;
  for (std::size_t g = 0; g < n; ++g) {
    const auto root = pix.find(g);
    if (group_size[root] < 2) continue;
    if (id[root] < 0) id[root] = next++;
    node.gpus[g].pcie_switch = id[root];
  }
  std::fill(group_size.begin(), group_size.end(), 0);
  for (std::size_t g = 0; g < n; ++g) ++group_size[nv.find(g)];
  std::vector<char> clique(n, 1);
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = a + 1; b < n; ++b) {
      if (nv.find(a) == nv.find(b) && topo.matrix[a][b].link != NvidiaSmiLink::kNvlink) clique[nv.find(a)] = 0;
    }
  }
  std::fill(id.begin(), id.end(), std::int16_t{-1});
  next = 0;
  for (std::size_t g = 0; g < n; ++g) {
    const auto root = nv.find(g);
    if (group_size[root] < 2 || !clique[root]) continue;
    if (id[root] < 0) id[root] = next++;
    node.gpus[g].nvlink_domain = id[root];
  }

  // CPUs per NUMA node from the CPU Affinity column, unless given.
  if (defaults.cpu_milli == 0) {
    std::vector<CpuRanges> cpus(static_cast<std::size_t>(node.sockets));
    std::vector<char> seen(cpus.size(), 0);
    for (std::size_t g = 0; g < n; ++g) {
      if (topo.cpu_affinity[g].empty()) continue;
      const auto s = static_cast<std::size_t>(node.gpus[g].socket);
      (void)parse_cpu_list(topo.cpu_affinity[g], cpus[s]);  // checked by the parser
      seen[s] = 1;
    }
    for (std::size_t s = 0; s < cpus.size(); ++s) {
      if (!seen[s]) {
        fail(ErrorCode::kTraceBadValue, topo_source, topo.header_line, "CPU Affinity",
             "cannot count the CPUs of NUMA node " + std::to_string(s) +
                 ": no GPU there lists a CPU Affinity; give the node's CPUs instead");
      }
    }
    const auto sockets = static_cast<std::int64_t>(cpus.size());
    for (std::size_t s = 0; s < cpus.size(); ++s) {
      NumaSpec z;
      z.cpu_milli = count_cpus(cpus[s]) * 1000;
      z.memory_mib = node.memory_mib / sockets + (s == 0 ? node.memory_mib % sockets : 0);
      node.cpu_milli += z.cpu_milli;
      node.numa.push_back(z);
    }
  }
  if (const std::string problem = normalize_numa(node); !problem.empty()) {
    fail(ErrorCode::kTraceBadValue, topo_source, topo.header_line, "NUMA Affinity", problem);
  }

  std::string product = gpus[0].product_name;
  std::replace(product.begin(), product.end(), ' ', '-');
  node.labels["nvidia.com/gpu.product"] = product;
  node.labels["nvidia.com/gpu.count"] = std::to_string(n);
  node.labels["nvidia.com/gpu.memory"] = std::to_string(gpus[0].memory_mib);
  return node;
}

NodeSpec node_from_nvidia_smi_files(const std::filesystem::path& query_xml, const std::filesystem::path& topo_text,
                                    const GpuCatalog& catalog, const NodeSpecDefaults& defaults) {
  const std::string xml = read_all(query_xml);
  const std::string topo = read_all(topo_text);
  return node_from_nvidia_smi(xml, topo, catalog, query_xml.string(), topo_text.string(), defaults);
}

}  // namespace gpusched::traces
