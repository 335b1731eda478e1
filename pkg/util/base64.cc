#include "pkg/util/base64.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstddef>

namespace berth::util {
namespace {

// OpenSSL counts in int; the text goes through in pieces well inside that, each a whole number of
// base64 quanta (3 bytes in, 4 characters out).
constexpr size_t kQuanta = 1 << 20;

bool InAlphabet(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  // Room for the largest piece's characters and the NUL EVP_EncodeBlock ends them with.
  std::string chunk((std::min(bytes.size(), kQuanta * 3) + 2) / 3 * 4 + 1, '\0');
  while (!bytes.empty()) {
    const size_t take = std::min(bytes.size(), kQuanta * 3);
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(chunk.data()),
                                  reinterpret_cast<const unsigned char*>(bytes.data()),
                                  static_cast<int>(take));
    out.append(chunk.data(), static_cast<size_t>(n));
    bytes.remove_prefix(take);
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  std::string symbols;
  symbols.reserve(text.size());
  for (const char c : text) {
    if (c != '\r' && c != '\n') symbols += c;
  }
  if (symbols.size() % 4 != 0) return std::nullopt;
  // EVP_DecodeBlock reads '=' as zero bits anywhere and trims surrounding whitespace, so the
  // text is checked first: the alphabet, then at most two '=' at the very end.
  size_t padding = 0;
  while (padding < 2 && padding < symbols.size() && symbols[symbols.size() - 1 - padding] == '=') {
    ++padding;
  }
  if (!std::all_of(symbols.begin(), symbols.end() - static_cast<std::ptrdiff_t>(padding),
                   InAlphabet)) {
    return std::nullopt;
  }
  std::string out;
  out.reserve(symbols.size() / 4 * 3);
  std::string chunk(std::min(symbols.size(), kQuanta * 4) / 4 * 3, '\0');
  std::string_view rest = symbols;
  while (!rest.empty()) {
    const size_t take = std::min(rest.size(), kQuanta * 4);
    const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(chunk.data()),
                                  reinterpret_cast<const unsigned char*>(rest.data()),
                                  static_cast<int>(take));
    if (n < 0) return std::nullopt;
    out.append(chunk.data(), static_cast<size_t>(n));
    rest.remove_prefix(take);
  }
  // EVP_DecodeBlock writes a zero byte for each '=' of the last quantum.
  out.resize(out.size() - padding);
  return out;
}

}  // namespace berth::util
