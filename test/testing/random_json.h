#ifndef BERTH_TEST_TESTING_RANDOM_JSON_H_
#define BERTH_TEST_TESTING_RANDOM_JSON_H_

#include <cstdint>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace berth::api {

// A random JSON value: nested containers, strings with escapes and multi-byte characters,
// integers at the 64-bit edges, and floats.
// Shared by the parser tests that compare two parsers on generated documents.
inline nlohmann::json RandomJsonValue(std::mt19937_64& rng, int depth) {
  using json = nlohmann::json;
  std::uniform_int_distribution<int> kind(0, depth > 4 ? 5 : 7);
  static const char* const kPieces[] = {"a", "Z", "\"", "\\", "/",  "\n", "\t",  "\x01",
                                        "é", "€", "😀",  " ",  "{}", ",:", "\x7f"};
  auto random_string = [&] {
    std::string s;
    const int n = std::uniform_int_distribution<int>(0, 12)(rng);
    for (int i = 0; i < n; i++) s += kPieces[rng() % std::size(kPieces)];
    return s;
  };
  switch (kind(rng)) {
    case 0:
      return nullptr;
    case 1:
      return rng() % 2 == 0;
    case 2: {
      static const int64_t kInts[] = {0, -1, 1, INT64_MIN, INT64_MAX, -42, 1000000007};
      return kInts[rng() % std::size(kInts)];
    }
    case 3:
      return rng() % 2 == 0 ? json(UINT64_MAX) : json(static_cast<uint64_t>(rng()));
    case 4:
      return std::uniform_real_distribution<double>(-1e6, 1e6)(rng);
    case 5:
      return random_string();
    case 6: {
      json a = json::array();
      const int n = std::uniform_int_distribution<int>(0, 4)(rng);
      for (int i = 0; i < n; i++) a.push_back(RandomJsonValue(rng, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      const int n = std::uniform_int_distribution<int>(0, 4)(rng);
      for (int i = 0; i < n; i++) o[random_string()] = RandomJsonValue(rng, depth + 1);
      return o;
    }
  }
}

}  // namespace berth::api

#endif  // BERTH_TEST_TESTING_RANDOM_JSON_H_
