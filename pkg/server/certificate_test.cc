#include "pkg/server/certificate.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>
#include <regex>
#include <set>

namespace berth::server {
namespace {

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free_all(b); }
};

std::unique_ptr<X509, X509Free> ParseCert(const std::string& pem) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return std::unique_ptr<X509, X509Free>(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

std::unique_ptr<EVP_PKEY, KeyFree> ParseKey(const std::string& pem) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return std::unique_ptr<EVP_PKEY, KeyFree>(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

// "DNS:name" and "IP:a.b.c.d" for each subjectAltName entry.
std::set<std::string> AltNames(X509* cert) {
  std::set<std::string> out;
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names); i++) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    if (name->type == GEN_DNS) {
      out.insert("DNS:" +
                 std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(name->d.dNSName)),
                             ASN1_STRING_length(name->d.dNSName)));
    } else if (name->type == GEN_IPADD) {
      char text[INET6_ADDRSTRLEN] = {};
      const int length = ASN1_STRING_length(name->d.iPAddress);
      inet_ntop(length == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(name->d.iPAddress), text,
                sizeof(text));
      out.insert(std::string("IP:") + text);
    }
  }
  GENERAL_NAMES_free(names);
  return out;
}

// Whether a TLS client that trusts exactly this certificate accepts it as a server's chain.
bool TrustedAlone(X509* cert) {
  std::unique_ptr<X509_STORE, void (*)(X509_STORE*)> store(X509_STORE_new(), X509_STORE_free);
  std::unique_ptr<X509_STORE_CTX, void (*)(X509_STORE_CTX*)> ctx(X509_STORE_CTX_new(),
                                                                 X509_STORE_CTX_free);
  X509_STORE_add_cert(store.get(), cert);
  X509_STORE_CTX_init(ctx.get(), store.get(), cert, nullptr);
  X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_SERVER);
  return X509_verify_cert(ctx.get()) == 1;
}

TEST(SelfSignedTest, ServingCertificateForTheHostLocalhostAndLoopback) {
  const CertificateKeyPair pair = GenerateSelfSigned("berth-7d9f", {"localhost"}, {"127.0.0.1"});
  auto cert = ParseCert(pair.cert_pem);
  ASSERT_TRUE(cert) << pair.cert_pem;
  auto key = ParseKey(pair.key_pem);
  ASSERT_TRUE(key);
  EXPECT_EQ(X509_check_private_key(cert.get(), key.get()), 1);
  EXPECT_EQ(EVP_PKEY_get_base_id(key.get()), EVP_PKEY_EC);

  EXPECT_EQ(AltNames(cert.get()),
            (std::set<std::string>{"DNS:berth-7d9f", "DNS:localhost", "IP:127.0.0.1"}));
  // OpenSSL's own host and IP checks, as a TLS client runs them.
  EXPECT_EQ(X509_check_host(cert.get(), "berth-7d9f", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(cert.get(), "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "127.0.0.1", 0), 1);
  EXPECT_NE(X509_check_host(cert.get(), "other", 0, 0, nullptr), 1);

  // Self-signed, a server certificate and not a CA.
  EXPECT_EQ(X509_verify(cert.get(), key.get()), 1);
  EXPECT_TRUE(TrustedAlone(cert.get()));
  EXPECT_EQ(X509_check_purpose(cert.get(), X509_PURPOSE_SSL_SERVER, 0), 1);
  EXPECT_EQ(X509_check_ca(cert.get()), 0);
  char cn[128] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert.get()), NID_commonName, cn, sizeof(cn));
  EXPECT_TRUE(std::regex_match(cn, std::regex("berth-7d9f@[0-9]+"))) << cn;

  // Valid now, for about a year.
  time_t now = std::time(nullptr);
  EXPECT_LT(X509_cmp_time(X509_get0_notBefore(cert.get()), &now), 0);
  time_t in_364_days = now + 364L * 24 * 3600;
  time_t in_366_days = now + 366L * 24 * 3600;
  EXPECT_GT(X509_cmp_time(X509_get0_notAfter(cert.get()), &in_364_days), 0);
  EXPECT_LT(X509_cmp_time(X509_get0_notAfter(cert.get()), &in_366_days), 0);
}

TEST(SelfSignedTest, EachStartGetsItsOwnKeyAndSerial) {
  const CertificateKeyPair a = GenerateSelfSigned("h", {}, {"127.0.0.1"});
  const CertificateKeyPair b = GenerateSelfSigned("h", {}, {"127.0.0.1"});
  EXPECT_NE(a.key_pem, b.key_pem);
  EXPECT_NE(ASN1_INTEGER_cmp(X509_get0_serialNumber(ParseCert(a.cert_pem).get()),
                             X509_get0_serialNumber(ParseCert(b.cert_pem).get())),
            0);
  EXPECT_NE(Sha256Fingerprint(a.cert_pem), Sha256Fingerprint(b.cert_pem));
  EXPECT_TRUE(
      std::regex_match(Sha256Fingerprint(a.cert_pem), std::regex("([0-9A-F]{2}:){31}[0-9A-F]{2}")));
}

TEST(SelfSignedTest, AHostNameIsOneEntryWhateverItContains) {
  const CertificateKeyPair pair = GenerateSelfSigned("x,IP:10.0.0.1", {}, {"::1"});
  EXPECT_EQ(AltNames(ParseCert(pair.cert_pem).get()),
            (std::set<std::string>{"DNS:x,IP:10.0.0.1", "IP:::1"}));
}

TEST(SelfSignedTest, ABadIpIsAnError) {
  EXPECT_THROW(GenerateSelfSigned("h", {}, {"256.0.0.1"}), std::runtime_error);
  EXPECT_THROW(Sha256Fingerprint("not a certificate"), std::runtime_error);
}

}  // namespace
}  // namespace berth::server
