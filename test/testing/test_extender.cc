#include "test/testing/test_extender.h"

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>
#include <stdexcept>
#include <thread>

namespace berth::testing {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using json = nlohmann::json;

// The listening socket and the connections, run by a few threads: one answer may take a while
// (a slow fault, a binding posted to the apiserver) while others are served.
class TestExtender::Server {
 public:
  explicit Server(TestExtender& owner) : owner_(owner), acceptor_(ioc_) {
    const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(endpoint.protocol());
    acceptor_.bind(endpoint);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    Accept();
    for (int i = 0; i < 4; i++) threads_.emplace_back([this] { ioc_.run(); });
  }

  ~Server() {
    ioc_.stop();
    for (auto& t : threads_) t.join();
  }

  uint16_t port() const { return port_; }

 private:
  // One connection: requests answered in turn while the client keeps it open.
  class Session : public std::enable_shared_from_this<Session> {
   public:
    Session(TestExtender& owner, tcp::socket socket)
        : owner_(owner), stream_(std::move(socket)), timer_(stream_.get_executor()) {}

    void Read() {
      // Nodes.items of a large cluster is well above Beast's default limit of 1 MiB.
      parser_.emplace();
      parser_->body_limit(64 * 1024 * 1024);
      http::async_read(stream_, buffer_, *parser_,
                       [self = shared_from_this()](beast::error_code ec, size_t) {
                         if (!ec) self->Answer();
                       });
    }

   private:
    void Answer() {
      request_ = parser_->release();
      TestExtender::Answer answer;
      try {
        answer = owner_.Handle(std::string(request_.target()), request_.body());
      } catch (const std::exception& e) {
        answer.status = 500;
        answer.body = std::string("test extender: ") + e.what();
      }
      switch (answer.fault) {
        case ExtenderFault::kClose: {
          beast::error_code ignored;
          stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
          stream_.socket().close(ignored);
          return;
        }
        case ExtenderFault::kStatus500:
          answer.status = 500;
          answer.body = "test extender: injected failure\n";
          break;
        case ExtenderFault::kSlow:
          timer_.expires_after(answer.delay);
          timer_.async_wait([self = shared_from_this(), answer](beast::error_code ec) {
            if (!ec) self->Write(answer);
          });
          return;
        case ExtenderFault::kNone:
          break;
      }
      Write(answer);
    }

    void Write(const TestExtender::Answer& answer) {
      response_ = {};
      response_.version(request_.version());
      response_.keep_alive(request_.keep_alive());
      response_.result(static_cast<http::status>(answer.status));
      response_.set(http::field::content_type,
                    answer.status == 200 ? "application/json" : "text/plain");
      response_.body() = answer.body;
      response_.prepare_payload();
      http::async_write(stream_, response_,
                        [self = shared_from_this()](beast::error_code ec, size_t) {
                          if (ec || !self->response_.keep_alive()) {
                            beast::error_code ignored;
                            self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                            return;
                          }
                          self->Read();
                        });
    }

    TestExtender& owner_;
    beast::tcp_stream stream_;
    net::steady_timer timer_;
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::string_body>> parser_;
    http::request<http::string_body> request_;
    http::response<http::string_body> response_;
  };

  void Accept() {
    acceptor_.async_accept(net::make_strand(ioc_), [this](beast::error_code ec, tcp::socket s) {
      if (!ec) std::make_shared<Session>(owner_, std::move(s))->Read();
      Accept();
    });
  }

  TestExtender& owner_;
  net::io_context ioc_;
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::vector<std::thread> threads_;
};

TestExtender::TestExtender(std::shared_ptr<client::Client> client) : client_(std::move(client)) {
  server_ = std::make_unique<Server>(*this);
  port_ = server_->port();
}

TestExtender::~TestExtender() = default;

void TestExtender::SetFault(const std::string& verb, ExtenderFault fault,
                            std::chrono::milliseconds delay) {
  std::lock_guard lock(mu_);
  faults_[verb] = {fault, delay};
}

std::vector<ExtenderCall> TestExtender::Calls() const {
  std::lock_guard lock(mu_);
  return calls_;
}

int TestExtender::binds() const {
  std::lock_guard lock(mu_);
  return binds_;
}

TestExtender::Answer TestExtender::Handle(const std::string& target, const std::string& body) {
  ExtenderCall call;
  call.verb = target.substr(target.find_last_of('/') + 1);
  const json args = json::parse(body);
  Answer answer;
  {
    std::lock_guard lock(mu_);
    auto fault = faults_.find(call.verb);
    if (fault == faults_.end()) fault = faults_.find("");
    if (fault != faults_.end()) std::tie(answer.fault, answer.delay) = fault->second;
  }
  if (call.verb == "filter") {
    answer.body = Filter(args, call);
  } else if (call.verb == "prioritize") {
    answer.body = Prioritize(args, call);
  } else if (call.verb == "preempt") {
    answer.body = Preempt(args, call);
  } else if (call.verb == "bind") {
    // A bind that fails by fault must not have bound the pod.
    if (answer.fault != ExtenderFault::kNone) {
      call.pod = args.value("PodNamespace", "") + "/" + args.value("PodName", "");
      call.nodes = {args.value("Node", "")};
    } else {
      answer.body = Bind(args, call);
    }
  } else {
    answer.status = 404;
    answer.body = "test extender: no verb " + call.verb + "\n";
  }
  std::lock_guard lock(mu_);
  calls_.push_back(std::move(call));
  return answer;
}

namespace {

std::string PodKey(const json& pod) {
  return pod["metadata"].value("namespace", "") + "/" + pod["metadata"].value("name", "");
}

std::map<std::string, std::string> LabelsOf(const json& node) {
  std::map<std::string, std::string> out;
  if (node["metadata"].contains("labels")) {
    for (const auto& [k, v] : node["metadata"]["labels"].items()) out[k] = v.get<std::string>();
  }
  return out;
}

std::string Label(const std::map<std::string, std::string>& labels, const std::string& key) {
  auto it = labels.find(key);
  return it == labels.end() ? "" : it->second;
}

}  // namespace

std::map<std::string, std::string> TestExtender::Labels(const std::string& node,
                                                        const json* from_request) {
  if (from_request != nullptr) return LabelsOf(*from_request);
  return LabelsOf(client_->Get("/api/v1/nodes/" + node));
}

std::string TestExtender::Filter(const json& args, ExtenderCall& call) {
  call.pod = PodKey(args["Pod"]);
  // (name, the node object when sent in full)
  std::vector<std::pair<std::string, const json*>> nodes;
  if (args.contains("NodeNames") && args["NodeNames"].is_array()) {
    call.names_only = true;
    for (const auto& n : args["NodeNames"]) nodes.emplace_back(n.get<std::string>(), nullptr);
  } else if (args.contains("Nodes") && args["Nodes"].is_object()) {
    for (const auto& n : args["Nodes"]["items"]) {
      nodes.emplace_back(n["metadata"]["name"].get<std::string>(), &n);
    }
  }
  json passed = json::array(), passed_nodes = json::array();
  json failed = json::object(), unresolvable = json::object();
  for (const auto& [name, object] : nodes) {
    call.nodes.push_back(name);
    const std::string verdict = Label(Labels(name, object), kExtenderFilterLabel);
    if (verdict == "reject") {
      failed[name] = kExtenderRejectReason;
    } else if (verdict == "unresolvable") {
      unresolvable[name] = kExtenderUnresolvableReason;
    } else if (verdict != "drop") {
      passed.push_back(name);
      if (object != nullptr) passed_nodes.push_back(*object);
    }
  }
  json result;
  if (call.names_only) {
    result["nodenames"] = passed;
  } else {
    result["Nodes"] = {{"items", passed_nodes}};
  }
  result["failedNodes"] = failed;
  result["FailedAndUnresolvableNodes"] = unresolvable;
  result["error"] = "";
  return result.dump();
}

std::string TestExtender::Prioritize(const json& args, ExtenderCall& call) {
  call.pod = PodKey(args["Pod"]);
  json result = json::array();
  auto score = [&](const std::string& name, const json* object) {
    call.nodes.push_back(name);
    const std::string value = Label(Labels(name, object), kExtenderScoreLabel);
    result.push_back({{"host", name}, {"score", value.empty() ? 0 : std::stoi(value)}});
  };
  if (args.contains("NodeNames") && args["NodeNames"].is_array()) {
    call.names_only = true;
    for (const auto& n : args["NodeNames"]) score(n.get<std::string>(), nullptr);
  } else if (args.contains("Nodes") && args["Nodes"].is_object()) {
    for (const auto& n : args["Nodes"]["items"]) score(n["metadata"]["name"], &n);
  }
  return result.dump();
}

std::string TestExtender::Preempt(const json& args, ExtenderCall& call) {
  call.pod = PodKey(args["Pod"]);
  const bool meta =
      args.contains("NodeNameToMetaVictims") && args["NodeNameToMetaVictims"].is_object();
  call.names_only = meta;
  const json& victims = meta ? args["NodeNameToMetaVictims"] : args["NodeNameToVictims"];
  json answer = json::object();
  if (victims.is_object()) {
    for (const auto& [node, v] : victims.items()) {
      call.nodes.push_back(node);
      json pods = json::array();
      for (const auto& p : v["Pods"]) {
        const std::string uid = meta ? p.value("UID", "") : p["metadata"].value("uid", "");
        call.victims[node].push_back(uid);
        pods.push_back({{"uid", uid}});
      }
      if (Label(Labels(node, nullptr), kExtenderPreemptLabel) == "reject") continue;
      answer[node] = {{"pods", pods}, {"numPDBViolations", v.value("NumPDBViolations", 0)}};
    }
  }
  std::sort(call.nodes.begin(), call.nodes.end());
  return json{{"nodeNameToMetaVictims", answer}}.dump();
}

std::string TestExtender::Bind(const json& args, ExtenderCall& call) {
  const std::string ns = args.value("PodNamespace", "");
  const std::string name = args.value("PodName", "");
  const std::string node = args.value("Node", "");
  call.pod = ns + "/" + name;
  call.nodes = {node};
  if (Label(Labels(node, nullptr), kExtenderBindLabel) == "error") {
    return json{{"Error", kExtenderBindError}}.dump();
  }
  const json binding = {
      {"apiVersion", "v1"},
      {"kind", "Binding"},
      {"metadata", {{"name", name}, {"namespace", ns}, {"uid", args.value("PodUID", "")}}},
      {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  try {
    client_->Post(client::PodsResource().Path(ns, name, "binding"), binding);
  } catch (const std::exception& e) {
    return json{{"error", e.what()}}.dump();
  }
  std::lock_guard lock(mu_);
  binds_++;
  return json{{"error", ""}}.dump();
}

}  // namespace berth::testing
