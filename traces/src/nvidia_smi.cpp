#include <gpusched/traces/nvidia_smi.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>
#include <sstream>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>
#include <pugixml.hpp>

#include <gpusched/error.hpp>
#include <gpusched/mig.hpp>

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
    if (g.mig_enabled) {
      std::size_t k = 0;
      for (const pugi::xml_node dev : gpu.child("mig_devices").children("mig_device")) {
        const std::string at = where + "/mig_devices/mig_device[" + std::to_string(k++) + "]";
        NvidiaSmiMigDevice d;
        d.line = cx.line(dev);
        // A count: absent or N/A = -1; anything else must be a whole number.
        const auto count = [&](const pugi::xml_node& n, const std::string& field, auto& v) {
          if (!n) return;
          const std::string t = trim(n.text().as_string());
          if (t == "N/A" || t.empty()) return;
          if (!to_int(t, v) || v > 1'000'000) {
            fail(ErrorCode::kTraceBadValue, source, cx.line(n), at + "/" + field, "\"" + t + "\" is not a count or N/A");
          }
        };
        count(dev.child("gpu_instance_id"), "gpu_instance_id", d.gpu_instance_id);
        count(dev.child("compute_instance_id"), "compute_instance_id", d.compute_instance_id);
        if (d.gpu_instance_id < 0) {
          fail(ErrorCode::kTraceMissingColumn, source, d.line, at + "/gpu_instance_id",
               "a <mig_device> needs a <gpu_instance_id> to tell which GPU instance it belongs to");
        }
        const pugi::xml_node shared = dev.child("device_attributes").child("shared");
        count(shared.child("multiprocessor_count"), "device_attributes/shared/multiprocessor_count", d.sms);
        count(shared.child("decoder_count"), "device_attributes/shared/decoder_count", d.decoders);
        count(shared.child("encoder_count"), "device_attributes/shared/encoder_count", d.encoders);
        count(shared.child("jpg_count"), "device_attributes/shared/jpg_count", d.jpgs);
        count(shared.child("ofa_count"), "device_attributes/shared/ofa_count", d.ofas);
        if (const pugi::xml_node mem = dev.child("fb_memory_usage").child("total")) {
          const std::string v = trim(mem.text().as_string());
          if (v != "N/A") {
            std::istringstream in(v);
            std::string number, unit, rest;
            in >> number >> unit >> rest;
            if (!to_int(number, d.memory_mib) || unit != "MiB" || !rest.empty() || d.memory_mib > g.memory_mib) {
              fail(ErrorCode::kTraceBadValue, source, cx.line(mem), at + "/fb_memory_usage/total",
                   "\"" + v + "\" is not a memory size like \"19968 MiB\" within the GPU's " + std::to_string(g.memory_mib) +
                       " MiB");
            }
          }
        }
        g.mig_devices.push_back(d);
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

// ---------------------------------------------------------------- nvidia-smi mig -lgip

std::vector<NvidiaSmiLgipProfile> parse_nvidia_smi_lgip(std::string_view text, const std::string& source) {
  std::vector<NvidiaSmiLgipProfile> out;
  bool want_second = false;   // the previous line was a profile's first line
  std::int64_t line_no = 0;
  for (std::size_t pos = 0; pos <= text.size();) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string l = trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    ++line_no;
    if (l.empty() || l.front() != '|') {
      if (want_second) fail(ErrorCode::kTraceBadValue, source, line_no, "CE", "expected the profile's second line (CE JPEG OFA)");
      continue;
    }
    l = l.substr(1, l.size() - (l.size() > 1 && l.back() == '|' ? 2 : 1));
    const auto tok = tokens(l);
    if (want_second) {
      auto& p = out.back();
      static const char* const kCols[] = {"CE", "JPEG", "OFA"};
      int* const dst[] = {&p.copy_engines, &p.jpgs, &p.ofas};
      if (tok.size() != 3) {
        fail(ErrorCode::kTraceBadValue, source, line_no, "CE",
             "expected the profile's second line with 3 values (CE JPEG OFA), found " + std::to_string(tok.size()));
      }
      for (std::size_t k = 0; k < 3; ++k) {
        if (!to_int(tok[k], *dst[k]) || *dst[k] > 1000) {
          fail(ErrorCode::kTraceBadValue, source, line_no, kCols[k], "\"" + tok[k] + "\" is not a count");
        }
      }
      want_second = false;
      continue;
    }
    int gpu = 0;
    if (tok.size() < 2 || !to_int(tok[0], gpu) || tok[1] != "MIG") continue;   // a header line
    const auto bad = [&](const char* col, const std::string& v, const std::string& what) {
      fail(ErrorCode::kTraceBadValue, source, line_no, col, "\"" + v + "\" is not " + what);
    };
    if (tok.size() != 10) {
      fail(ErrorCode::kTraceBadValue, source, line_no, "",
           "malformed profile line: expected GPU, MIG <name>, ID, Free/Total, Memory, P2P, SM, DEC, ENC (10 words), found " +
               std::to_string(tok.size()));
    }
    NvidiaSmiLgipProfile p;
    p.gpu = gpu;
    p.line = line_no;
    p.name = tok[2];
    if (!to_int(tok[3], p.id) || p.id > 1000) bad("ID", tok[3], "a profile id");
    {
      const auto slash = tok[4].find('/');
      int avail = 0;
      if (slash == std::string::npos || !to_int(std::string_view(tok[4]).substr(0, slash), avail) ||
          !to_int(std::string_view(tok[4]).substr(slash + 1), p.total) || avail > p.total || p.total > 64) {
        bad("Instances", tok[4], "Free/Total like 7/7");
      }
    }
    {
      const std::string& m = tok[5];
      const bool digits = !m.empty() && std::all_of(m.begin(), m.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; }) &&
                          std::count(m.begin(), m.end(), '.') <= 1 && m.front() != '.';
      const double gib = digits ? std::strtod(m.c_str(), nullptr) : -1.0;
      if (!digits || gib <= 0 || gib > 1 << 20) bad("Memory", m, "a size in GiB like 9.75");
      p.memory_mib = static_cast<std::int64_t>(std::llround(gib * 1024.0));
    }
    if (tok[6] != "Yes" && tok[6] != "No") bad("P2P", tok[6], "Yes or No");
    static const char* const kCols[] = {"SM", "DEC", "ENC"};
    int* const dst[] = {&p.sms, &p.decoders, &p.encoders};
    for (std::size_t k = 0; k < 3; ++k) {
      if (!to_int(tok[7 + k], *dst[k]) || *dst[k] > 100000) bad(kCols[k], tok[7 + k], "a count");
    }
    out.push_back(std::move(p));
    want_second = true;
  }
  if (want_second) fail(ErrorCode::kTraceBadValue, source, line_no, "CE", "the last profile has no second line (CE JPEG OFA)");
  if (out.empty()) {
    fail(ErrorCode::kTraceMissingColumn, source, 0, "GPU instance profiles",
         "no profile rows (\"|   0  MIG 1g.10gb  19  7/7  9.75  No  16  1  0  |\"): is this the output of `nvidia-smi mig -lgip`?");
  }
  return out;
}

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
  std::vector<std::vector<std::string>> gpu_nic_cells(n);   // per GPU row: its cells under the NIC columns
  topo.cpu_affinity.assign(n, "");
  topo.numa_affinity.assign(n, -1);
  std::vector<std::int64_t> row_line(n, 0);
  for (++i; i < lines.size(); ++i) {
    const auto tok = tokens(lines[i]);
    if (tok.empty() || tok[0].rfind("Legend", 0) == 0) break;
    const auto line = static_cast<std::int64_t>(i + 1);
    const int g = gpu_label(tok[0]);
    if (g < 0) {   // a NIC's row: its links to the GPUs
      const auto col = std::find(devices.begin() + static_cast<std::ptrdiff_t>(n), devices.end(), tok[0]);
      if (col == devices.end()) continue;   // a device with no column
      if (tok.size() < 1 + n) {
        fail(ErrorCode::kTraceBadValue, source, line, tok[0],
             "malformed row: " + std::to_string(tok.size() - 1) + " value(s) for " + std::to_string(n) + " GPU column(s)");
      }
      if (std::any_of(topo.nics.begin(), topo.nics.end(), [&](const NvidiaSmiTopoNic& e) { return e.name == tok[0]; })) {
        fail(ErrorCode::kTraceBadValue, source, line, tok[0], "second row for this NIC");
      }
      NvidiaSmiTopoNic nic;
      nic.name = tok[0];
      nic.column = static_cast<std::size_t>(col - devices.begin());
      nic.line = line;
      for (std::size_t c = 0; c < n; ++c) {
        NvidiaSmiTopoEntry e;
        if (!parse_cell(tok[1 + c], e) || e.link == NvidiaSmiLink::kSelf || e.link == NvidiaSmiLink::kNvlink) {
          fail(ErrorCode::kTraceBadValue, source, line, devices[c],
               "\"" + tok[1 + c] + "\" is not a PCIe link between a NIC and a GPU (expected PIX, PXB, PHB, NODE or SYS)");
        }
        nic.to_gpu.push_back(e);
      }
      topo.nics.push_back(std::move(nic));
      continue;
    }
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
    gpu_nic_cells[r].assign(tok.begin() + 1 + static_cast<std::ptrdiff_t>(n), tok.begin() + 1 + static_cast<std::ptrdiff_t>(devices.size()));
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
  // A NIC's row and the GPU rows' cells under its column say the same.
  for (const auto& nic : topo.nics) {
    for (std::size_t g = 0; g < n; ++g) {
      const std::string& cell = gpu_nic_cells[g][nic.column - n];
      NvidiaSmiTopoEntry e;
      if (!parse_cell(cell, e) || !(e == nic.to_gpu[g])) {
        fail(ErrorCode::kTraceBadValue, source, nic.line, devices[g],
             "the matrix is not symmetric: " + devices[g] + "-" + nic.name + " is \"" + cell + "\" in " + devices[g] + "'s row but differs in " +
                 nic.name + "'s row");
      }
    }
  }
  // "NIC Legend:" names the NIC columns ("  NIC0: mlx5_0").
  bool in_nic_legend = false;
  for (; i < lines.size(); ++i) {
    const std::string l = trim(lines[i]);
    if (l == "NIC Legend:") {
      in_nic_legend = true;
      continue;
    }
    const auto colon = l.find(':');
    if (!in_nic_legend || colon == std::string::npos) continue;
    const std::string label = trim(l.substr(0, colon)), name = trim(l.substr(colon + 1));
    for (auto& nic : topo.nics) {
      if (nic.name == label && !name.empty()) nic.name = name;
    }
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

// ---- product names

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

/// How a GPU name reads: the model words ("H100", "RTX-6000-ADA"), the form factor ("SXM",
/// "PCIE", "NVL" or "") and the memory word in GB (0 = none).
struct NameParts {
  std::vector<std::string> model;
  std::string form;
  std::int64_t memory_gb = 0;
};

NameParts name_parts(std::string_view name) {
  std::string n = upper(trim(name));
  for (auto& c : n) {
    if (c == ' ' || c == '_') c = '-';
  }
  for (bool again = true; again;) {   // vendor and brand words in front
    again = false;
    for (const std::string_view prefix : {"NVIDIA-", "TESLA-"}) {
      if (n.rfind(prefix, 0) == 0) {
        n.erase(0, prefix.size());
        again = true;
      }
    }
  }
  NameParts parts;
  std::size_t pos = 0;
  while (pos <= n.size()) {
    const auto dash = std::min(n.find('-', pos), n.size());
    const std::string t = n.substr(pos, dash - pos);
    pos = dash + 1;
    if (t.empty()) continue;
    std::int64_t gb = 0;
    if (t.size() > 2 && t.ends_with("GB") && to_int(std::string_view(t).substr(0, t.size() - 2), gb)) parts.memory_gb = gb;
    else if (t.rfind("SXM", 0) == 0) parts.form = "SXM";
    else if (t == "PCIE" || t == "NVL") parts.form = t;
    else if (t.rfind("HBM", 0) == 0 || t == "GDDR6" || t == "GDDR7") continue;   // memory type
    else parts.model.push_back(t);
  }
  return parts;
}

/// One model-word list is the start of the other ("RTX-6000-ADA" and "RTX-6000-ADA-GENERATION").
bool same_model(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.empty() || b.empty()) return false;
  const auto k = std::min(a.size(), b.size());
  return std::equal(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(k), b.begin());
}

std::string describe(const NameParts& p) {
  std::string model;
  for (const auto& w : p.model) model += (model.empty() ? "" : "-") + w;
  std::string out = "model \"" + model + "\"";
  if (!p.form.empty()) out += ", form factor " + p.form;
  if (p.memory_gb > 0) out += ", " + std::to_string(p.memory_gb) + " GB";
  return out;
}

}  // namespace

std::optional<GpuModelId> resolve_nvidia_smi_product(std::string_view product, std::int64_t memory_mib,
                                                     const GpuCatalog& catalog) {
  const std::string name = trim(product);
  if (auto id = catalog.find(name)) return id;
  const NameParts want = name_parts(name);
  struct Candidate {
    GpuModelId id;
    bool form_exact = false;
    bool memory_word = false;   // a spelling carries the name's memory word
    std::int64_t memory_diff = 0;
  };
  std::vector<Candidate> found;
  for (std::size_t i = 0; i < catalog.size(); ++i) {
    const GpuModelId id{static_cast<std::uint16_t>(i)};
    const GpuModel& m = catalog[id];
    bool model_match = false, memory_word = false, formless = false;
    std::set<std::string> forms;
    std::vector<std::string> spellings{m.name};
    spellings.insert(spellings.end(), m.aliases.begin(), m.aliases.end());
    for (const auto& sp : spellings) {
      const NameParts have = name_parts(sp);
      if (!same_model(have.model, want.model)) continue;
      model_match = true;
      if (!have.form.empty()) forms.insert(have.form);
      else formless = true;
      if (want.memory_gb > 0 && have.memory_gb == want.memory_gb) memory_word = true;
    }
    if (!model_match) continue;
    // A name with a form factor wants a model named with it (or never named with one); a name
    // without one (how nvidia-smi prints SXM boards) a model with an unmarked or SXM name.
    const bool form_ok = want.form.empty() ? (formless || forms.count("SXM") > 0) : (forms.empty() || forms.count(want.form) > 0);
    if (!form_ok) continue;
    Candidate c{id, !want.form.empty() && forms.count(want.form) > 0, memory_word, 0};
    if (memory_mib > 0) {
      c.memory_diff = std::llabs(m.memory_mib - memory_mib);
      if (c.memory_diff * 10 > memory_mib) continue;   // more than 10% apart: another model
    } else if (want.memory_gb > 0 && !memory_word) {
      c.memory_diff = std::llabs(m.memory_mib - want.memory_gb * 1000 * 1000 * 1000 / (1024 * 1024));
    }
    found.push_back(c);
  }
  if (found.empty()) return std::nullopt;
  const auto best = std::min_element(found.begin(), found.end(), [](const Candidate& a, const Candidate& b) {
    if (a.form_exact != b.form_exact) return a.form_exact;
    if (a.memory_diff != b.memory_diff) return a.memory_diff < b.memory_diff;
    if (a.memory_word != b.memory_word) return a.memory_word;
    return a.id.value < b.id.value;
  });
  return best->id;
}

namespace {

// ---- MIG instances from <mig_devices>

/// What a GI looks like in -q -x (its CIs added up).
struct GiSeen {
  int id = 0;
  std::int64_t memory_mib = -1;
  int sms = 0;            // sum over its CIs; 0 = unknown
  bool sms_known = true;
  int decoders = -1, encoders = -1, jpgs = -1, ofas = -1;
  std::int64_t line = 0;
};

/// The figures a profile is matched on (the catalog's, or lgip's when given).
struct ProfileFigures {
  int profile = -1;       // index in the catalog geometry
  std::int64_t memory_mib = 0;
  int sms = 0;            // 0 = unknown
  int decoders = -1, encoders = -1, jpgs = -1, ofas = -1;   // -1 = unknown
  std::int64_t lgip_line = 0;
};

/// The catalog profile of `gi`: closest memory (within 20%: the catalog may hold nominal
/// sizes), then SMs (equal, else unknown, else the fewest that cover the CIs'), then media engines (lgip's counts; without them a GI with an OFA is
/// the "+me" twin). -1 when none.
int match_profile(const GiSeen& gi, const std::vector<ProfileFigures>& figures, const MigGeometry& geo, int gpu_sms) {
  std::int64_t best_diff = -1;
  for (const auto& f : figures) {
    const auto d = std::llabs(f.memory_mib - gi.memory_mib);
    if (d * 5 <= std::max<std::int64_t>(gi.memory_mib, 1) && (best_diff < 0 || d < best_diff)) best_diff = d;
  }
  if (best_diff < 0) return -1;
  int best = -1;
  std::tuple<int, int, int> best_key{};
  for (const auto& f : figures) {
    const auto d = std::llabs(f.memory_mib - gi.memory_mib);
    if (d > best_diff + best_diff / 50 + 64) continue;   // not among the closest
    // SMs: 0 = the profile's count equals the GI's (its CIs' sum), 1 = the profile has no count,
    // 2 = the profile has more (CIs that do not cover the GI); a profile with fewer is out. Ties
    // go to the count closest to the GI's (estimated as the GPU's SMs x compute slices / 7).
    int sm_rank = 0, sm_excess = 0;
    if (gi.sms_known && gi.sms > 0) {
      if (f.sms > 0) {
        if (f.sms < gi.sms) continue;
        sm_excess = f.sms - gi.sms;
        sm_rank = sm_excess == 0 ? 0 : 2;
      } else {
        const int est = gpu_sms * geo.profiles[static_cast<std::size_t>(f.profile)].compute_slices / std::max(geo.compute_slices, 1);
        sm_excess = std::abs(est - gi.sms);
        sm_rank = 1;
      }
    }
    int media_rank = 0;
    const bool me = geo.profiles[static_cast<std::size_t>(f.profile)].media_extensions;
    if (f.ofas >= 0 && gi.ofas >= 0) {
      media_rank = (f.ofas == gi.ofas ? 0 : 2) + (gi.jpgs >= 0 && f.jpgs >= 0 && f.jpgs != gi.jpgs ? 1 : 0) +
                   (gi.decoders >= 0 && f.decoders >= 0 && f.decoders != gi.decoders ? 1 : 0);
    } else {
      media_rank = (gi.ofas > 0) == me ? 0 : 1;
    }
    const std::tuple<int, int, int> key{sm_rank, media_rank, sm_excess};
    if (best < 0 || key < best_key) {
      best = f.profile;
      best_key = key;
    }
  }
  return best;
}

/// Places `profiles` (indices) on an empty GPU: largest first, lowest legal starts, backtracking.
bool place_all(const MigGeometry& geo, std::vector<int>& order, std::size_t k, MigLayout& layout) {
  if (k == order.size()) return true;
  const int p = order[k];
  for (const int start : geo.profiles[static_cast<std::size_t>(p)].starts) {
    if (!layout.can_place(geo, p, start)) continue;
    layout.place(geo, p, start);
    if (place_all(geo, order, k + 1, layout)) return true;
    layout.remove(geo, p, start);
  }
  return false;
}

/// The static GPU instances of MIG-enabled GPU `g` from its <mig_devices>.
std::vector<MigInstance> mig_instances(const NvidiaSmiGpu& gpu, std::size_t g, const GpuModel& model,
                                       const std::vector<NvidiaSmiLgipProfile>& lgip, const std::string& query_source,
                                       const std::string& lgip_source) {
  const std::string where = "nvidia_smi_log/gpu[" + std::to_string(g) + "]";
  if (!model.mig) {
    fail(ErrorCode::kTraceBadValue, query_source, gpu.line, where + "/mig_mode/current_mig",
         "MIG is enabled but the catalog's " + model.name + " has no MIG geometry (add \"mig\" to its catalog entry)");
  }
  const MigGeometry& geo = *model.mig;
  // GIs: CIs grouped by gpu_instance_id, in file order.
  std::map<int, GiSeen> by_id;
  std::vector<int> order;
  for (const auto& d : gpu.mig_devices) {
    auto [it, fresh] = by_id.try_emplace(d.gpu_instance_id);
    GiSeen& gi = it->second;
    if (fresh) {
      order.push_back(d.gpu_instance_id);
      gi.id = d.gpu_instance_id;
      gi.line = d.line;
      gi.memory_mib = d.memory_mib;
      gi.decoders = d.decoders;
      gi.encoders = d.encoders;
      gi.jpgs = d.jpgs;
      gi.ofas = d.ofas;
    }
    if (d.sms < 0) gi.sms_known = false;
    else gi.sms += d.sms;
  }
  if (order.empty()) return {};
  if (order.size() > static_cast<std::size_t>(geo.memory_slices)) {
    fail(ErrorCode::kTraceBadValue, query_source, by_id[order.front()].line, where + "/mig_devices",
         std::to_string(order.size()) + " GPU instances, but a " + model.name + " has room for at most " +
             std::to_string(geo.memory_slices));
  }
  // The figures to match on: the catalog's profiles, with lgip's numbers where lgip names them.
  std::vector<ProfileFigures> figures;
  for (std::size_t p = 0; p < geo.profiles.size(); ++p) {
    figures.push_back({static_cast<int>(p), geo.profiles[p].memory_mib, geo.profiles[p].sms, -1, -1, -1, -1, 0});
  }
  if (!lgip.empty()) {
    bool any = false;
    for (const auto& row : lgip) {
      if (row.gpu != static_cast<int>(g)) continue;
      any = true;
      const int p = geo.find_profile(row.name);
      if (p < 0) continue;   // a profile the catalog does not model (e.g. +gfx): only an error if a GI needs it
      figures[static_cast<std::size_t>(p)] = {p, row.memory_mib, row.sms, row.decoders, row.encoders, row.jpgs, row.ofas, row.line};
    }
    if (!any) {
      fail(ErrorCode::kTraceMissingColumn, lgip_source, 0, "GPU",
           "no profiles for GPU " + std::to_string(g) + ", whose MIG mode is enabled in " + query_source);
    }
  }
  std::vector<int> profiles;
  for (const int id : order) {
    const GiSeen& gi = by_id[id];
    const std::string at = where + "/mig_devices (gpu_instance_id " + std::to_string(id) + ")";
    if (gi.memory_mib < 0) {
      fail(ErrorCode::kTraceMissingColumn, query_source, gi.line, at + "/fb_memory_usage/total",
           "the GPU instance's memory is N/A or missing: cannot tell its profile");
    }
    const int p = match_profile(gi, figures, geo, model.sms);
    if (p < 0) {
      std::string known;
      for (const auto& f : figures) {
        known += (known.empty() ? "" : ", ") + geo.profiles[static_cast<std::size_t>(f.profile)].name + " " +
                 std::to_string(f.memory_mib) + " MiB";
      }
      fail(ErrorCode::kTraceBadValue, query_source, gi.line, at + "/fb_memory_usage/total",
           "a GPU instance of " + std::to_string(gi.memory_mib) + " MiB" +
               (gi.sms_known && gi.sms > 0 ? " and " + std::to_string(gi.sms) + " SMs" : std::string()) +
               " matches no MIG profile of the catalog's " + model.name + " (" + known + ")" +
               (lgip.empty() ? std::string() : "; figures from " + lgip_source) +
               ": add the profile to the model's catalog entry");
    }
    profiles.push_back(p);
  }
  std::vector<int> placed = profiles;
  std::stable_sort(placed.begin(), placed.end(), [&](int a, int b) {
    const auto& pa = geo.profiles[static_cast<std::size_t>(a)];
    const auto& pb = geo.profiles[static_cast<std::size_t>(b)];
    return std::pair(pa.memory_slices, pa.compute_slices) > std::pair(pb.memory_slices, pb.compute_slices);
  });
  MigLayout layout;
  if (!place_all(geo, placed, 0, layout)) {
    std::string names;
    for (const int p : profiles) names += (names.empty() ? "" : ", ") + geo.profiles[static_cast<std::size_t>(p)].name;
    fail(ErrorCode::kTraceBadValue, query_source, by_id[order.front()].line, where + "/mig_devices",
         "the GPU instances read as " + names + ", which do not fit one " + model.name +
             " under the catalog's MIG geometry (slices, starts, counts)");
  }
  return layout.instances();
}

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
                              const NodeSpecDefaults& defaults, std::string_view lgip_text,
                              const std::string& lgip_source) {
  const auto gpus = parse_nvidia_smi_query(query_xml, query_source);
  const auto topo = parse_nvidia_smi_topo(topo_text, topo_source);
  std::vector<NvidiaSmiLgipProfile> lgip;
  if (!lgip_text.empty() || !lgip_source.empty()) lgip = parse_nvidia_smi_lgip(lgip_text, lgip_source);
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
    const auto model = resolve_nvidia_smi_product(gpus[g].product_name, gpus[g].memory_mib, catalog);
    if (!model) {
      fail(ErrorCode::kTraceUnknownGpuModel, query_source, gpus[g].line,
           "nvidia_smi_log/gpu[" + std::to_string(g) + "]/product_name",
           "unknown GPU product \"" + gpus[g].product_name + "\" (read as " + describe(name_parts(gpus[g].product_name)) +
               ", " + std::to_string(gpus[g].memory_mib) + " MiB): no catalog model has that name or alias, or one of "
               "the same model, form factor and memory (within 10%). Known models: " + catalog.known_names() +
               ". To add it, write a GPU catalog JSON ([{\"name\": ..., \"aliases\": [\"" + gpus[g].product_name +
               "\"], \"memory_mib\": " + std::to_string(gpus[g].memory_mib) +
               ", \"sms\": ...}]) and pass it with --gpu-models FILE (gpusched discover), gpu_models=FILE "
               "(gpusched.discover) or put it under cluster.gpu_models in the scenario");
    }
    spec.model = *model;
    spec.bus_id = gpus[g].bus_id;
    if (gpus[g].mig_enabled) {
      spec.partition = GpuPartition::kMig;
      spec.mig = mig_instances(gpus[g], g, catalog[*model], lgip, query_source, lgip_source);
    }
    const int numa = topo.numa_affinity[g] >= 0 ? topo.numa_affinity[g] : std::max(gpus[g].numa_id, 0);
    if (numa > 63) {
      fail(ErrorCode::kTraceOutOfRange, topo_source, topo.header_line, "NUMA Affinity",
           "NUMA node " + std::to_string(numa) + " is out of range (0..63)");
    }
    spec.socket = static_cast<std::int16_t>(numa);
    max_numa = std::max(max_numa, numa);
  }
  node.sockets = static_cast<std::int16_t>(std::max<int>({1, defaults.sockets, max_numa + 1}));

  // PCIe switches: groups joined by PIX, between GPUs or through a NIC both reach by PIX (NVLinked
  // GPUs show NV# to each other, not the switch they share: DGX H100's GPU0-GPU1 and NIC0).
  // NVLink: every NV# pair; domains: NV groups that are cliques.
  UnionFind pix(n), nv(n);
  for (std::size_t k = 0; k < topo.nics.size(); ++k) {
    const auto& nic = topo.nics[k];
    std::optional<std::size_t> first;
    for (std::size_t g = 0; g < n; ++g) {
      if (nic.to_gpu[g].link != NvidiaSmiLink::kPix) continue;
      if (!first) {
        first = g;
        continue;
      }
      if (node.gpus[*first].socket != node.gpus[g].socket) {
        fail(ErrorCode::kTraceBadValue, topo_source, topo.header_line, nic.name,
             "NIC " + nic.name + " shares a PCIe switch (PIX) with GPU" + std::to_string(*first) + " and GPU" + std::to_string(g) +
                 ", which sit on NUMA nodes " + std::to_string(node.gpus[*first].socket) + " and " + std::to_string(node.gpus[g].socket));
      }
      // Only where the GPUs' own cell hides the switch behind NVLink: a PCIe cell (NODE, PHB,
      // ...) says where they are, and wins.
      if (topo.matrix[*first][g].link == NvidiaSmiLink::kNvlink) pix.join(*first, g);
    }
  }
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

  // NICs: on the root of the first GPU they reach by PIX (behind its switch), else by PXB; else on
  // a root of their own, on the NUMA node of a GPU they reach without crossing sockets.
  for (const auto& nic : topo.nics) {
    NicSpec spec;
    const auto reach = [&](NvidiaSmiLink link) -> std::optional<std::size_t> {
      for (std::size_t g = 0; g < n; ++g) {
        if (nic.to_gpu[g].link == link) return g;
      }
      return std::nullopt;
    };
    if (auto g = reach(NvidiaSmiLink::kPix); g || (g = reach(NvidiaSmiLink::kPxb))) {
      spec.root_gpu = static_cast<std::int16_t>(*g);
      spec.socket = node.gpus[*g].socket;
    } else if (auto h = reach(NvidiaSmiLink::kPhb); h || (h = reach(NvidiaSmiLink::kNode))) {
      spec.socket = node.gpus[*h].socket;
    }
    node.nics.push_back(spec);
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

  bool any_mig = false, any_gi = false;
  for (const auto& gs : node.gpus) {
    any_mig = any_mig || gs.partition == GpuPartition::kMig;
    any_gi = any_gi || !gs.mig.empty();
  }
  node.mig_dynamic = any_mig && (defaults.mig_dynamic || !any_gi);

  std::string product = gpus[0].product_name;
  std::replace(product.begin(), product.end(), ' ', '-');
  node.labels["nvidia.com/gpu.product"] = product;
  node.labels["nvidia.com/gpu.count"] = std::to_string(n);
  node.labels["nvidia.com/gpu.memory"] = std::to_string(gpus[0].memory_mib);
  return node;
}

NodeSpec node_from_nvidia_smi_files(const std::filesystem::path& query_xml, const std::filesystem::path& topo_text,
                                    const GpuCatalog& catalog, const NodeSpecDefaults& defaults,
                                    const std::filesystem::path& mig_lgip) {
  const std::string xml = read_all(query_xml);
  const std::string topo = read_all(topo_text);
  const std::string lgip = mig_lgip.empty() ? std::string() : read_all(mig_lgip);
  return node_from_nvidia_smi(xml, topo, catalog, query_xml.string(), topo_text.string(), defaults, lgip,
                              mig_lgip.string());
}

nlohmann::json node_to_json(const NodeSpec& node, const GpuCatalog& catalog, const std::string& source,
                            std::vector<std::string>* dropped) {
  nlohmann::json j;
  j["name"] = node.name;
  if (node.cpu_milli % 1000 == 0) j["cpu"] = node.cpu_milli / 1000;
  else j["cpu"] = std::to_string(node.cpu_milli) + "m";
  j["memory"] = std::to_string(node.memory_mib) + "Mi";
  const auto cpu_json = [](std::int64_t milli) -> nlohmann::json {
    if (milli % 1000 == 0) return milli / 1000;
    return std::to_string(milli) + "m";
  };
  if (!node.gpus.empty()) {
    const auto model = node.gpus.front().model;
    const bool mig = node.gpus.front().partition == GpuPartition::kMig;
    for (std::size_t g = 0; g < node.gpus.size(); ++g) {
      if (node.gpus[g].model != model) {
        throw_error(ErrorCode::kTraceBadValue, {source, 0, "nvidia_smi_log/gpu[" + std::to_string(g) + "]/product_name"},
                    "GPU" + std::to_string(g) + " is a " + catalog[node.gpus[g].model].name + " and GPU0 a " +
                        catalog[model].name + ": a cluster file's node has one GPU model");
      }
      if ((node.gpus[g].partition == GpuPartition::kMig) != mig) {
        throw_error(ErrorCode::kTraceBadValue, {source, 0, "nvidia_smi_log/gpu[" + std::to_string(g) + "]/mig_mode/current_mig"},
                    "MIG mode is " + std::string(mig ? "enabled" : "disabled") + " on GPU0 but not on GPU" +
                        std::to_string(g) + ": a cluster file's node partitions all its GPUs alike (enable or "
                        "disable MIG on all of them, or describe the node by hand)");
      }
    }
    j["gpus"] = node.gpus.size();
    j["gpu_model"] = catalog[model].name;
  }
  j["sockets"] = node.sockets;
  nlohmann::json topo = nlohmann::json::object();
  if (!node.numa.empty()) {
    nlohmann::json numa = nlohmann::json::array();
    for (const auto& z : node.numa) numa.push_back({{"cpu", cpu_json(z.cpu_milli)}, {"memory", std::to_string(z.memory_mib) + "Mi"}});
    topo["numa"] = numa;
  }
  if (!node.gpus.empty()) {
    nlohmann::json sockets = nlohmann::json::array();
    for (const auto& g : node.gpus) sockets.push_back(g.socket);
    topo["gpu_sockets"] = sockets;
    const std::size_t n = node.gpus.size();
    const bool one_domain = n > 1 && std::all_of(node.gpus.begin(), node.gpus.end(), [](const GpuSpec& g) { return g.nvlink_domain == 0; });
    if (one_domain) {
      topo["nvlink"] = "nvswitch";
    } else if (node.nvlinks.empty()) {
      topo["nvlink"] = "none";
    } else {
      nlohmann::json links = nlohmann::json::array();
      for (const auto& l : node.nvlinks) links.push_back({l.a, l.b, l.links});
      topo["nvlink"] = links;
      if (dropped && std::any_of(node.gpus.begin(), node.gpus.end(), [](const GpuSpec& g) { return g.nvlink_domain >= 0; })) {
        dropped->push_back("NVLink domains other than one over all GPUs (kept as point-to-point links)");
      }
    }
    // PCIe switches: expressible when every switch holds the same number of consecutive GPUs.
    bool any_switch = false;
    for (const auto& g : node.gpus) any_switch = any_switch || g.pcie_switch >= 0;
    if (any_switch) {
      std::size_t per = 0;
      while (per < n && node.gpus[per].pcie_switch == node.gpus[0].pcie_switch && node.gpus[0].pcie_switch >= 0) ++per;
      bool regular = per > 0 && n % per == 0;
      for (std::size_t g = 0; regular && g < n; ++g) {
        regular = node.gpus[g].pcie_switch == static_cast<std::int16_t>(g / per);
      }
      if (regular) topo["gpus_per_pcie_switch"] = per;
      else if (dropped) dropped->push_back("PCIe switch groups (not consecutive groups of one size)");
    }
    if (dropped) dropped->push_back("PCI bus ids");
  }
  j["topology"] = topo;
  if (!node.nics.empty()) {
    nlohmann::json nics = nlohmann::json::array();
    for (const auto& nic : node.nics) {
      nlohmann::json e = nic.root_gpu >= 0 ? nlohmann::json{{"gpu", nic.root_gpu}} : nlohmann::json{{"socket", nic.socket}};
      if (!nic.rdma) e["rdma"] = false;
      nics.push_back(e);
    }
    j["nics"] = nics;
  }
  if (!node.gpus.empty() && node.gpus.front().partition == GpuPartition::kMig) {
    nlohmann::json part = {{"mode", "mig"}};
    nlohmann::json layouts = nlohmann::json::array();
    for (const auto& g : node.gpus) {
      const auto& geo = *catalog[g.model].mig;
      nlohmann::json l = nlohmann::json::array();
      for (const auto& gi : g.mig) l.push_back({{"profile", geo.profiles[static_cast<std::size_t>(gi.profile)].name}, {"start", gi.start}});
      layouts.push_back(l);
    }
    part["layouts"] = layouts;
    if (node.mig_dynamic) part["dynamic"] = true;
    j["gpu_partition"] = part;
  }
  if (!node.labels.empty()) j["labels"] = node.labels;
  return j;
}

}  // namespace gpusched::traces
