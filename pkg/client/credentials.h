#ifndef BERTH_PKG_CLIENT_CREDENTIALS_H_
#define BERTH_PKG_CLIENT_CREDENTIALS_H_

// What each request authenticates with, kept current: a static token or certificate, a token
// file and certificate files re-read when they rotate, or an exec plugin's credential kept until
// it expires. Internal to pkg/client and its unit tests.

#include <sys/stat.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "pkg/client/client.h"
#include "pkg/client/curl_transport.h"
#include "pkg/client/exec_plugin.h"

namespace berth::client::internal {

// How long a token or certificate read from a file is used before the file is checked again.
inline constexpr std::chrono::seconds kCredentialFileRefreshInterval{60};
// Overrides kCredentialFileRefreshInterval for every client in the process (tests only).
void SetCredentialFileRefreshIntervalForTesting(std::chrono::nanoseconds interval);

// Empty when `pem` holds one or more PEM certificates and nothing malformed, else why not.
std::string CertificatesProblem(const std::string& pem);
// Empty when `key_pem` is a private key matching the first certificate of `cert_pem`, else why
// not. Both remember (by digest) the texts they found good, so checking one again is cheap.
std::string KeyPairProblem(const std::string& cert_pem, const std::string& key_pem);

// The current Credentials of one Config. Thread-safe. Get() returns the same object until
// something changed, so a 401 can be matched to the credentials it answered.
class CredentialSource {
 public:
  explicit CredentialSource(Config config);

  // May re-read the token or certificate files (when their refresh interval passed) or run the
  // exec plugin (when it has not run yet or its credential expired); throws ApiError when the
  // plugin fails.
  std::shared_ptr<const Credentials> Get();
  // What Get() returns when that needs no exec plugin run and no wait for another caller's;
  // null otherwise. (It may still re-read a credential file due for it.)
  std::shared_ptr<const Credentials> TryGet();

  // After `used` was answered 401: runs the exec plugin again (or re-reads the credential files
  // now) unless that already happened since `used` was handed out. True when the request deserves
  // one more attempt with Get().
  bool RefreshAfterUnauthorized(const std::shared_ptr<const Credentials>& used);

 private:
  struct FileStamp {
    timespec mtime{};
    off_t size = -1;
    ino_t inode = 0;
    bool operator==(const FileStamp& o) const {
      return mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec && size == o.size &&
             inode == o.inode;
    }
  };
  static FileStamp Stamp(const std::string& path);

  // Re-reads the files whose interval passed (all of them when `force`); true when the
  // credentials they hold changed.
  bool RefreshFilesLocked(bool force);
  bool RereadTokenLocked();
  bool RereadCertificatesLocked();
  void RunPluginLocked();
  std::shared_ptr<const Credentials> BuildLocked() const;

  const Config config_;
  std::mutex mu_;
  std::shared_ptr<const Credentials> current_;  // Guarded by mu_, as is everything below.
  std::string file_token_;
  std::chrono::steady_clock::time_point token_read_at_;
  bool token_read_ = false;
  std::string cert_pem_;
  std::string key_pem_;
  FileStamp cert_stamp_;
  FileStamp key_stamp_;
  std::chrono::steady_clock::time_point certs_checked_at_;
  std::optional<ExecCredential> plugin_;
};

}  // namespace berth::client::internal

#endif  // BERTH_PKG_CLIENT_CREDENTIALS_H_
