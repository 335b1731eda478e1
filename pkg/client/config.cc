#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "pkg/api/utf8.h"
#include "pkg/client/client.h"
#include "pkg/client/http_client.h"
#include "pkg/client/proxy.h"
#include "pkg/util/base64.h"
#include "pkg/util/url.h"
#include "pkg/yaml/yaml.h"

namespace berth::client {
namespace {

namespace fs = std::filesystem;

constexpr char kDefaultServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";
constexpr char kExecApiV1[] = "client.authentication.k8s.io/v1";
constexpr char kExecApiV1beta1[] = "client.authentication.k8s.io/v1beta1";
// The name of a cluster extension whose content exec plugins get as spec.cluster.config.
constexpr char kExecExtension[] = "client.authentication.k8s.io/exec";
// The exec extension is free-form: a bound on its size, as anchors and aliases can make a small
// file expand to a very large tree.
constexpr size_t kMaxExecExtensionValues = 10'000;

// Reads a whole file; on failure returns false and a reason fit for an error message.
bool ReadFile(const std::string& path, std::string* out, std::string* reason) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *reason = std::strerror(errno);
    return false;
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) {
    *reason = "read error";
    return false;
  }
  *out = buf.str();
  return true;
}

std::string TrimWhitespace(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  const auto end = s.find_last_not_of(" \t\r\n");
  return s.substr(begin, end - begin + 1);
}

// Parses one kubeconfig and reports every problem as "kubeconfig <file>: <field>: <what>".
class KubeconfigLoader {
 public:
  KubeconfigLoader(std::string path, const internal::FileReader& read_file)
      : path_(std::move(path)), read_file_(read_file) {
    dir_ = fs::absolute(fs::path(path_)).parent_path();
  }

  Config Load(const std::string& context_override) {
    std::string text;
    std::string reason;
    if (!read_file_(path_, &text, &reason)) Fail("", "cannot read file: " + reason);
    // Upstream's YAML parser refuses such a file too; and what the kubeconfig holds is written
    // into JSON (an exec plugin's KUBERNETES_EXEC_INFO), which has to be UTF-8.
    if (!api::IsValidUtf8(text)) Fail("", "not valid UTF-8");
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      Fail("", std::string("invalid YAML: ") + e.what());
    }
    if (!root.IsMap()) Fail("", "not a kubeconfig (expected a YAML mapping)");

    std::string context_name = context_override;
    if (context_name.empty()) {
      context_name = Scalar(root["current-context"], "current-context");
      if (context_name.empty()) {
        Fail("current-context", "not set and no context was requested");
      }
    }
    const std::string context_field = "contexts[name=" + context_name + "].context";
    const YAML::Node context = FindNamed(root, "contexts", "context", context_name);
    if (!context) Fail(context_field, "no such context");

    const std::string cluster_name = Scalar(context["cluster"], context_field + ".cluster");
    if (cluster_name.empty()) Fail(context_field + ".cluster", "not set");
    const YAML::Node cluster = FindNamed(root, "clusters", "cluster", cluster_name);
    if (!cluster) {
      Fail("clusters[name=" + cluster_name + "]",
           "no such cluster (named by " + context_field + ".cluster)");
    }

    Config config;
    std::string exec_extension;
    LoadCluster(cluster, "clusters[name=" + cluster_name + "].cluster", &config, &exec_extension);

    const std::string user_name = Scalar(context["user"], context_field + ".user");
    if (!user_name.empty()) {
      const YAML::Node user = FindNamed(root, "users", "user", user_name);
      if (!user) {
        Fail("users[name=" + user_name + "]", "no such user (named by " + context_field + ".user)");
      }
      LoadUser(user, "users[name=" + user_name + "].user", &config);
      if (config.exec) config.exec->cluster_config_json = exec_extension;
    }

    const bool has_credentials = !config.bearer_token.empty() ||
                                 !config.bearer_token_file.empty() ||
                                 !config.client_cert_pem.empty() || config.exec.has_value();
    if (has_credentials &&
        util::ParseUrl(config.server).url.value_or(util::Url{}).scheme != "https") {
      Fail("clusters[name=" + cluster_name + "].cluster.server",
           "credentials would be sent in clear text to " + util::RedactUrl(config.server) +
               "; use https://");
    }
    return config;
  }

 private:
  [[noreturn]] void Fail(const std::string& field, const std::string& what) const {
    std::string message = "kubeconfig " + path_ + ": ";
    if (!field.empty()) message += field + ": ";
    throw ConfigError(message + what);
  }

  std::string Scalar(const YAML::Node& node, const std::string& field) const {
    if (!node || node.IsNull()) return "";
    if (!node.IsScalar()) Fail(field, "expected a string");
    return node.as<std::string>();
  }

  bool Bool(const YAML::Node& node, const std::string& field) const {
    if (!node || node.IsNull()) return false;
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
      Fail(field, "expected true or false");
    }
    return value;
  }

  // The `inner` mapping of the entry named `name` in the top-level list `list`.
  YAML::Node FindNamed(const YAML::Node& root, const std::string& list, const std::string& inner,
                       const std::string& name) const {
    const YAML::Node entries = root[list];
    if (!entries || entries.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
    if (!entries.IsSequence()) Fail(list, "expected a list");
    for (const YAML::Node& entry : entries) {
      if (!entry.IsMap()) Fail(list, "entries must be mappings with name and " + inner);
      if (Scalar(entry["name"], list + "[].name") != name) continue;
      const YAML::Node value = entry[inner];
      if (!value || value.IsNull()) return YAML::Node(YAML::NodeType::Map);
      if (!value.IsMap()) {
        std::string field = list;
        field.append("[name=").append(name).append("].").append(inner);
        Fail(field, "expected a mapping");
      }
      return value;
    }
    return YAML::Node(YAML::NodeType::Undefined);
  }

  std::string Resolve(const std::string& file) const {
    const fs::path p(file);
    return p.is_absolute() ? file : (dir_ / p).lexically_normal().string();
  }

  std::string ReadReferencedFile(const std::string& file, const std::string& field) const {
    const std::string resolved = Resolve(file);
    std::string content;
    std::string reason;
    if (!read_file_(resolved, &content, &reason)) {
      Fail(field, "cannot read " + resolved + ": " + reason);
    }
    return content;
  }

  std::string DecodeData(const std::string& data, const std::string& field) const {
    std::optional<std::string> decoded = util::Base64Decode(data);
    if (!decoded) Fail(field, "invalid base64");
    return *decoded;
  }

  // Exactly one of `file_key` / `data_key` (or neither); returns the PEM text, and the resolved
  // path in `path` (when given) if it came from a file.
  std::string FileOrData(const YAML::Node& node, const std::string& prefix,
                         const std::string& file_key, const std::string& data_key,
                         std::string* path = nullptr) const {
    const std::string file = Scalar(node[file_key], prefix + "." + file_key);
    const std::string data = Scalar(node[data_key], prefix + "." + data_key);
    if (!file.empty() && !data.empty()) {
      Fail(prefix, file_key + " and " + data_key + " are both set; use one");
    }
    if (!file.empty() && path != nullptr) *path = Resolve(file);
    if (!file.empty()) return ReadReferencedFile(file, prefix + "." + file_key);
    if (!data.empty()) return DecodeData(data, prefix + "." + data_key);
    return "";
  }

  void RequirePem(const std::string& pem, std::string_view what, const std::string& field) const {
    if (pem.find("-----BEGIN ") == std::string::npos ||
        pem.find(std::string(what)) == std::string::npos) {
      Fail(field, "does not contain a PEM " + std::string(what));
    }
  }

  void LoadCluster(const YAML::Node& cluster, const std::string& prefix, Config* config,
                   std::string* exec_extension) const {
    config->server = Scalar(cluster["server"], prefix + ".server");
    if (config->server.empty()) Fail(prefix + ".server", "not set");
    const util::UrlResult server = util::ParseUrl(config->server);
    if (!server) {
      Fail(prefix + ".server",
           "\"" + util::RedactUrl(config->server) + "\" is not a URL: " + server.error);
    }
    if (server.url->scheme != "https" && server.url->scheme != "http") {
      Fail(prefix + ".server",
           "\"" + util::RedactUrl(config->server) + "\" is not an https:// URL");
    }
    while (config->server.size() > 8 && config->server.back() == '/') config->server.pop_back();

    config->ca_pem =
        FileOrData(cluster, prefix, "certificate-authority", "certificate-authority-data");
    if (!config->ca_pem.empty()) {
      RequirePem(config->ca_pem, "CERTIFICATE",
                 prefix + (cluster["certificate-authority"] ? ".certificate-authority"
                                                            : ".certificate-authority-data"));
    }
    config->insecure_skip_tls_verify =
        Bool(cluster["insecure-skip-tls-verify"], prefix + ".insecure-skip-tls-verify");
    if (config->insecure_skip_tls_verify && !config->ca_pem.empty()) {
      Fail(prefix, "insecure-skip-tls-verify together with a certificate authority is ambiguous");
    }
    config->tls_server_name = Scalar(cluster["tls-server-name"], prefix + ".tls-server-name");
    config->proxy_url = Scalar(cluster["proxy-url"], prefix + ".proxy-url");
    if (!config->proxy_url.empty()) {
      try {
        internal::NormalizeProxyUrl(config->proxy_url);
      } catch (const ConfigError& e) {
        Fail(prefix + ".proxy-url", e.what());
      }
    }
    const YAML::Node extensions = cluster["extensions"];
    if (extensions && extensions.IsSequence()) {
      // One budget for every exec entry: a list of aliases to one large extension would
      // otherwise be converted in full once per entry.
      yaml::JsonBudget budget(kMaxExecExtensionValues);
      for (const YAML::Node& entry : extensions) {
        if (!entry.IsMap() ||
            Scalar(entry["name"], prefix + ".extensions[].name") != kExecExtension) {
          continue;
        }
        if (entry["extension"] && !entry["extension"].IsNull()) {
          const std::string field = prefix + ".extensions[].extension";
          *exec_extension =
              yaml::JsonConverter(
                  &budget, "more than " + std::to_string(kMaxExecExtensionValues) + " values",
                  [this](const std::string& at, const std::string& problem) { Fail(at, problem); })
                  .Convert(entry["extension"], field)
                  .dump();
        }
      }
    }
  }

  std::vector<std::string> StringList(const YAML::Node& node, const std::string& field) const {
    std::vector<std::string> out;
    if (!node || node.IsNull()) return out;
    if (!node.IsSequence()) Fail(field, "expected a list of strings");
    for (const YAML::Node& item : node) out.push_back(Scalar(item, field + "[]"));
    return out;
  }

  // users[].user.exec: client-go's validation, and a terminal Berth never has.
  ExecConfig LoadExec(const YAML::Node& node, const std::string& field) const {
    if (!node.IsMap()) Fail(field, "expected a mapping");
    ExecConfig exec;
    exec.origin = "kubeconfig " + path_ + ": " + field;
    exec.api_version = Scalar(node["apiVersion"], field + ".apiVersion");
    if (exec.api_version.empty()) Fail(field + ".apiVersion", "not set");
    if (exec.api_version != kExecApiV1 && exec.api_version != kExecApiV1beta1) {
      Fail(field + ".apiVersion", "\"" + exec.api_version + "\" is not supported; use " +
                                      kExecApiV1 + " or " + kExecApiV1beta1);
    }
    exec.command = Scalar(node["command"], field + ".command");
    if (exec.command.empty()) Fail(field + ".command", "not set");
    // Like client-go: a command with a '/' is a path, relative to the kubeconfig; else PATH's.
    if (exec.command.find('/') != std::string::npos) exec.command = Resolve(exec.command);
    exec.args = StringList(node["args"], field + ".args");
    const YAML::Node env = node["env"];
    if (env && !env.IsNull()) {
      if (!env.IsSequence()) Fail(field + ".env", "expected a list of {name, value}");
      for (const YAML::Node& entry : env) {
        if (!entry.IsMap()) Fail(field + ".env", "expected a list of {name, value}");
        std::string name = Scalar(entry["name"], field + ".env[].name");
        if (name.empty()) Fail(field + ".env[].name", "not set");
        exec.env.emplace_back(std::move(name), Scalar(entry["value"], field + ".env[].value"));
      }
    }
    exec.install_hint = Scalar(node["installHint"], field + ".installHint");
    exec.provide_cluster_info = Bool(node["provideClusterInfo"], field + ".provideClusterInfo");
    const std::string mode = Scalar(node["interactiveMode"], field + ".interactiveMode");
    if (mode.empty() && exec.api_version == kExecApiV1) {
      Fail(field + ".interactiveMode", "must be set for " + std::string(kExecApiV1));
    } else if (mode == "Always") {
      Fail(field + ".interactiveMode",
           "Always needs a terminal, and berth-scheduler runs its plugin without one; use "
           "IfAvailable or Never");
    } else if (!mode.empty() && mode != "Never" && mode != "IfAvailable") {
      Fail(field + ".interactiveMode", "\"" + mode + "\" is not Never, IfAvailable or Always");
    }
    return exec;
  }

  void LoadUser(const YAML::Node& user, const std::string& prefix, Config* config) const {
    if (user["auth-provider"] && !user["auth-provider"].IsNull()) {
      Fail(prefix + ".auth-provider",
           "auth-provider plugins are not supported; use an exec plugin, a token, tokenFile or "
           "client certificate");
    }
    for (const char* key : {"username", "password"}) {
      if (user[key] && !user[key].IsNull()) {
        Fail(prefix + "." + key,
             "basic authentication is not supported; use an exec plugin, a token, tokenFile or "
             "client certificate");
      }
    }
    for (const char* key : {"as", "as-uid", "as-groups", "as-user-extra"}) {
      if (user[key] && !user[key].IsNull()) {
        Fail(prefix + "." + key, "impersonation is not supported");
      }
    }

    config->bearer_token = TrimWhitespace(Scalar(user["token"], prefix + ".token"));
    const std::string token_file = Scalar(user["tokenFile"], prefix + ".tokenFile");
    if (!token_file.empty()) {
      config->bearer_token_file = Resolve(token_file);
      if (TrimWhitespace(ReadReferencedFile(token_file, prefix + ".tokenFile")).empty()) {
        Fail(prefix + ".tokenFile", config->bearer_token_file + " is empty");
      }
    }

    std::string cert_file;
    std::string key_file;
    config->client_cert_pem =
        FileOrData(user, prefix, "client-certificate", "client-certificate-data", &cert_file);
    config->client_key_pem = FileOrData(user, prefix, "client-key", "client-key-data", &key_file);
    if (config->client_cert_pem.empty() != config->client_key_pem.empty()) {
      Fail(prefix, "client-certificate and client-key must be given together");
    }
    if (!config->client_cert_pem.empty()) {
      RequirePem(config->client_cert_pem, "CERTIFICATE", prefix + ".client-certificate");
      RequirePem(config->client_key_pem, "PRIVATE KEY", prefix + ".client-key");
    }
    if (!cert_file.empty() && !key_file.empty()) {
      // Both on disk: the client re-reads them when they rotate.
      config->client_cert_file = cert_file;
      config->client_key_file = key_file;
    }

    if (user["exec"] && !user["exec"].IsNull()) {
      if (!config->bearer_token.empty() || !config->bearer_token_file.empty() ||
          !config->client_cert_pem.empty()) {
        Fail(prefix + ".exec",
             "an exec plugin together with a token, tokenFile or client certificate is "
             "ambiguous; keep one");
      }
      config->exec = LoadExec(user["exec"], prefix + ".exec");
    }
  }

  std::string path_;
  const internal::FileReader& read_file_;
  fs::path dir_;
};

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

}  // namespace

std::string Config::Describe() const {
  // Userinfo in the URL would be a credential.
  const std::string shown = util::RedactUrl(server);
  std::string auth = "none";
  if (exec) {
    auth = "exec(" + exec->command + ")";
  } else if (!client_cert_pem.empty()) {
    auth = "client-certificate";
  } else if (!bearer_token_file.empty()) {
    auth = "token-file(" + bearer_token_file + ")";
  } else if (!bearer_token.empty()) {
    auth = "token";
  }
  std::string ca = "system";
  if (insecure_skip_tls_verify) {
    ca = "insecure-skip-verify";
  } else if (!ca_pem.empty()) {
    ca = "custom";
  }
  std::ostringstream out;
  out << "server=" << shown << " auth=" << auth << " ca=" << ca;
  if (!tls_server_name.empty()) out << " tls-server-name=" << tls_server_name;
  if (!proxy_url.empty()) out << " proxy=" << internal::RedactProxyUrl(proxy_url);
  out << " qps=" << qps << " burst=" << burst;
  return out.str();
}

namespace internal {

Config LoadKubeconfigWith(const std::string& path, const std::string& context,
                          const FileReader& read_file) {
  if (path.empty()) throw ConfigError("kubeconfig: no file given");
  return KubeconfigLoader(path, read_file).Load(context);
}

}  // namespace internal

Config LoadKubeconfig(const std::string& path, const std::string& context) {
  return internal::LoadKubeconfigWith(path, context, ReadFile);
}

Config InClusterConfig(const std::string& service_account_dir) {
  const std::string dir =
      service_account_dir.empty() ? kDefaultServiceAccountDir : service_account_dir;
  const std::string host = Env("KUBERNETES_SERVICE_HOST");
  const std::string port = Env("KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    throw ConfigError(
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must both be "
        "set");
  }
  // Built through libcurl, which checks both: an IPv6 address gets its brackets, and a value that
  // would add a path, userinfo or a bad port to the URL is refused.
  const util::UrlResult server = util::MakeUrl("https", host, port);
  if (!server) {
    throw ConfigError(
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT do not make a "
        "URL: " +
        server.error);
  }
  Config config;
  config.server = server.url->Origin();

  const std::string token_path = (fs::path(dir) / "token").string();
  std::string token;
  std::string reason;
  if (!ReadFile(token_path, &token, &reason)) {
    throw ConfigError("in-cluster config: service account token " + token_path + ": " + reason);
  }
  if (TrimWhitespace(token).empty()) {
    throw ConfigError("in-cluster config: service account token " + token_path + " is empty");
  }
  // Bound service account tokens rotate: the client re-reads the file instead of caching this.
  config.bearer_token_file = token_path;

  const std::string ca_path = (fs::path(dir) / "ca.crt").string();
  if (!ReadFile(ca_path, &config.ca_pem, &reason)) {
    throw ConfigError("in-cluster config: CA bundle " + ca_path + ": " + reason);
  }
  if (config.ca_pem.find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
    throw ConfigError("in-cluster config: CA bundle " + ca_path +
                      ": does not contain a PEM CERTIFICATE");
  }
  return config;
}

Config LoadConfig(const std::string& kubeconfig_path) {
  if (!kubeconfig_path.empty()) return LoadKubeconfig(kubeconfig_path);
  // BERTH_SERVICE_ACCOUNT_DIR points at a directory laid out like the mounted service-account
  // volume, for running with a service account's identity outside a pod (tests, debugging).
  if (!Env("KUBERNETES_SERVICE_HOST").empty())
    return InClusterConfig(Env("BERTH_SERVICE_ACCOUNT_DIR"));
  // $KUBECONFIG may be a list; without merging support the first existing file is used.
  std::string list = Env("KUBECONFIG");
  std::stringstream entries(list);
  for (std::string entry; std::getline(entries, entry, ':');) {
    std::error_code ec;
    if (!entry.empty() && fs::exists(entry, ec)) return LoadKubeconfig(entry);
  }
  if (!list.empty()) throw ConfigError("KUBECONFIG=" + list + ": no such file");
  const std::string home = Env("HOME");
  const std::string fallback = home.empty() ? "" : home + "/.kube/config";
  std::error_code ec;
  if (fallback.empty() || !fs::exists(fallback, ec)) {
    throw ConfigError(
        "no configuration: pass --kubeconfig, run in a cluster, set KUBECONFIG or create "
        "~/.kube/config");
  }
  return LoadKubeconfig(fallback);
}

}  // namespace berth::client
