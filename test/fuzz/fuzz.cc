#include "test/fuzz/fuzz.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace berth::fuzz {

void Require(bool holds, const char* what, std::string_view detail) {
  if (holds) return;
  std::fprintf(stderr, "fuzz: property violated: %s\n", what);
  if (!detail.empty()) {
    std::fprintf(stderr, "fuzz: %.*s\n", static_cast<int>(detail.size()), detail.data());
  }
  std::abort();
}

SplitInput Split(std::string_view input) {
  SplitInput split;
  if (input.empty()) return split;
  const size_t count = static_cast<unsigned char>(input[0]) & 7;
  input.remove_prefix(1);
  std::vector<size_t> sizes;
  bool any_nonzero = false;
  for (size_t i = 0; i < count && !input.empty(); ++i) {
    sizes.push_back(static_cast<unsigned char>(input[0]));
    any_nonzero = any_nonzero || sizes.back() != 0;
    input.remove_prefix(1);
  }
  split.payload = input;
  if (!any_nonzero) {
    for (size_t i = 0; i < sizes.size(); ++i) split.pieces.emplace_back();
    split.pieces.push_back(input);
    return split;
  }
  for (size_t i = 0; !input.empty(); i = (i + 1) % sizes.size()) {
    const size_t take = std::min(sizes[i], input.size());
    split.pieces.push_back(input.substr(0, take));
    input.remove_prefix(take);
  }
  return split;
}

}  // namespace berth::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  berth::fuzz::FuzzOneInput({reinterpret_cast<const char*>(data), size});
  return 0;
}
