// Replays fuzz inputs through a target's LLVMFuzzerTestOneInput without libFuzzer, so the seed
// corpus and every crash reproducer kept in it run in the ordinary (g++) unit tests.
//
//   fuzz_<target>_replay <file or directory>...

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "test/fuzz/fuzz.h"

namespace {

namespace fs = std::filesystem;

// Whether `path` could be read; its bytes go through the target.
bool Replay(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    return false;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg(argv[i]);
    if (fs::is_directory(arg)) {
      for (const fs::directory_entry& entry : fs::directory_iterator(arg)) {
        if (entry.is_regular_file()) inputs.push_back(entry.path());
      }
    } else {
      inputs.push_back(arg);
    }
  }
  // An empty corpus would pass without running the target once.
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no inputs in the arguments\n");
    return 1;
  }
  std::sort(inputs.begin(), inputs.end());
  for (const fs::path& input : inputs) {
    if (!Replay(input)) return 1;
  }
  std::printf("replay: %zu inputs ran\n", inputs.size());
  return 0;
}
