#ifndef BERTH_TEST_FUZZ_FUZZ_H_
#define BERTH_TEST_FUZZ_FUZZ_H_

// What the fuzz targets of test/fuzz share. Each target defines FuzzOneInput over one parser of
// bytes from outside the process, and fuzz.cc's LLVMFuzzerTestOneInput calls it. libFuzzer drives
// that in the clang build (`make fuzz`); replay_main.cc feeds it the committed corpus in the unit
// tests. A parser rejecting an input with
// its documented exception is the expected outcome; any other exception escapes the target, and
// libFuzzer and the replay test both report it.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace berth::fuzz {

// Runs one input through the target's parser and checks what it promises. Each target (one
// *_fuzzer.cc per executable) defines it once.
void FuzzOneInput(std::string_view input);

// Aborts with `what` (and `detail`) on stderr unless `holds`: a property the code under test
// promises failed, and the input is kept as a crash.
void Require(bool holds, const char* what, std::string_view detail = {});

// An input that is fed to a streaming parser in pieces, as network reads deliver a body. The
// first byte's low three bits say how many piece sizes follow, one byte each (0: an empty piece);
// the rest is the payload, cut into pieces of those sizes in turn until it is used up. No sizes,
// or only zero sizes, feed the payload whole.
struct SplitInput {
  std::string_view payload;
  std::vector<std::string_view> pieces;
};
SplitInput Split(std::string_view input);

}  // namespace berth::fuzz

#endif  // BERTH_TEST_FUZZ_FUZZ_H_
