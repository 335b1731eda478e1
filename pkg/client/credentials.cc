#include "pkg/client/credentials.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <deque>
#include <fstream>
#include <initializer_list>
#include <mutex>
#include <sstream>
#include <string_view>
#include <vector>

namespace berth::client::internal {
namespace {

std::atomic<int64_t> g_file_refresh_interval_ns{
    std::chrono::duration_cast<std::chrono::nanoseconds>(kCredentialFileRefreshInterval).count()};

std::chrono::nanoseconds FileRefreshInterval() {
  return std::chrono::nanoseconds(g_file_refresh_interval_ns.load());
}

std::string Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

// The whole file, or nullopt when it cannot be read.
std::optional<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

// The OpenSSL error queue of this thread as text, emptied.
std::string DrainOpensslErrors() {
  std::string text;
  while (const unsigned long code = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    if (!text.empty()) text += "; ";
    const char* reason = ERR_reason_error_string(code);
    text += reason != nullptr ? reason : buf;
  }
  return text;
}

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};

BioPtr MemoryBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// Every certificate of a PEM bundle; sets `problem` when one is malformed or there is none.
std::vector<X509Ptr> ReadCertificates(const std::string& pem, std::string* problem) {
  BioPtr bio = MemoryBio(pem);
  std::vector<X509Ptr> certs;
  ERR_clear_error();
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certs.emplace_back(cert);
  }
  // Running out of input ends the loop with "no start line"; anything else is a bad block.
  const unsigned long last = ERR_peek_last_error();
  const bool clean_end = last == 0 || (ERR_GET_LIB(last) == ERR_LIB_PEM &&
                                       ERR_GET_REASON(last) == PEM_R_NO_START_LINE);
  const std::string detail = DrainOpensslErrors();
  if (!clean_end) {
    *problem = detail;
  } else if (certs.empty()) {
    *problem = "no PEM certificate in it";
  }
  return certs;
}

// PEM inputs already found usable, by the SHA-256 of their text. Start-up checks the kubeconfig's
// pair when it is read and again for each client made from it (the scheduler's and the secure
// port's two delegated ones), and parsing an RSA key with its certificate costs most of a
// millisecond each time. Only good verdicts are kept, at most kMaxRemembered; a digest, never the
// text (a key is a secret), is held. Thread-safe.
class UsableInputs {
 public:
  using Digest = std::array<unsigned char, 32>;

  // The digest of `parts` (lengths included, so no two splits of one text collide); nullopt when
  // OpenSSL cannot hash, and then nothing is remembered.
  static std::optional<Digest> Of(std::initializer_list<std::string_view> parts) {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) return std::nullopt;
    for (std::string_view part : parts) {
      const uint64_t size = part.size();
      if (EVP_DigestUpdate(ctx.get(), &size, sizeof(size)) != 1 ||
          EVP_DigestUpdate(ctx.get(), part.data(), part.size()) != 1) {
        return std::nullopt;
      }
    }
    Digest digest{};
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(ctx.get(), digest.data(), &length) != 1 || length != digest.size()) {
      return std::nullopt;
    }
    return digest;
  }

  bool Known(const std::optional<Digest>& digest) {
    if (!digest) return false;
    std::lock_guard lock(mu_);
    return std::find(known_.begin(), known_.end(), *digest) != known_.end();
  }

  void Remember(const std::optional<Digest>& digest) {
    if (!digest) return;
    std::lock_guard lock(mu_);
    if (std::find(known_.begin(), known_.end(), *digest) != known_.end()) return;
    if (known_.size() == kMaxRemembered) known_.pop_front();
    known_.push_back(*digest);
  }

 private:
  static constexpr size_t kMaxRemembered = 16;
  std::mutex mu_;
  std::deque<Digest> known_;
};

UsableInputs& Usable() {
  static UsableInputs usable;
  return usable;
}

}  // namespace

void SetCredentialFileRefreshIntervalForTesting(std::chrono::nanoseconds interval) {
  g_file_refresh_interval_ns.store(interval.count());
}

std::string CertificatesProblem(const std::string& pem) {
  const auto digest = UsableInputs::Of({"certificates", pem});
  if (Usable().Known(digest)) return "";
  std::string problem;
  ReadCertificates(pem, &problem);
  if (problem.empty()) Usable().Remember(digest);
  return problem;
}

std::string KeyPairProblem(const std::string& cert_pem, const std::string& key_pem) {
  const auto digest = UsableInputs::Of({"key pair", cert_pem, key_pem});
  if (Usable().Known(digest)) return "";
  std::string problem;
  std::vector<X509Ptr> chain = ReadCertificates(cert_pem, &problem);
  if (!problem.empty()) return "certificate: " + problem;
  BioPtr bio = MemoryBio(key_pem);
  ERR_clear_error();
  std::unique_ptr<EVP_PKEY, PkeyFree> key(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) return "key: " + DrainOpensslErrors();
  if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
    DrainOpensslErrors();
    return "the key does not match the certificate";
  }
  Usable().Remember(digest);
  return "";
}

CredentialSource::CredentialSource(Config config)
    : config_(std::move(config)),
      cert_pem_(config_.client_cert_pem),
      key_pem_(config_.client_key_pem) {
  if (!config_.client_cert_file.empty()) {
    cert_stamp_ = Stamp(config_.client_cert_file);
    key_stamp_ = Stamp(config_.client_key_file);
    certs_checked_at_ = std::chrono::steady_clock::now();
  }
}

CredentialSource::FileStamp CredentialSource::Stamp(const std::string& path) {
  struct stat info {};
  FileStamp stamp;
  if (stat(path.c_str(), &info) == 0) {
    stamp.mtime = info.st_mtim;
    stamp.size = info.st_size;
    stamp.inode = info.st_ino;
  }
  return stamp;
}

std::shared_ptr<const Credentials> CredentialSource::Get() {
  std::lock_guard<std::mutex> lock(mu_);
  bool changed = RefreshFilesLocked(/*force=*/false);
  if (config_.exec) {
    const bool expired =
        plugin_ && plugin_->expiry && std::chrono::system_clock::now() > *plugin_->expiry;
    if (!plugin_ || expired) {
      // Held under mu_: one run at a time, and the requests that need it wait for it, at most
      // kExecPluginTimeout.
      RunPluginLocked();
      changed = true;
    }
  }
  if (changed || current_ == nullptr) current_ = BuildLocked();
  return current_;
}

std::shared_ptr<const Credentials> CredentialSource::TryGet() {
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return nullptr;
  if (config_.exec &&
      (!plugin_ || (plugin_->expiry && std::chrono::system_clock::now() > *plugin_->expiry))) {
    return nullptr;
  }
  if (RefreshFilesLocked(/*force=*/false) || current_ == nullptr) current_ = BuildLocked();
  return current_;
}

bool CredentialSource::RefreshAfterUnauthorized(const std::shared_ptr<const Credentials>& used) {
  std::lock_guard<std::mutex> lock(mu_);
  if (used != current_) return true;  // Another request refreshed them meanwhile.
  if (config_.exec) {
    try {
      RunPluginLocked();
    } catch (const ApiError& e) {
      spdlog::warn(
          "client: the apiserver rejected the exec plugin's credential (401), and "
          "running it again failed: {}",
          e.what());
      return false;
    }
  } else if (!RefreshFilesLocked(/*force=*/true)) {
    return false;
  }
  current_ = BuildLocked();
  return true;
}

bool CredentialSource::RefreshFilesLocked(bool force) {
  const auto now = std::chrono::steady_clock::now();
  const auto interval = FileRefreshInterval();
  bool changed = false;
  if (!config_.bearer_token_file.empty() &&
      (force || !token_read_ || now - token_read_at_ >= interval)) {
    token_read_ = true;
    token_read_at_ = now;
    changed = RereadTokenLocked() || changed;
  }
  if (!config_.client_cert_file.empty() && (force || now - certs_checked_at_ >= interval)) {
    certs_checked_at_ = now;
    changed = RereadCertificatesLocked() || changed;
  }
  return changed;
}

bool CredentialSource::RereadTokenLocked() {
  const std::optional<std::string> raw = ReadWholeFile(config_.bearer_token_file);
  const std::string token = raw ? Trim(*raw) : "";
  if (token.empty()) {
    spdlog::debug("client: cannot read token file {}; keeping the previous token",
                  config_.bearer_token_file);
    return false;
  }
  if (token == file_token_) return false;
  file_token_ = token;
  return true;
}

bool CredentialSource::RereadCertificatesLocked() {
  const FileStamp cert_stamp = Stamp(config_.client_cert_file);
  const FileStamp key_stamp = Stamp(config_.client_key_file);
  if (cert_stamp == cert_stamp_ && key_stamp == key_stamp_) return false;
  const std::optional<std::string> cert = ReadWholeFile(config_.client_cert_file);
  const std::optional<std::string> key = ReadWholeFile(config_.client_key_file);
  const std::string problem =
      cert && key ? KeyPairProblem(*cert, *key) : std::string("cannot read them");
  if (!problem.empty()) {
    // Perhaps caught between the writes of the two files: the stamps stay old, so the next
    // check reads them again.
    spdlog::warn("client: keeping the previous client certificate: {} and {}: {}",
                 config_.client_cert_file, config_.client_key_file, problem);
    return false;
  }
  cert_stamp_ = cert_stamp;
  key_stamp_ = key_stamp;
  if (*cert == cert_pem_ && *key == key_pem_) return false;
  cert_pem_ = *cert;
  key_pem_ = *key;
  spdlog::info("client: re-read the rotated client certificate {}", config_.client_cert_file);
  return true;
}

void CredentialSource::RunPluginLocked() {
  ExecCredential credential = RunExecPlugin(config_);
  if (!credential.cert_pem.empty()) {
    if (const std::string problem = KeyPairProblem(credential.cert_pem, credential.key_pem);
        !problem.empty()) {
      throw ApiError(ErrorReason::kUnauthorized, 0,
                     config_.exec->origin + ": exec plugin " + config_.exec->command +
                         " returned an unusable client certificate or key: " + problem);
    }
  }
  plugin_ = std::move(credential);
}

std::shared_ptr<const Credentials> CredentialSource::BuildLocked() const {
  auto credentials = std::make_shared<Credentials>();
  if (plugin_) {
    credentials->token = plugin_->token;
    credentials->cert_pem = plugin_->cert_pem;
    credentials->key_pem = plugin_->key_pem;
  } else {
    credentials->token = file_token_.empty() ? config_.bearer_token : file_token_;
    credentials->cert_pem = cert_pem_;
    credentials->key_pem = key_pem_;
  }
  return credentials;
}

}  // namespace berth::client::internal
