#ifndef BERTH_TEST_TESTING_PKI_H_
#define BERTH_TEST_TESTING_PKI_H_

// Certificate authorities and the certificates they sign, minted with the openssl CLI in a
// temporary directory that lives as long as the Pki. For tests of TLS peers: the secure port's
// client certificates, servers a client must verify.

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "test/testing/temp_dir.h"

namespace berth::testing {

// A certificate and its key, as files in the Pki's directory and as PEM text.
struct CertificateFiles {
  std::string cert_file;
  std::string key_file;
  std::string cert_pem;
  std::string key_pem;
};

// Not thread-safe. Every method throws std::runtime_error when openssl fails.
class Pki {
 public:
  // A self-signed CA named `name` (also the files' base name), valid for two days.
  CertificateFiles Ca(const std::string& name) {
    Run("openssl req -x509 " + std::string(kKey) + " -keyout " + dir_.Join(name + ".key") +
        " -out " + dir_.Join(name + ".crt") + " -days 2 -subj /CN=" + name);
    return Read(name);
  }

  // A certificate for the subject (e.g. "/O=team/CN=alice") signed by `ca`, with the given
  // openssl extension lines; valid for `days` (negative: already expired).
  CertificateFiles Issue(const CertificateFiles& ca, const std::string& name,
                         const std::string& subject, const std::string& extensions, int days = 2) {
    const std::string ext = dir_.Write(name + ".ext", extensions);
    Run("openssl req " + std::string(kKey) + " -keyout " + dir_.Join(name + ".key") + " -out " +
        dir_.Join(name + ".csr") + " -subj '" + subject + "'");
    Run("openssl x509 -req -in " + dir_.Join(name + ".csr") + " -CA " + ca.cert_file + " -CAkey " +
        ca.key_file + " -CAcreateserial -days " + std::to_string(days) + " -extfile " + ext +
        " -out " + dir_.Join(name + ".crt"));
    return Read(name);
  }

  // A client certificate (extendedKeyUsage clientAuth) signed by `ca`.
  CertificateFiles Client(const CertificateFiles& ca, const std::string& name,
                          const std::string& subject, int days = 2) {
    return Issue(ca, name, subject, "extendedKeyUsage=clientAuth\n", days);
  }

  // A serving certificate for 127.0.0.1 and localhost signed by `ca`.
  CertificateFiles Server(const CertificateFiles& ca, const std::string& name) {
    return Issue(ca, name, "/CN=127.0.0.1",
                 "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  }

 private:
  static constexpr const char* kKey = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

  static void Run(const std::string& command) {
    if (std::system((command + " >/dev/null 2>&1").c_str()) != 0) {
      throw std::runtime_error("failed: " + command);
    }
  }

  CertificateFiles Read(const std::string& name) const {
    CertificateFiles out{dir_.Join(name + ".crt"), dir_.Join(name + ".key"), "", ""};
    out.cert_pem = ReadAll(out.cert_file);
    out.key_pem = ReadAll(out.key_file);
    return out;
  }

  TempDir dir_;
};

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_PKI_H_
