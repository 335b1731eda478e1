#ifndef BERTH_TEST_TESTING_TEST_EXTENDER_H_
#define BERTH_TEST_TESTING_TEST_EXTENDER_H_

// A scheduler extender for tests, speaking kube-scheduler's extender/v1 protocol over plain
// HTTP/1.1 on 127.0.0.1 (a port the kernel picks), so that kube-scheduler and berth-scheduler can
// be pointed at it with the same `extenders:` stanza. What it answers is decided by the labels of
// the nodes it is asked about, so one server plays every role:
//
//   filter      a node labelled kExtenderFilterLabel=reject goes to FailedNodes with
//               kExtenderRejectReason, =unresolvable to FailedAndUnresolvableNodes with
//               kExtenderUnresolvableReason, =drop is left out of every list; the others pass.
//   prioritize  each node scores its kExtenderScoreLabel (0-10), 0 without one.
//   preempt     echoes the victims it is sent, as MetaVictims (UIDs), dropping the nodes labelled
//               kExtenderPreemptLabel=reject.
//   bind        POSTs the pod's binding to the apiserver itself, unless the node is labelled
//               kExtenderBindLabel=error, when it answers kExtenderBindError.
//
// The verb is the last segment of the request's path, so any urlPrefix works. Requests come in
// either form a scheduler sends (NodeNames when nodeCacheCapable, Nodes.items otherwise, and
// NodeNameToMetaVictims or NodeNameToVictims); the filter answers in the form it was asked in.
// Some answers spell their fields in other cases ("nodenames", "failedNodes", "host", "score"),
// as real extenders do: kube-scheduler reads JSON field names without regard to case.
//
// A fault set for a verb replaces its answer: HTTP 500, the connection closed without an answer,
// or the answer held back for a while (beyond the scheduler's httpTimeout).
//
// Every request is recorded before it is answered. Thread-safe; several instances may run in one
// process. Stopped when the object goes away.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "pkg/client/client.h"

namespace berth::testing {

inline constexpr const char* kExtenderFilterLabel = "ext.berth.test/filter";
inline constexpr const char* kExtenderScoreLabel = "ext.berth.test/score";
inline constexpr const char* kExtenderPreemptLabel = "ext.berth.test/preempt";
inline constexpr const char* kExtenderBindLabel = "ext.berth.test/bind";
inline constexpr const char* kExtenderRejectReason = "extender rejects node";
inline constexpr const char* kExtenderUnresolvableReason = "extender says node is unresolvable";
inline constexpr const char* kExtenderBindError = "extender refuses to bind";

enum class ExtenderFault {
  kNone,
  kStatus500,  // HTTP 500 with a plain-text body.
  kClose,      // The request is read, then the connection closed (FIN) without an answer.
  kSlow,       // The usual answer, after SetFault's delay.
};

// One request as the extender received it.
struct ExtenderCall {
  std::string verb;  // "filter", "prioritize", "preempt", "bind" (the path's last segment).
  std::string pod;   // "<namespace>/<name>".
  // filter, prioritize: the candidate nodes in the order sent; preempt: the nodes of the victims
  // map, sorted; bind: the target node.
  std::vector<std::string> nodes;
  // filter, prioritize: sent as NodeNames (nodeCacheCapable), not Nodes.items; preempt: sent as
  // NodeNameToMetaVictims, not NodeNameToVictims.
  bool names_only = false;
  // preempt: the victims' UIDs per node as sent.
  std::map<std::string, std::vector<std::string>> victims;
};

class TestExtender {
 public:
  // `client` reads the labels of nodes sent by name only, and posts the bindings.
  explicit TestExtender(std::shared_ptr<client::Client> client);
  ~TestExtender();
  TestExtender(const TestExtender&) = delete;
  TestExtender& operator=(const TestExtender&) = delete;

  uint16_t port() const { return port_; }
  // "http://127.0.0.1:<port>".
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // `verb` empty: every verb. `delay` is kSlow's.
  void SetFault(const std::string& verb, ExtenderFault fault,
                std::chrono::milliseconds delay = std::chrono::seconds(3));

  std::vector<ExtenderCall> Calls() const;
  // The bindings this extender posted and the apiserver accepted.
  int binds() const;

 private:
  class Server;
  struct Answer {
    int status = 200;
    std::string body;
    ExtenderFault fault = ExtenderFault::kNone;
    std::chrono::milliseconds delay{0};
  };

  // Records the request and computes its answer; called on the server's threads.
  Answer Handle(const std::string& target, const std::string& body);
  std::string Filter(const nlohmann::json& args, ExtenderCall& call);
  std::string Prioritize(const nlohmann::json& args, ExtenderCall& call);
  std::string Preempt(const nlohmann::json& args, ExtenderCall& call);
  std::string Bind(const nlohmann::json& args, ExtenderCall& call);
  // The labels of the nodes in `args` (Nodes.items), else read from the apiserver by name.
  std::map<std::string, std::string> Labels(const std::string& node,
                                            const nlohmann::json* from_request);

  std::shared_ptr<client::Client> client_;
  uint16_t port_ = 0;

  mutable std::mutex mu_;  // Guards the members below.
  std::vector<ExtenderCall> calls_;
  std::map<std::string, std::pair<ExtenderFault, std::chrono::milliseconds>> faults_;
  int binds_ = 0;

  // Declared last: destroyed (its threads joined) before the state its handlers use.
  std::unique_ptr<Server> server_;
};

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_TEST_EXTENDER_H_
