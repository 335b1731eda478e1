#include "pkg/server/certificate.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <array>
#include <cstdio>
#include <ctime>
#include <memory>
#include <stdexcept>

namespace berth::server {
namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
template <typename T, void (*Free)(T*)>
using Owned = std::unique_ptr<T, Deleter<T, Free>>;

using Key = Owned<EVP_PKEY, EVP_PKEY_free>;
using Cert = Owned<X509, X509_free>;
using Bio = Owned<BIO, BIO_free_all>;
using Bignum = Owned<BIGNUM, BN_free>;
using Extension = Owned<X509_EXTENSION, X509_EXTENSION_free>;

void FreeGeneralNames(GENERAL_NAMES* names) { GENERAL_NAMES_free(names); }
using GeneralNames = Owned<GENERAL_NAMES, FreeGeneralNames>;

[[noreturn]] void Fail(const std::string& what) {
  std::string message = "certificate: " + what;
  if (unsigned long code = ERR_get_error(); code != 0) {
    std::array<char, 256> text{};
    ERR_error_string_n(code, text.data(), text.size());
    message += std::string(": ") + text.data();
  }
  ERR_clear_error();
  throw std::runtime_error(message);
}

void Check(int ok, const char* what) {
  if (ok != 1) Fail(what);
}

std::string Drain(BIO* bio) {
  char* data = nullptr;
  const long length = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(length));
}

void AddDnsName(GENERAL_NAMES* names, const std::string& name) {
  GENERAL_NAME* general = GENERAL_NAME_new();
  ASN1_IA5STRING* text = ASN1_IA5STRING_new();
  if (general == nullptr || text == nullptr ||
      ASN1_STRING_set(text, name.data(), static_cast<int>(name.size())) != 1) {
    GENERAL_NAME_free(general);
    ASN1_IA5STRING_free(text);
    Fail("DNS name \"" + name + "\"");
  }
  GENERAL_NAME_set0_value(general, GEN_DNS, text);
  if (sk_GENERAL_NAME_push(names, general) == 0) {
    GENERAL_NAME_free(general);
    Fail("DNS name \"" + name + "\"");
  }
}

void AddIp(GENERAL_NAMES* names, const std::string& ip) {
  ASN1_OCTET_STRING* address = a2i_IPADDRESS(ip.c_str());
  if (address == nullptr) Fail("not an IP address: \"" + ip + "\"");
  GENERAL_NAME* general = GENERAL_NAME_new();
  if (general == nullptr) {
    ASN1_OCTET_STRING_free(address);
    Fail("IP address");
  }
  GENERAL_NAME_set0_value(general, GEN_IPADD, address);
  if (sk_GENERAL_NAME_push(names, general) == 0) {
    GENERAL_NAME_free(general);
    Fail("IP address");
  }
}

void AddExtension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  Extension extension(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (!extension || X509_add_ext(cert, extension.get(), -1) != 1) {
    Fail(std::string("extension ") + OBJ_nid2sn(nid));
  }
}

}  // namespace

CertificateKeyPair GenerateSelfSigned(const std::string& host,
                                      const std::vector<std::string>& dns_names,
                                      const std::vector<std::string>& ips,
                                      std::chrono::hours validity) {
  Key key(EVP_EC_gen("P-256"));
  if (!key) Fail("generating the key");
  Cert cert(X509_new());
  if (!cert) Fail("X509_new");
  Check(X509_set_version(cert.get(), X509_VERSION_3), "version");

  // A random 128-bit serial: two restarts never present different certificates under one serial.
  Bignum serial(BN_new());
  if (!serial || BN_rand(serial.get(), 128, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) == nullptr) {
    Fail("serial number");
  }
  if (X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(cert.get()),
                      std::chrono::duration_cast<std::chrono::seconds>(validity).count()) ==
          nullptr) {
    Fail("validity");
  }
  Check(X509_set_pubkey(cert.get(), key.get()), "public key");

  // CommonName is at most 64 characters.
  const std::string common_name =
      (host + "@" + std::to_string(static_cast<long long>(std::time(nullptr)))).substr(0, 64);
  X509_NAME* name = X509_get_subject_name(cert.get());
  Check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                   reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                   -1, 0),
        "subject");
  Check(X509_set_issuer_name(cert.get(), name), "issuer");

  AddExtension(cert.get(), NID_basic_constraints, "critical,CA:FALSE");
  AddExtension(cert.get(), NID_key_usage, "critical,digitalSignature");
  AddExtension(cert.get(), NID_ext_key_usage, "serverAuth");
  AddExtension(cert.get(), NID_subject_key_identifier, "hash");
  // Built name by name rather than from a "DNS:a,IP:b" string, so an odd host name can only be
  // itself, never extra entries.
  GeneralNames names(sk_GENERAL_NAME_new_null());
  if (!names) Fail("subjectAltName");
  if (!host.empty()) AddDnsName(names.get(), host);
  for (const std::string& dns : dns_names) {
    if (dns != host) AddDnsName(names.get(), dns);
  }
  for (const std::string& ip : ips) AddIp(names.get(), ip);
  Check(X509_add1_ext_i2d(cert.get(), NID_subject_alt_name, names.get(), 0, X509V3_ADD_DEFAULT),
        "subjectAltName");

  if (X509_sign(cert.get(), key.get(), EVP_sha256()) <= 0) Fail("signing");

  CertificateKeyPair pair;
  Bio cert_bio(BIO_new(BIO_s_mem()));
  if (!cert_bio || PEM_write_bio_X509(cert_bio.get(), cert.get()) != 1) Fail("PEM certificate");
  pair.cert_pem = Drain(cert_bio.get());
  Bio key_bio(BIO_new(BIO_s_mem()));
  if (!key_bio || PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr,
                                           nullptr) != 1) {
    Fail("PEM key");
  }
  pair.key_pem = Drain(key_bio.get());
  return pair;
}

std::string Sha256Fingerprint(const std::string& cert_pem) {
  Bio bio(BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size())));
  Cert cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!cert) Fail("not a PEM certificate");
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  Check(X509_digest(cert.get(), EVP_sha256(), digest.data(), &length), "digest");
  std::string out;
  for (unsigned int i = 0; i < length; i++) {
    std::array<char, 4> hex{};
    std::snprintf(hex.data(), hex.size(), "%s%02X", i == 0 ? "" : ":", digest[i]);
    out += hex.data();
  }
  return out;
}

}  // namespace berth::server
