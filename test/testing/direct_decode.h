#ifndef BERTH_TEST_TESTING_DIRECT_DECODE_H_
#define BERTH_TEST_TESTING_DIRECT_DECODE_H_

// The random half of the direct protobuf decoders' tests (pkg/api/protobuf_direct.cc): a direct
// decoder against the general path over random messages and damaged copies of them.

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "test/testing/proto_writer.h"

namespace berth::testing {

// What the random message builders share: a seeded generator, its choices, and whether the message
// being built used only values the direct decoder accepts (a builder clears valid_ when it picks
// one that it must refuse).
class RandomMessage {
 public:
  explicit RandomMessage(uint64_t seed) : rng_(seed) {}

  // Whether the last message built used only values the direct decoder accepts.
  bool valid() const { return valid_; }
  // Flips, drops or duplicates bytes.
  std::string Damage(std::string message) { return DamageBytes(rng_, std::move(message)); }

 protected:
  bool Chance(int percent) { return Pick(1, 100) <= percent; }
  int Pick(int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng_); }

  std::mt19937_64 rng_;
  bool valid_ = true;
};

// A message the direct decoder must leave to the general path, and what that path makes of it:
// `general_error` empty when it decodes the message, kAnyError when it refuses it whatever the
// words, else its exact error.
struct DeclinedMessage {
  static constexpr const char* kAnyError = "*";
  std::string name;
  std::string message;
  std::string general_error;
};

template <typename Direct, typename General>
void ExpectLeftToTheGeneralPath(const std::vector<DeclinedMessage>& cases, Direct direct,
                                General general) {
  for (const DeclinedMessage& c : cases) {
    EXPECT_FALSE(direct(c.message).has_value()) << c.name;
    const auto [object, error] = general(c.message);
    if (c.general_error == DeclinedMessage::kAnyError) {
      EXPECT_FALSE(object.has_value()) << c.name;
    } else if (c.general_error.empty()) {
      EXPECT_TRUE(object.has_value()) << c.name << ": " << error;
    } else {
      EXPECT_EQ(error, c.general_error) << c.name;
    }
  }
}

// Builds `count` messages with `random` (Build(), valid(): whether the last one used valid values
// only, Damage(message)) and checks each and one damaged copy: a message of valid values only must
// be decoded directly, and whatever `direct` decodes must be what `general` gives (the object, or
// the error text when it refuses). `kind` names the object in failure messages.
template <typename T, typename Random, typename Direct, typename General>
void ExpectDirectDecodingAgrees(const char* kind, Random& random, int count, Direct direct,
                                General general) {
  int valid = 0;
  int decoded = 0;
  int damaged_decoded = 0;
  for (int i = 0; i < count; i++) {
    const std::string message = random.Build();
    const std::optional<T> object = direct(message);
    if (random.valid()) {
      valid++;
      EXPECT_TRUE(object.has_value()) << kind << " " << i << " uses only valid values";
    }
    if (object) {
      decoded++;
      const std::pair<std::optional<T>, std::string> expected = general(message);
      ASSERT_TRUE(expected.first.has_value()) << kind << " " << i << ": " << expected.second;
      ASSERT_EQ(*object, *expected.first) << kind << " " << i;
    }
    const std::string damaged = random.Damage(message);
    if (const std::optional<T> from_damaged = direct(damaged)) {
      damaged_decoded++;
      const std::pair<std::optional<T>, std::string> expected = general(damaged);
      ASSERT_TRUE(expected.first.has_value())
          << "damaged " << kind << " " << i << ": " << expected.second;
      ASSERT_EQ(*from_damaged, *expected.first) << "damaged " << kind << " " << i;
    }
  }
  // The generator must exercise both sides of every choice.
  EXPECT_GT(valid, count / 4);
  EXPECT_LT(valid, count * 9 / 10);
  EXPECT_GE(decoded, valid);
  EXPECT_GT(damaged_decoded, count / 40);
}

}  // namespace berth::testing

#endif  // BERTH_TEST_TESTING_DIRECT_DECODE_H_
