// `gpusched serve`'s HTTP layer (see gpusched/scenario/serve.hpp).
#include <gpusched/scenario/serve.hpp>

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <gpusched/error.hpp>

namespace gpusched::scenario {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct Shared {
  Extender& extender;
  const ServeOptions& options;
  std::atomic<std::size_t> open{0};
};

/// One connection: read a request, answer it, again while the client keeps it alive. Every
/// handler of a session runs on the session's strand (the socket's executor).
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Shared& shared) : socket_(std::move(socket)), timer_(socket_.get_executor()), shared_(shared) {
    ++shared_.open;
  }
  ~Session() { --shared_.open; }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  [[nodiscard]] tcp::socket::executor_type executor() { return socket_.get_executor(); }
  void start() { read(); }
  /// Too many connections: answer 503 without reading and close.
  void refuse_busy() { reply_error(http::status::service_unavailable, "too many open connections; try again", 11); }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(shared_.options.max_body_bytes);
    timed_out_ = false;
    timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(shared_.options.read_timeout_s)));
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec) return;   // cancelled: the request arrived
      self->timed_out_ = true;
      beast::error_code ignored;
      self->socket_.cancel(ignored);
    });
    http::async_read(socket_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    timer_.cancel();
    if (timed_out_) {
      // A client that started a request and did not finish it in time hears why; an idle
      // kept-alive connection is just closed.
      if (parser_->got_some() || buffer_.size() > 0) return reply_error(http::status::request_timeout, "request not received in time", 11);
      return close();
    }
    if (ec == http::error::end_of_stream || ec == asio::error::connection_reset || ec == asio::error::operation_aborted) return close();
    if (ec == http::error::body_limit) {
      return reply_error(http::status::payload_too_large,
                         "request body over " + std::to_string(shared_.options.max_body_bytes) + " bytes (--max-body-bytes)", 11);
    }
    if (ec) return reply_error(http::status::bad_request, "malformed HTTP request: " + ec.message(), 11);
    const auto& req = parser_->get();
    auto r = shared_.extender.handle(std::string_view(req.method_string().data(), req.method_string().size()),
                                           std::string_view(req.target().data(), req.target().size()), req.body());
    response_.emplace(static_cast<http::status>(r.status), req.version());
    response_->set(http::field::server, "gpusched");
    response_->set(http::field::content_type, r.content_type);
    response_->keep_alive(req.keep_alive());
    response_->body() = std::move(r.body);
    response_->prepare_payload();
    write(req.keep_alive());
  }

  void reply_error(http::status status, const std::string& message, unsigned version) {
    shared_.extender.record("http", static_cast<int>(status), 0.0);
    response_.emplace(status, version);
    response_->set(http::field::server, "gpusched");
    response_->set(http::field::content_type, "application/json");
    response_->keep_alive(false);
    response_->body() = nlohmann::json{{"Error", message}}.dump();
    response_->prepare_payload();
    write(false);
  }

  void write(bool keep_alive) {
    http::async_write(socket_, *response_, [self = shared_from_this(), keep_alive](beast::error_code ec, std::size_t) {
      if (ec || !keep_alive) return self->close();
      self->read();
    });
  }

  void close() {
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    socket_.close(ignored);
  }

  tcp::socket socket_;
  asio::steady_timer timer_;
  Shared& shared_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> response_;
  bool timed_out_ = false;
};

void accept(tcp::acceptor& acceptor, asio::io_context& ioc, Shared& shared) {
  acceptor.async_accept(asio::make_strand(ioc), [&acceptor, &ioc, &shared](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;   // shutting down
    if (!ec) {
      auto session = std::make_shared<Session>(std::move(socket), shared);
      const bool busy = shared.open > shared.options.max_connections;
      asio::dispatch(session->executor(), [session, busy] {
        if (busy) session->refuse_busy();
        else session->start();
      });
    }
    accept(acceptor, ioc, shared);
  });
}

}  // namespace

namespace {

/// Percent-encodes what is not unreserved (RFC 3986) in one path segment.
std::string path_segment(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace

Binder api_binder(const std::string& base_url, double timeout_s, const std::string& field) {
  const auto bad = [&](const std::string& why) -> void {
    throw_error(ErrorCode::kScenarioBadValue, {"command line", 0, field}, why + " (got \"" + base_url + "\")");
  };
  constexpr std::string_view kScheme = "http://";
  if (base_url.rfind("https://", 0) == 0) {
    bad("https is not spoken here: run `kubectl proxy` and give its http://127.0.0.1:8001");
  }
  if (base_url.rfind(kScheme, 0) != 0) bad("expected http://HOST:PORT[/PATH], e.g. http://127.0.0.1:8001 (kubectl proxy)");
  const std::string rest = base_url.substr(kScheme.size());
  const auto slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  std::string prefix = slash == std::string::npos ? "" : rest.substr(slash);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  std::string host = authority, port = "80";
  if (!authority.empty() && authority.front() == '[') {   // an IPv6 literal: [addr] or [addr]:port
    const auto close = authority.find(']');
    if (close == std::string::npos) bad("an IPv6 address is written [ADDRESS]:PORT");
    host = authority.substr(1, close - 1);
    const std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') bad("an IPv6 address is written [ADDRESS]:PORT");
      port = after.substr(1);
    }
  } else if (const auto colon = authority.rfind(':'); colon != std::string::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) bad("no host");
  if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }) ||
      std::stoul(port) == 0 || std::stoul(port) > 65535) {
    bad("the port must be 1..65535");
  }
  if (!(timeout_s > 0) || timeout_s > 3600) {
    throw_error(ErrorCode::kScenarioBadValue, {"command line", 0, "--bind-timeout"}, "must be more than 0 and at most 3600 seconds");
  }
  const auto timeout = std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout_s));
  // Resolved once, here: a name that does not resolve is refused at start, and no binding waits
  // on the resolver (which no deadline covers).
  asio::io_context resolving;
  tcp::resolver resolver(resolving);
  beast::error_code resolve_error;
  const auto endpoints = resolver.resolve(host, port, resolve_error);
  if (resolve_error) bad("cannot resolve " + host + ": " + resolve_error.message());
  const std::string host_header = authority;
  return [endpoints, host_header, prefix, timeout, timeout_s, base_url](const BindingRequest& b) -> std::string {
    // DefaultBinder's object (defaultbinder/default_binder.go Bind): metadata {namespace, name,
    // uid}, target {kind: Node, name}; annotations too, which the API server's binding REST
    // (pkg/registry/core/pod/storage/storage.go, setPodNodeAndMetadata) copies onto the pod.
    nlohmann::json meta = {{"name", b.pod_name}, {"namespace", b.pod_namespace}};
    if (!b.pod_uid.empty()) meta["uid"] = b.pod_uid;
    if (!b.annotations.empty()) {
      nlohmann::json a = nlohmann::json::object();
      for (const auto& [k, v] : b.annotations) a[k] = v;
      meta["annotations"] = std::move(a);
    }
    const nlohmann::json binding = {{"apiVersion", "v1"},
                                    {"kind", "Binding"},
                                    {"metadata", std::move(meta)},
                                    {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", b.node}}}};
    http::request<http::string_body> req{http::verb::post,
                                         prefix + "/api/v1/namespaces/" + path_segment(b.pod_namespace) + "/pods/" +
                                             path_segment(b.pod_name) + "/binding",
                                         11};
    req.set(http::field::host, host_header);
    req.set(http::field::user_agent, "gpusched-extender");
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "application/json");
    req.body() = binding.dump();
    req.prepare_payload();
    // Asynchronous steps on a private io_context: Beast's deadline (expires_after) covers
    // asynchronous operations only, and it covers connect, send and answer together.
    asio::io_context ioc;
    beast::tcp_stream stream(ioc);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::size_t{1} << 20);
    beast::error_code failed;
    std::string_view step = "connect";
    stream.expires_after(timeout);
    stream.async_connect(endpoints, [&](beast::error_code ec, const tcp::endpoint&) {
      if (ec) {
        failed = ec;
        return;
      }
      step = "send the binding";
      http::async_write(stream, req, [&](beast::error_code ec2, std::size_t) {
        if (ec2) {
          failed = ec2;
          return;
        }
        step = "answer";
        http::async_read(stream, buffer, parser, [&](beast::error_code ec3, std::size_t) { failed = ec3; });
      });
    });
    ioc.run();
    if (failed) {
      std::ostringstream why;
      why << "API server " << base_url << ": ";
      if (failed == beast::error::timeout) why << "no " << step << " within " << timeout_s << " s";
      else why << step << ": " << failed.message();
      return why.str();
    }
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    const auto& res = parser.get();
    const unsigned code = res.result_int();
    if (code >= 200 && code < 300) return {};
    // A refusal is a metav1.Status {"kind": "Status", "message", "reason", "code"}.
    std::string message;
    const auto status = nlohmann::json::parse(res.body(), nullptr, false);
    if (status.is_object() && status.contains("message") && status["message"].is_string()) message = status["message"].get<std::string>();
    if (message.empty()) message = res.body().substr(0, 200);
    return "API server answered " + std::to_string(code) + (message.empty() ? "" : ": " + message);
  };
}

int serve_http(Extender& extender, const ServeOptions& options) {
  asio::io_context ioc(static_cast<int>(std::max(1U, options.threads)));
  const tcp::endpoint endpoint(asio::ip::make_address(options.address), options.port);
  tcp::acceptor acceptor(ioc);
  acceptor.open(endpoint.protocol());
  acceptor.set_option(asio::socket_base::reuse_address(true));
  acceptor.bind(endpoint);
  acceptor.listen(asio::socket_base::max_listen_connections);
  Shared shared{extender, options};
  accept(acceptor, ioc, shared);
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](beast::error_code, int) {
    beast::error_code ignored;
    acceptor.close(ignored);
    ioc.stop();
  });
  // Python's `gpusched` blocks SIGINT and SIGTERM while the command line runs, for the command
  // to unblock once its handlers are in place (as `run` does): the signal set's are now. The
  // threads started below inherit the mask; the caller's is put back on return.
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  const bool restore = pthread_sigmask(SIG_UNBLOCK, &set, &old) == 0;
  if (options.on_listening) options.on_listening(acceptor.local_endpoint().port());
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < std::max(1U, options.threads); ++i) pool.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& t : pool) t.join();
  if (restore) pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return 0;
}

}  // namespace gpusched::scenario
