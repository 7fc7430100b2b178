#pragma once
/// `gpusched serve`: the scheduler extender (extender.hpp) behind an HTTP/1.1 server (Boost.Beast
/// on Boost.Asio). Connections are kept alive; requests on different connections are answered
/// in parallel by a few threads, decisions one at a time (Extender serialises them).
///
/// Bad requests never stop the server: a body over `max_body_bytes` is answered 413, a request
/// that does not arrive whole within `read_timeout_s` 408 (an idle kept-alive connection is just
/// closed), malformed HTTP 400, more than `max_connections` open connections 503; each with a
/// JSON body {"Error": message} and counted in /metrics.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include <gpusched/scenario/extender.hpp>

namespace gpusched::scenario {

struct ServeOptions {
  std::string address = "127.0.0.1";
  std::uint16_t port = 8888;              ///< 0: any free port (on_listening says which)
  std::size_t max_body_bytes = std::size_t{16} << 20;
  double read_timeout_s = 10.0;
  std::size_t max_connections = 256;
  unsigned threads = 4;
  /// Called once the socket listens, with the port it listens on.
  std::function<void(std::uint16_t)> on_listening;
};

/// A binder (ExtenderOptions::binder) that creates each Binding through the Kubernetes API server
/// at `base_url`, `http://HOST:PORT` with an optional path prefix (`kubectl proxy`'s
/// http://127.0.0.1:8001, which adds the credentials): POST
/// {base}/api/v1/namespaces/{namespace}/pods/{name}/binding with a v1 Binding, as kube-scheduler's
/// DefaultBinder does, carrying the device annotations (the API server copies a Binding's
/// annotations onto the pod). A 2xx answer accepts the binding; any other answer, or none within
/// `timeout_s` (connecting, sending and answering together), refuses it with the API server's
/// message. One connection per binding, each on its own io_context (the calling thread waits).
/// The host is resolved once, here. Throws gpusched::Error (kScenarioBadValue, field `field`)
/// for a URL it cannot use: https (put `kubectl proxy` in front), a missing host, a bad port, a
/// name that does not resolve; or (field --bind-timeout) a timeout not in (0, 3600] s.
Binder api_binder(const std::string& base_url, double timeout_s = 10.0, const std::string& field = "--bind-api");

/// Serves until SIGINT or SIGTERM; returns 0 then. Throws std::system_error when the address
/// cannot be bound.
int serve_http(Extender& extender, const ServeOptions& options);

}  // namespace gpusched::scenario
