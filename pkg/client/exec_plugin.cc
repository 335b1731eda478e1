#include "pkg/client/exec_plugin.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "pkg/client/http_client.h"
#include "pkg/util/base64.h"
#include "pkg/util/time.h"
#include "pkg/util/unique_fd.h"

extern char** environ;

namespace berth::client::internal {
namespace {

using Clock = std::chrono::steady_clock;

// posix_spawn_file_actions_t, destroyed on destruction.
class FileActions {
 public:
  FileActions() {
    if (posix_spawn_file_actions_init(&actions_) != 0) throw std::bad_alloc();
  }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

// posix_spawnattr_t, destroyed on destruction.
class SpawnAttributes {
 public:
  SpawnAttributes() {
    if (posix_spawnattr_init(&attributes_) != 0) throw std::bad_alloc();
  }
  ~SpawnAttributes() { posix_spawnattr_destroy(&attributes_); }
  SpawnAttributes(const SpawnAttributes&) = delete;
  SpawnAttributes& operator=(const SpawnAttributes&) = delete;
  posix_spawnattr_t* get() { return &attributes_; }

 private:
  posix_spawnattr_t attributes_;
};

// A spawned child that leads its own process group: the group is killed and the child reaped on
// destruction unless the child was reaped before.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  ~Child() {
    if (pid_ > 0) {
      Kill();
      while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  // Kills the child and whatever it started that stayed in its process group. Only while the child
  // is unreaped: its pid (and so its group's) cannot have been reused, and kill() with -1 or 1
  // would reach every process.
  void Kill() {
    if (pid_ <= 0) return;
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);  // In case it left the group.
  }
  // The wait status once the child exits, or nullopt when it has not by `deadline`. Polls: a
  // pidfd to wait on is not available on every kernel and seccomp profile a scheduler runs
  // under, and a plugin that closed its output is normally about to exit.
  std::optional<int> WaitUntil(Clock::time_point deadline) {
    auto pause = std::chrono::milliseconds(1);
    for (;;) {
      int status = 0;
      const pid_t reaped = waitpid(pid_, &status, WNOHANG);
      if (reaped == pid_) {
        pid_ = -1;
        return status;
      }
      if (reaped < 0 && errno != EINTR) {
        throw std::runtime_error(std::string("cannot wait for it: ") + std::strerror(errno));
      }
      const auto now = Clock::now();
      if (now >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
      pause = std::min(pause * 2, std::chrono::milliseconds(20));
    }
  }

 private:
  pid_t pid_;
};

// "60s", or "1500ms" when it is not whole seconds.
std::string DurationText(std::chrono::milliseconds duration) {
  if (duration.count() % 1000 == 0) return std::to_string(duration.count() / 1000) + "s";
  return std::to_string(duration.count()) + "ms";
}

// Berth's environment with `overrides` replacing (or adding) variables, "NAME=value" each.
std::vector<std::string> Environment(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry)
    env.emplace_back(*entry);
  for (const auto& [name, value] : overrides) {
    const std::string prefix = name + "=";
    std::erase_if(env,
                  [&](const std::string& e) { return e.compare(0, prefix.size(), prefix) == 0; });
    env.push_back(prefix + value);
  }
  return env;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace

std::string ExecInfo(const Config& config) {
  const ExecConfig& exec = *config.exec;
  nlohmann::json spec = {{"interactive", false}};
  if (exec.provide_cluster_info) {
    nlohmann::json cluster = {{"server", config.server}};
    if (!config.tls_server_name.empty()) cluster["tls-server-name"] = config.tls_server_name;
    if (config.insecure_skip_tls_verify) cluster["insecure-skip-tls-verify"] = true;
    if (!config.ca_pem.empty())
      cluster["certificate-authority-data"] = util::Base64Encode(config.ca_pem);
    if (!config.proxy_url.empty()) cluster["proxy-url"] = config.proxy_url;
    if (!exec.cluster_config_json.empty()) {
      cluster["config"] = nlohmann::json::parse(exec.cluster_config_json, nullptr, false);
    }
    spec["cluster"] = std::move(cluster);
  }
  return nlohmann::json{
      {"apiVersion", exec.api_version}, {"kind", "ExecCredential"}, {"spec", spec}}
      .dump();
}

ExecCredential ParseExecCredential(std::string_view output, const std::string& api_version) {
  const nlohmann::json parsed = nlohmann::json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) throw std::runtime_error("its output is not a JSON ExecCredential");
  const auto text = [](const nlohmann::json& object, const char* key) -> std::string {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return "";
    if (!it->is_string()) throw std::runtime_error(std::string(key) + " is not a string");
    return it->get<std::string>();
  };
  const std::string version = text(parsed, "apiVersion");
  if (version != api_version) {
    throw std::runtime_error("it is configured to use API version " + api_version +
                             ", but returned version \"" + version + "\"");
  }
  if (const std::string kind = text(parsed, "kind"); kind != "ExecCredential") {
    throw std::runtime_error("it returned kind \"" + kind + "\", not ExecCredential");
  }
  const auto status = parsed.find("status");
  if (status == parsed.end() || !status->is_object()) {
    throw std::runtime_error("it returned no status field");
  }
  ExecCredential credential;
  credential.token = text(*status, "token");
  credential.cert_pem = text(*status, "clientCertificateData");
  credential.key_pem = text(*status, "clientKeyData");
  if (credential.token.empty() && credential.cert_pem.empty() && credential.key_pem.empty()) {
    throw std::runtime_error("it returned neither a token nor a certificate/key pair");
  }
  if (credential.cert_pem.empty() != credential.key_pem.empty()) {
    throw std::runtime_error("it returned only a certificate or a key, not both");
  }
  if (const std::string expiry = text(*status, "expirationTimestamp"); !expiry.empty()) {
    credential.expiry = util::ParseRfc3339(expiry);
    if (!credential.expiry) {
      throw std::runtime_error("status.expirationTimestamp \"" + expiry + "\" is not RFC 3339");
    }
  }
  return credential;
}

ExecCredential RunExecPlugin(const Config& config, std::chrono::milliseconds timeout) {
  // The whole run counts, from the spawn to the exit: requests, lease renewals among them, wait
  // for it under the credential lock.
  const auto deadline = Clock::now() + timeout;
  const ExecConfig& exec = *config.exec;
  const auto fail = [&](const std::string& what) {
    return ApiError(ErrorReason::kUnauthorized, 0, exec.origin + ": " + what);
  };
  std::vector<std::string> args = {exec.command};
  args.insert(args.end(), exec.args.begin(), exec.args.end());
  std::vector<std::pair<std::string, std::string>> overrides = exec.env;
  overrides.emplace_back("KUBERNETES_EXEC_INFO", ExecInfo(config));
  std::vector<std::string> env = Environment(overrides);
  std::vector<char*> argv = Pointers(args);
  std::vector<char*> envp = Pointers(env);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    throw fail(std::string("cannot create a pipe for the plugin: ") + std::strerror(errno));
  }
  util::UniqueFd read_end(fds[0]);
  util::UniqueFd write_end(fds[1]);
  pid_t pid = 0;
  int rc = 0;
  {
    FileActions actions;
    // Non-interactive: no terminal input; the plugin's messages go to Berth's standard error.
    if (posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0) !=
            0 ||
        posix_spawn_file_actions_adddup2(actions.get(), write_end.get(), STDOUT_FILENO) != 0) {
      throw fail("cannot prepare the plugin's standard streams");
    }
    // The calling thread may block SIGTERM and SIGINT (a signal thread takes them) and the client
    // ignores SIGPIPE; the plugin starts as from a shell instead: nothing blocked, every signal's
    // default action. Its own process group lets the deadline kill what it started too.
    SpawnAttributes attributes;
    sigset_t none;
    sigemptyset(&none);
    sigset_t all;
    sigfillset(&all);
    if (posix_spawnattr_setsigmask(attributes.get(), &none) != 0 ||
        posix_spawnattr_setsigdefault(attributes.get(), &all) != 0 ||
        posix_spawnattr_setpgroup(attributes.get(), 0) != 0 ||
        posix_spawnattr_setflags(attributes.get(), POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                                       POSIX_SPAWN_SETPGROUP) != 0) {
      throw fail("cannot prepare the plugin's signal state");
    }
    // posix_spawnp searches Berth's PATH for a command without a '/', as Go's exec.Command does.
    rc = posix_spawnp(&pid, exec.command.c_str(), actions.get(), attributes.get(), argv.data(),
                      envp.data());
  }
  write_end.Reset();
  if (rc == ENOENT) {
    std::string message = "exec: executable " + exec.command + " not found";
    if (!exec.install_hint.empty()) message += "\n\n" + exec.install_hint;
    throw fail(message);
  }
  if (rc != 0) throw fail("exec: cannot run " + exec.command + ": " + std::strerror(rc));
  Child child(pid);
  // Kills the plugin's process group; the Child's destructor reaps it, as it kills and reaps on
  // every other way out before the exit.
  const auto too_late = [&] {
    child.Kill();
    return fail("exec: executable " + exec.command + " did not finish within " +
                DurationText(timeout) + ", so it was killed");
  };

  // Read to the end of its output, then wait for its exit, both before the deadline.
  std::string output;
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) throw too_late();
    pollfd p{read_end.get(), POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) {
      throw fail(std::string("exec: cannot read the output of ") + exec.command + ": " +
                 std::strerror(errno));
    }
    if (ready == 0) throw too_late();
    char buffer[16384];
    const ssize_t n = read(read_end.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buffer, static_cast<size_t>(n));
    if (output.size() > kMaxExecOutputBytes) {
      child.Kill();
      throw fail("exec: executable " + exec.command + " printed more than " +
                 std::to_string(kMaxExecOutputBytes >> 20) + " MiB");
    }
  }
  std::optional<int> exited;
  try {
    exited = child.WaitUntil(deadline);
  } catch (const std::runtime_error& e) {
    throw fail("exec: executable " + exec.command + ": " + e.what());
  }
  if (!exited) throw too_late();
  const int status = *exited;
  if (WIFSIGNALED(status)) {
    throw fail("exec: executable " + exec.command + " was killed by signal " +
               std::to_string(WTERMSIG(status)));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    throw fail("exec: executable " + exec.command + " failed with exit code " +
               std::to_string(WEXITSTATUS(status)));
  }
  try {
    return ParseExecCredential(output, exec.api_version);
  } catch (const std::runtime_error& e) {
    throw fail("exec plugin " + exec.command + ": " + e.what());
  }
}

}  // namespace berth::client::internal
