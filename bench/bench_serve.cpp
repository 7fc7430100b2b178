// Load benchmark of `gpusched serve`, the scheduler extender (issue 16), on loopback only.
//
//   build/cpp/bench/bench_serve [--nodes 1000,10000] [--clients 4] [--seconds 5] [--pairs 20000]
//                               [--profile kube-default] [--server-threads 4] [--mode retry,bind]
//
// For each node count: writes a synthetic `kubectl get nodes -o json` (8 x A100-80GB nodes, 96
// CPUs, 1 TiB, every node its own name) to a temporary file, starts the extender on it in this
// process (scenario::serve_http on 127.0.0.1, a free port), and runs `--clients` client threads,
// each on one kept-alive connection, sending kube-scheduler's two calls per pending pod in turn:
// POST /filter then POST /prioritize, with ExtenderArgs naming every node (nodeCacheCapable:
// NodeNames). Pods cycle through a mix (CPU only; 1, 2 and 4 GPUs). Two modes:
//   retry: each client asks about 8 pending pods over and over and never binds them, so the
//          cluster stays as it is (kube-scheduler retrying pods that stay pending; every answer
//          after the first of each pod comes from the decision kept for it).
//   bind:  every pair is a new pod, bound (POST /bind) where prioritize gave 10; each client
//          deletes its oldest pod (POST /pods/delete) once it holds 64, so the cluster changes
//          with every call and no answer can be reused across pods. A bind refused because
//          another client filled that node in between is counted (printed), not a failure.
// Each client stops after `--seconds` or `--pairs` pairs, whichever comes
// first; then the server is stopped (SIGINT to this process, which it handles) and the figures
// printed: pairs per second over all clients, and p50 / p99 / max latency per verb as a client
// sees it (request written to response read). Every answer must be 200 with the expected
// fields, or the benchmark fails (exit 1). Bounded in time and count; nothing leaves loopback.
// Figures: BENCHMARKS.md, "Serve".
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <gpusched/scenario/extender.hpp>
#include <gpusched/scenario/serve.hpp>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

struct Args {
  std::vector<std::size_t> nodes{1000, 10000};
  unsigned clients = 4;
  double seconds = 5.0;
  std::size_t pairs = 20000;
  std::string profile = "kube-default";
  unsigned server_threads = 4;
  std::vector<std::string> modes{"retry", "bind"};
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "bench_serve: %s\nusage: bench_serve [--nodes 1000,10000] [--clients 4] [--seconds 5] [--pairs 20000] "
               "[--profile kube-default] [--server-threads 4] [--mode retry,bind]\n",
               why);
  std::exit(2);
}

std::size_t positive(const std::string& flag, const std::string& v) {
  try {
    std::size_t used = 0;
    const auto n = std::stoull(v, &used);
    if (used == v.size() && n > 0) return n;
  } catch (const std::exception&) {
  }
  usage((flag + " wants a positive integer, got \"" + v + "\"").c_str());
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage((flag + " needs a value").c_str());
    const std::string v = argv[++i];
    if (flag == "--nodes") {
      a.nodes.clear();
      std::size_t start = 0;
      while (start <= v.size()) {
        const auto comma = v.find(',', start);
        a.nodes.push_back(positive(flag, v.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (flag == "--clients") {
      a.clients = static_cast<unsigned>(positive(flag, v));
    } else if (flag == "--seconds") {
      try {
        a.seconds = std::stod(v);
      } catch (const std::exception&) {
        usage("--seconds wants a number");
      }
      if (!(a.seconds > 0)) usage("--seconds wants a positive number");
    } else if (flag == "--pairs") {
      a.pairs = positive(flag, v);
    } else if (flag == "--profile") {
      a.profile = v;
    } else if (flag == "--mode") {
      a.modes.clear();
      std::size_t start = 0;
      while (start <= v.size()) {
        const auto comma = v.find(',', start);
        a.modes.push_back(v.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (a.modes.back() != "retry" && a.modes.back() != "bind") usage(("--mode wants retry and/or bind, got " + a.modes.back()).c_str());
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (flag == "--server-threads") {
      a.server_threads = static_cast<unsigned>(positive(flag, v));
    } else {
      usage(("unknown option " + flag).c_str());
    }
  }
  return a;
}

std::string node_name(std::size_t i) { return "gpu-node-" + std::to_string(i); }

nlohmann::json node_list(std::size_t n) {
  nlohmann::json items = nlohmann::json::array();
  for (std::size_t i = 0; i < n; ++i) {
    const nlohmann::json resources = {{"cpu", "96"}, {"memory", "1056858112Ki"}, {"nvidia.com/gpu", "8"}, {"pods", "110"}};
    items.push_back({{"apiVersion", "v1"},
                     {"kind", "Node"},
                     {"metadata",
                      {{"name", node_name(i)},
                       {"labels",
                        {{"kubernetes.io/hostname", node_name(i)},
                         {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"},
                         {"nvidia.com/gpu.count", "8"},
                         {"nvidia.com/gpu.memory", "81920"}}}}},
                     {"spec", nlohmann::json::object()},
                     {"status", {{"allocatable", resources}, {"capacity", resources}}}});
  }
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

/// Pending pod `k` of the mix: CPU only, 1, 2 or 4 GPUs; named load-`k` (with `prefix`).
nlohmann::json pod(std::size_t k, const std::string& prefix = "") {
  static const char* gpus[] = {"0", "1", "2", "4"};
  const auto g = gpus[k % 4];
  nlohmann::json requests = {{"cpu", std::to_string(4 + 4 * (k % 4))}, {"memory", std::to_string(16 + 32 * (k % 4)) + "Gi"}};
  if (std::string(g) != "0") requests["nvidia.com/gpu"] = g;
  nlohmann::json limits = nlohmann::json::object();
  if (std::string(g) != "0") limits["nvidia.com/gpu"] = g;
  nlohmann::json container = {{"name", "main"}, {"image", "busybox"}, {"resources", {{"requests", requests}, {"limits", limits}}}};
  nlohmann::json p;
  p["apiVersion"] = "v1";
  p["kind"] = "Pod";
  const auto name = "load-" + prefix + std::to_string(k);
  p["metadata"] = {{"name", name}, {"namespace", "bench"}, {"uid", "uid-" + name}};
  p["spec"]["containers"] = nlohmann::json::array({container});
  p["status"]["phase"] = "Pending";
  return p;
}

struct Latencies {
  std::vector<double> filter, prioritize, bind;   // seconds
  std::size_t pairs = 0;
  std::size_t conflicts = 0;   // bind mode: binds refused because another client took the room first
  std::string failure;
};

/// Mean seconds the server spent answering `verb` (its /metrics histogram's sum / count): the
/// extender's own time, without the transport and the clients.
double server_mean(const std::string& metrics, const std::string& verb) {
  auto value = [&](const std::string& series) {
    const auto key = "gpusched_extender_request_duration_seconds_" + series + "{verb=\"" + verb + "\"} ";
    const auto at = metrics.find(key);
    return at == std::string::npos ? 0.0 : std::strtod(metrics.c_str() + at + key.size(), nullptr);
  };
  const double count = value("count");
  return count > 0 ? value("sum") / count : 0.0;
}

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

/// The host that prioritize gave 10 (MaxExtenderPriority), from the response text.
std::string top_host(const std::string& priorities) {
  const auto at = priorities.find("\"Score\":10}");
  if (at == std::string::npos) return {};
  const auto host = priorities.rfind("{\"Host\":\"", at);
  if (host == std::string::npos) return {};
  const auto begin = host + 9;
  return priorities.substr(begin, priorities.find('"', begin) - begin);
}

/// One client: a kept-alive connection, filter then prioritize per pod (then bind, in bind
/// mode), until time or count.
Latencies client(std::uint16_t port, unsigned id, const std::vector<std::string>& names, double seconds,
                 std::size_t max_pairs, bool bind) {
  Latencies out;
  try {
    asio::io_context ioc;
    beast::tcp_stream stream(ioc);
    stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    const nlohmann::json node_names = names;
    const std::string names_json = node_names.dump();   // written once: the client's cost is not the server's
    // A handful of distinct pods per client, asked over and over (kube-scheduler retries pending pods).
    std::vector<std::string> bodies;
    if (!bind) {
      for (std::size_t k = 0; k < 8; ++k) bodies.push_back(nlohmann::json{{"Pod", pod(8 * id + k)}, {"NodeNames", node_names}}.dump());
    }
    const std::string prefix = "c" + std::to_string(id) + "-";
    beast::flat_buffer buffer;
    auto call = [&](const char* target, const std::string& body, std::vector<double>& lat, const char* expect) -> std::string {
      http::request<http::string_body> req{http::verb::post, target, 11};
      req.set(http::field::host, "127.0.0.1");
      req.set(http::field::content_type, "application/json");
      req.keep_alive(true);
      req.body() = body;
      req.prepare_payload();
      const auto t0 = Clock::now();
      http::write(stream, req);
      http::response<http::string_body> res;
      http::read(stream, buffer, res);
      lat.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      if (res.result_int() != 200 || res.body().find(expect) == std::string::npos) {
        throw std::runtime_error(std::string(target) + " answered " + std::to_string(res.result_int()) + ": " +
                                 res.body().substr(0, 200));
      }
      return std::move(res.body());
    };
    std::vector<double> deletes;
    std::deque<std::string> held;   // bind mode: this client's bound pods, oldest first
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    while (out.pairs < max_pairs && Clock::now() < end) {
      if (!bind) {
        const auto& body = bodies[out.pairs % bodies.size()];
        call("/filter", body, out.filter, "\"NodeNames\"");
        call("/prioritize", body, out.prioritize, "\"Score\"");
        ++out.pairs;
        continue;
      }
      const auto p = pod(out.pairs, prefix);
      const auto name = p["metadata"]["name"].get<std::string>();
      const auto body = R"({"Pod":)" + p.dump() + R"(,"NodeNames":)" + names_json + "}";
      call("/filter", body, out.filter, "\"NodeNames\"");
      const auto host = top_host(call("/prioritize", body, out.prioritize, "\"Score\""));
      ++out.pairs;
      if (host.empty()) throw std::runtime_error("prioritize gave no node 10 for " + name + " (the cluster is full?)");
      const auto bound = call("/bind", nlohmann::json{{"PodName", name}, {"PodNamespace", "bench"}, {"PodUID", "uid-" + name}, {"Node", host}}.dump(),
                              out.bind, "\"Error\":\"");
      if (bound.find("\"Error\":\"\"") == std::string::npos) {
        // Another client bound to that node between this pod's prioritize and its bind (as two
        // schedulers can): kube-scheduler would retry the pod. Counted, not an error.
        if (bound.find("does not fit node") == std::string::npos) throw std::runtime_error("/bind answered " + bound.substr(0, 200));
        ++out.conflicts;
        continue;
      }
      held.push_back(name);
      if (held.size() > 64) {
        call("/pods/delete", nlohmann::json{{"PodName", held.front()}, {"PodNamespace", "bench"}}.dump(), deletes, "\"Error\":\"\"");
        held.pop_front();
      }
    }
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  } catch (const std::exception& e) {
    out.failure = e.what();
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  std::printf("# bench_serve: profile %s, %u clients, %u server threads, up to %.1f s or %zu pairs per client\n",
              args.profile.c_str(), args.clients, args.server_threads, args.seconds, args.pairs);
  std::printf("%6s %8s %8s %8s %8s %12s %11s %11s %11s %11s %11s %11s %11s %10s %10s %10s\n", "mode", "nodes", "clients", "pairs",
              "seconds", "pairs_per_s", "filter_p50", "filter_p99", "filter_max", "prio_p50", "prio_p99", "bind_p50", "bind_p99",
              "srv_filter", "srv_prio", "srv_bind");
  int rc = 0;
  for (const auto& mode : args.modes) {
    for (const std::size_t n : args.nodes) {
      const auto dir = std::filesystem::temp_directory_path() / ("gpusched-bench-serve-" + std::to_string(::getpid()));
      std::filesystem::create_directories(dir);
      const auto nodes_path = dir / "nodes.json";
      {
        std::ofstream f(nodes_path);
        f << node_list(n).dump();
      }
      gpusched::scenario::ExtenderOptions opts;
      opts.profile = args.profile;
      opts.nodes = nodes_path;
      gpusched::scenario::Extender extender(opts);
      std::promise<std::uint16_t> listening;
      gpusched::scenario::ServeOptions serve;
      serve.port = 0;
      serve.threads = args.server_threads;
      serve.max_body_bytes = std::size_t{64} << 20;
      serve.on_listening = [&](std::uint16_t port) { listening.set_value(port); };
      std::thread server([&] { gpusched::scenario::serve_http(extender, serve); });
      const std::uint16_t port = listening.get_future().get();
      std::vector<std::string> names;
      for (std::size_t i = 0; i < n; ++i) names.push_back(node_name(i));

      const auto t0 = Clock::now();
      std::vector<std::future<Latencies>> futures;
      for (unsigned c = 0; c < args.clients; ++c) {
        futures.push_back(std::async(std::launch::async, client, port, c, std::cref(names), args.seconds, args.pairs, mode == "bind"));
      }
      Latencies all;
      for (auto& f : futures) {
        auto l = f.get();
        if (!l.failure.empty() && all.failure.empty()) all.failure = l.failure;
        all.pairs += l.pairs;
        all.conflicts += l.conflicts;
        all.filter.insert(all.filter.end(), l.filter.begin(), l.filter.end());
        all.prioritize.insert(all.prioritize.end(), l.prioritize.begin(), l.prioritize.end());
        all.bind.insert(all.bind.end(), l.bind.begin(), l.bind.end());
      }
      const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
      const auto metrics = extender.handle("GET", "/metrics", "").body;
      ::kill(::getpid(), SIGINT);   // serve_http stops on it
      server.join();
      std::filesystem::remove_all(dir);
      if (!all.failure.empty()) {
        std::fprintf(stderr, "bench_serve: %s, %zu nodes: %s\n", mode.c_str(), n, all.failure.c_str());
        rc = 1;
        continue;
      }
      const double fmax = all.filter.empty() ? 0.0 : *std::max_element(all.filter.begin(), all.filter.end());
      std::printf("%6s %8zu %8u %8zu %8.2f %12.0f %9.3fms %9.3fms %9.3fms %9.3fms %9.3fms %9.3fms %9.3fms %8.1fus %8.1fus %8.1fus\n",
                  mode.c_str(), n, args.clients, all.pairs, elapsed, static_cast<double>(all.pairs) / elapsed,
                  1e3 * percentile(all.filter, 0.50), 1e3 * percentile(all.filter, 0.99), 1e3 * fmax,
                  1e3 * percentile(all.prioritize, 0.50), 1e3 * percentile(all.prioritize, 0.99), 1e3 * percentile(all.bind, 0.50),
                  1e3 * percentile(all.bind, 0.99), 1e6 * server_mean(metrics, "filter"), 1e6 * server_mean(metrics, "prioritize"),
                  1e6 * server_mean(metrics, "bind"));
      if (all.conflicts > 0) std::printf("#   %zu binds refused: another client took the node's room first\n", all.conflicts);
      std::fflush(stdout);
    }
  }
  return rc;
}
