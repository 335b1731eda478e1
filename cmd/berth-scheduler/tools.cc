#include "cmd/berth-scheduler/tools.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cmd/berth-scheduler/debug_client.h"
#include "cmd/berth-scheduler/options.h"
#include "pkg/api/codec.h"
#include "pkg/config/load.h"
#include "pkg/explain/record.h"
#include "pkg/log/log.h"
#include "pkg/plugins/registry/registry.h"
#include "pkg/scheduler/debug_endpoints.h"
#include "pkg/scheduler/scheduler.h"

namespace berth::cmd {
namespace {

constexpr const char* kDefaultServer = "https://127.0.0.1:10259";

void ToolUsage(std::FILE* out) {
  std::fprintf(
      out,
      "usage:\n"
      "  berth-scheduler explain NAMESPACE/NAME [--server URL]\n"
      "      why the pod is Pending, and what would make it fit\n"
      "  berth-scheduler simulate -f POD.yaml [--server URL]\n"
      "      a dry run of the pod on the scheduler's cluster: where it would go, or why not\n"
      "  berth-scheduler simulate --cluster DUMP.json -f PODS.yaml [--config FILE]\n"
      "      offline, no apiserver: PODS scheduled one after another onto the nodes and pods of\n"
      "      DUMP (kubectl get nodes,pods -A -o json), with the profiles of FILE\n"
      "flags:\n"
      "  --server URL                  the scheduler's secure port (default %s)\n"
      "  --token-file FILE             a bearer token whose user may get /debug/pods/* and post\n"
      "                                /debug/simulate (kubectl create token SERVICEACCOUNT)\n"
      "  --token TOKEN                 the same, on the command line (visible to ps)\n"
      "  --certificate-authority FILE  verify an https server with this CA (PEM)\n"
      "  --insecure-skip-tls-verify    do not verify an https server's certificate\n"
      "  -o, --output text|json        text (default) or the endpoint's JSON\n",
      kDefaultServer);
}

struct ToolFlags {
  std::string command;
  std::vector<std::string> args;
  std::string server = kDefaultServer;
  std::string file;
  std::string cluster;
  std::string config;
  std::string ca_file;
  bool insecure = false;
  std::string token;
  std::string token_file;
  std::string output = "text";
};

ToolFlags Parse(int argc, char** argv) {
  ToolFlags flags;
  flags.command = argv[1];
  ArgReader reader(argc, argv, 2);
  while (reader.Next()) {
    const std::string& arg = reader.arg();
    auto take = [&reader] { return reader.Value(); };
    if (arg == "--server") {
      flags.server = take();
    } else if (arg == "-f" || arg == "--filename") {
      flags.file = take();
    } else if (arg == "--cluster") {
      flags.cluster = take();
    } else if (arg == "--config") {
      flags.config = take();
    } else if (arg == "--certificate-authority") {
      flags.ca_file = take();
    } else if (arg == "--token") {
      flags.token = take();
    } else if (arg == "--token-file") {
      flags.token_file = take();
    } else if (arg == "--insecure-skip-tls-verify") {
      flags.insecure = true;
    } else if (arg == "-o" || arg == "--output") {
      flags.output = take();
      if (flags.output != "text" && flags.output != "json") {
        throw UsageError("flag " + arg + ": expected text or json, got \"" + flags.output + "\"");
      }
    } else if (arg == "-h" || arg == "--help") {
      ToolUsage(stdout);
      std::exit(0);
    } else if (arg.size() > 1 && arg[0] == '-') {
      throw UsageError("unknown flag " + arg);
    } else {
      flags.args.push_back(arg);
    }
  }
  return flags;
}

std::string ReadFile(const std::string& flag, const std::string& path) {
  std::ifstream in;
  std::istream* stream = &std::cin;
  if (path != "-") {
    in.open(path, std::ios::binary);
    if (!in) throw std::runtime_error(flag + ": cannot read \"" + path + "\"");
    stream = &in;
  }
  return std::string(std::istreambuf_iterator<char>(*stream), std::istreambuf_iterator<char>());
}

int Print(const ToolFlags& flags, const DebugResponse& r) {
  if (r.status == 200) {
    std::fputs(r.body.c_str(), stdout);
    return 0;
  }
  std::string message = r.body;
  // The debug endpoints' JSON errors carry "error"; the secure port's 401 and 403 are Status
  // objects with "message".
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object()) {
    for (const char* key : {"error", "message"}) {
      if (j.contains(key) && j[key].is_string()) {
        message = j[key];
        break;
      }
    }
  }
  if (r.status == 404 && message.rfind("404 page not found", 0) == 0) {
    message = "the scheduler at " + flags.server +
              " serves no /debug/ endpoints: it runs with --enable-debug-endpoints=false";
  } else if (r.status == 401) {
    message = "the scheduler at " + flags.server + " did not accept the token" +
              (flags.token.empty() && flags.token_file.empty()
                   ? std::string(" (none given: --token-file FILE)")
                   : std::string(""));
  }
  while (!message.empty() && message.back() == '\n') message.pop_back();
  std::fprintf(stderr, "berth-scheduler %s: %s (HTTP %d)\n", flags.command.c_str(), message.c_str(),
               r.status);
  return 1;
}

DebugServer Server(const ToolFlags& flags) {
  if (!flags.ca_file.empty()) ReadFile("--certificate-authority", flags.ca_file);
  if (!flags.token.empty() && !flags.token_file.empty()) {
    throw UsageError("give --token or --token-file, not both");
  }
  std::string token = flags.token;
  if (!flags.token_file.empty()) {
    token = ReadFile("--token-file", flags.token_file);
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
    if (token.empty())
      throw std::runtime_error("--token-file: \"" + flags.token_file + "\" is empty");
  }
  return {flags.server, flags.ca_file, flags.insecure, token};
}

std::string FormatQuery(const ToolFlags& flags) {
  return flags.output == "text" ? "?format=text" : "";
}

int Explain(const ToolFlags& flags) {
  if (flags.args.size() != 1) throw UsageError("explain takes one NAMESPACE/NAME");
  const std::string& key = flags.args[0];
  const size_t slash = key.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == key.size() ||
      key.find('/', slash + 1) != std::string::npos) {
    throw UsageError("expected NAMESPACE/NAME, got \"" + key + "\"");
  }
  const std::string path = "/debug/pods/" + EncodePathSegment(key.substr(0, slash)) + "/" +
                           EncodePathSegment(key.substr(slash + 1)) + FormatQuery(flags);
  return Print(flags, DebugCall(Server(flags), "GET", path));
}

// An offline run reports to nobody.
class NoRecorder : public framework::EventRecorder {
 public:
  void Eventf(const api::Pod&, const std::string&, const std::string&, const std::string&,
              const std::string&) override {}
  void Eventf(const api::ObjectReference&, const std::string&, const std::string&,
              const std::string&, const std::string&) override {}
};

int SimulateOffline(const ToolFlags& flags) {
  const auto registry = plugins::registry::Registry();
  std::set<std::string> known;
  for (const auto& [name, factory] : registry) known.insert(name);
  config::Configuration cfg =
      flags.config.empty() ? config::DefaultConfiguration()
                           : config::LoadFile(flags.config, known, plugins::registry::ValidateArgs);
  nlohmann::json dump;
  try {
    dump = nlohmann::json::parse(ReadFile("--cluster", flags.cluster));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("--cluster " + flags.cluster + ": invalid JSON: " + e.what());
  }
  std::vector<nlohmann::json> items;
  if (dump.is_object() && dump.contains("items") && dump["items"].is_array()) {
    items = dump["items"].get<std::vector<nlohmann::json>>();
  } else {
    items.push_back(dump);
  }
  NoRecorder recorder;
  scheduler::SchedulerDeps deps;
  deps.recorder = &recorder;
  scheduler::Scheduler sched(cfg, registry, deps);
  int nodes = 0;
  int pods = 0;
  for (size_t i = 0; i < items.size(); i++) {
    std::string kind = items[i].is_object() ? items[i].value("kind", "") : "";
    // Items of a NodeList or PodList as the apiserver serves them carry no kind of their own.
    if (kind.empty() && items[i].is_object()) {
      const auto spec = items[i].find("spec");
      if (spec != items[i].end() && spec->is_object() && spec->contains("containers")) {
        kind = "Pod";
      } else if (items[i].contains("status") && items[i]["status"].is_object() &&
                 items[i]["status"].contains("allocatable")) {
        kind = "Node";
      }
    }
    const std::string where = "--cluster " + flags.cluster + ": items[" + std::to_string(i) + "]";
    try {
      if (kind == "Node") {
        sched.OnNodeAdd(std::make_shared<const api::Node>(api::DecodeNode(items[i])));
        nodes++;
      } else if (kind == "Pod") {
        // The cache keys pods by uid; a hand-made dump may have none.
        if (auto meta = items[i].find("metadata");
            meta != items[i].end() && meta->is_object() && !meta->contains("uid")) {
          (*meta)["uid"] = "dump-" + std::to_string(i);
        }
        auto pod = std::make_shared<const api::Pod>(api::DecodePod(items[i]));
        // As the scheduler's informer: finished pods hold nothing.
        if (pod->spec.node_name.empty() || pod->status.phase == "Succeeded" ||
            pod->status.phase == "Failed") {
          continue;
        }
        sched.OnPodAdd(pod);
        pods++;
      }
    } catch (const std::exception& e) {
      throw std::runtime_error(where + ": " + e.what());
    }
  }
  if (nodes == 0) {
    throw std::runtime_error("--cluster " + flags.cluster +
                             ": no Node in it; expected the output of kubectl get nodes,pods -A "
                             "-o json");
  }
  std::vector<api::Pod> todo =
      scheduler::PodsFromText(ReadFile("-f", flags.file), flags.file, sched.FirstProfile());
  std::printf("Cluster %s: %d nodes, %d assigned pods; scheduling %zu pods in file order\n\n",
              flags.cluster.c_str(), nodes, pods, todo.size());
  std::vector<std::string> summary;
  nlohmann::json results = nlohmann::json::array();
  for (const api::Pod& pod : todo) {
    explain::Explanation e = sched.dry_runs().Simulate(pod);
    if (flags.output == "json") {
      results.push_back(explain::ToJson(e));
    } else {
      std::printf("%s\n", explain::ToText(e).c_str());
    }
    if (e.attempt->outcome == explain::Outcome::kBound) {
      auto placed = std::make_shared<api::Pod>(pod);
      placed->spec.node_name = e.attempt->node;
      sched.OnPodAdd(placed);
      summary.push_back(pod.Key() + " -> " + e.attempt->node);
    } else {
      summary.push_back(pod.Key() + " would stay Pending: " + e.attempt->message);
    }
  }
  if (flags.output == "json") {
    std::printf("%s\n", nlohmann::json{{"items", results}}.dump(2).c_str());
    return 0;
  }
  std::printf("Summary:\n");
  for (const auto& line : summary) std::printf("  %s\n", line.c_str());
  return 0;
}

int Simulate(const ToolFlags& flags) {
  if (!flags.args.empty()) throw UsageError("simulate takes no arguments; give the pod with -f");
  if (flags.file.empty()) throw UsageError("simulate needs -f FILE (a Pod in YAML or JSON)");
  if (!flags.cluster.empty()) return SimulateOffline(flags);
  if (!flags.config.empty()) throw UsageError("--config is for the offline --cluster mode");
  const std::string body = ReadFile("-f", flags.file);
  const size_t first = body.find_first_not_of(" \t\r\n");
  const bool json = first != std::string::npos && body[first] == '{';
  return Print(flags, DebugCall(Server(flags), "POST", "/debug/simulate" + FormatQuery(flags), body,
                                json ? "application/json" : "application/yaml"));
}

}  // namespace

bool IsTool(int argc, char** argv) {
  if (argc < 2) return false;
  const std::string command = argv[1];
  return command == "explain" || command == "simulate";
}

int RunTool(int argc, char** argv) {
  // Plugins and the scheduler log only what goes wrong; the answer goes to stdout.
  log::Setup(log::Format::kText, 0);
  try {
    const ToolFlags flags = Parse(argc, argv);
    return flags.command == "explain" ? Explain(flags) : Simulate(flags);
  } catch (const UsageError& e) {
    ToolUsage(stderr);
    std::fprintf(stderr, "berth-scheduler %s: %s\n", argv[1], e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "berth-scheduler %s: %s\n", argv[1], e.what());
    return 1;
  }
}

}  // namespace berth::cmd
