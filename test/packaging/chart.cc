#include "test/packaging/chart.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "pkg/client/client.h"
#include "test/testing/cluster.h"

namespace berth::packaging {
namespace {

// Drains both pipes together so a child that fills one while we block on the other cannot
// deadlock.
void Drain(int out_fd, int err_fd, std::string& out, std::string& err) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&out, &err};
  int open = 2;
  char buffer[65536];
  while (open > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
}

nlohmann::json Scalar(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (node.Tag() != "?") return text;  // Quoted or block scalar.
  static const std::regex kInt(R"([-+]?[0-9]+)");
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (text == "null" || text == "Null" || text == "NULL" || text == "~" || text.empty()) {
    return nullptr;
  }
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  if (std::regex_match(text, kInt)) {
    int64_t value = 0;
    const char* begin = text.data() + (text[0] == '+' ? 1 : 0);
    auto [ptr, ec] = std::from_chars(begin, text.data() + text.size(), value);
    if (ec == std::errc() && ptr == text.data() + text.size()) return value;
  }
  if (std::regex_match(text, kFloat)) return std::stod(text);
  return text;
}

nlohmann::json ToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Scalar:
      return Scalar(node);
    case YAML::NodeType::Sequence: {
      nlohmann::json array = nlohmann::json::array();
      for (const YAML::Node& item : node) array.push_back(ToJson(item));
      return array;
    }
    case YAML::NodeType::Map: {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& entry : node) object[entry.first.Scalar()] = ToJson(entry.second);
      return object;
    }
  }
  return nullptr;
}

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  std::string root = testing::RepoRoot();
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    if (chdir(root.c_str()) != 0) _exit(126);
    execvp(args[0], args.data());
    dprintf(STDERR_FILENO, "exec %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  CommandResult result;
  Drain(out_pipe[0], err_pipe[0], result.out, result.err);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
  return result;
}

std::string ToolPath(const std::string& name) {
  std::string path = testing::RepoRoot() + "/_output/tools/" + name;
  if (!std::filesystem::exists(path)) {
    throw std::runtime_error(path +
                             " is missing: run `deploy/build-tools.sh helm servicemonitor-crd` "
                             "(or `make chart-lint`) first");
  }
  return path;
}

std::string ChartDir() { return testing::RepoRoot() + "/charts/berth"; }

std::vector<std::string> CiValuesFiles() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(ChartDir() + "/ci")) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string HelmTemplate(const std::string& release, const std::string& ns,
                         const std::vector<std::string>& values_files,
                         const std::vector<std::string>& sets) {
  std::vector<std::string> argv = {ToolPath("helm"), "template",    release,
                                   ChartDir(),       "--namespace", ns};
  for (const std::string& file : values_files) {
    argv.push_back("--values");
    argv.push_back(file);
  }
  for (const std::string& set : sets) {
    argv.push_back("--set");
    argv.push_back(set);
  }
  CommandResult result = RunCommand(argv);
  if (result.exit_code != 0) {
    throw std::runtime_error("helm template failed (exit " + std::to_string(result.exit_code) +
                             "): " + result.err);
  }
  return result.out;
}

std::vector<nlohmann::json> ParseYamlDocuments(const std::string& text) {
  std::vector<nlohmann::json> objects;
  for (const YAML::Node& document : YAML::LoadAll(text)) {
    nlohmann::json object = ToJson(document);
    if (!object.is_null()) objects.push_back(std::move(object));
  }
  return objects;
}

std::vector<nlohmann::json> OfKind(const std::vector<nlohmann::json>& objects,
                                   const std::string& kind, const std::string& name) {
  std::vector<nlohmann::json> matching;
  for (const nlohmann::json& object : objects) {
    if (object.value("kind", "") != kind) continue;
    if (!name.empty() && object["metadata"].value("name", "") != name) continue;
    matching.push_back(object);
  }
  return matching;
}

nlohmann::json OnlyOfKind(const std::vector<nlohmann::json>& objects, const std::string& kind) {
  std::vector<nlohmann::json> matching = OfKind(objects, kind);
  if (matching.size() != 1) {
    throw std::runtime_error("expected exactly one " + kind + ", rendered " +
                             std::to_string(matching.size()));
  }
  return matching.front();
}

void ApplyPodGroupCrd(client::Client& client) {
  constexpr char kCrds[] = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
  std::vector<nlohmann::json> docs =
      ParseYamlDocuments(ReadFile(ChartDir() + "/files/podgroups.scheduling.x-k8s.io.yaml"));
  if (docs.size() != 1) throw std::runtime_error("the PodGroup CRD file has no single document");
  nlohmann::json& crd = docs[0];
  try {
    client.Post(kCrds, crd);
    return;
  } catch (const client::ApiError& e) {
    if (e.reason() != client::ErrorReason::kAlreadyExists) throw;
  }
  const std::string item = std::string(kCrds) + "/" + crd["metadata"]["name"].get<std::string>();
  const nlohmann::json current = client.Get(item);
  // The server adds defaults (conversion: None) to what it stores; only the schema matters here.
  if (current["spec"]["versions"] == crd["spec"]["versions"]) return;
  crd["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"];
  client.Put(item, crd);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace berth::packaging
