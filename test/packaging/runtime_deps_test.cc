// The Dockerfile's runtime stage installs exactly `deploy/install-deps.sh --runtime` onto
// debian:bookworm-slim. This checks that list covers every shared library the built
// berth-scheduler loads: each library `ldd` resolves is mapped to its Debian package with
// `dpkg -S`, and that package must be on the list. A new link dependency without a list entry
// would build and pass every other test, then fail at container start.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "test/packaging/chart.h"
#include "test/testing/cluster.h"
#include "test/testing/process.h"

namespace berth::packaging {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// The final stage of the Dockerfile, from its FROM line on.
std::string RuntimeStage() {
  std::string dockerfile = ReadFile(testing::RepoRoot() + "/Dockerfile");
  size_t last_from = dockerfile.rfind("\nFROM ");
  if (last_from == std::string::npos) throw std::runtime_error("Dockerfile has no FROM line");
  return dockerfile.substr(last_from + 1);
}

// Package name owning `path` ("libssl3"), trying the /usr-merged twin, which dpkg's database may
// record instead of the path the loader reports. Empty when no package owns it.
std::string OwningPackage(const std::string& path) {
  std::vector<std::string> candidates = {path};
  std::error_code ec;
  std::string canonical = std::filesystem::canonical(path, ec).string();
  if (!ec && canonical != path) candidates.push_back(canonical);
  for (const std::string& p : std::vector<std::string>(candidates)) {
    if (p.rfind("/usr/", 0) == 0) {
      candidates.push_back(p.substr(4));
    } else {
      candidates.push_back("/usr" + p);
    }
  }
  for (const std::string& candidate : candidates) {
    CommandResult result = RunCommand({"dpkg", "-S", candidate});
    if (result.exit_code != 0) continue;
    for (const std::string& line : Lines(result.out)) {
      if (line.rfind("diversion ", 0) == 0) continue;
      std::string package = line.substr(0, line.find(": "));
      return package.substr(0, package.find(':'));  // Drop ":amd64".
    }
  }
  return "";
}

// An instrumented build (make sanitize / make tsan) loads its sanitizer's runtime, which no
// release image ships; a release build must load none.
bool IsSanitizerRuntime(const std::string& package) {
#ifdef BERTH_SANITIZER_BUILD
  for (const char* prefix : {"libasan", "libubsan", "libtsan", "liblsan"}) {
    if (package.rfind(prefix, 0) == 0) return true;
  }
#else
  (void)package;
#endif
  return false;
}

TEST(RuntimeDeps, DockerfileRuntimeStageInstallsTheRuntimeList) {
  std::string stage = RuntimeStage();
  EXPECT_THAT(stage, ::testing::StartsWith("FROM debian:bookworm-slim"));
  EXPECT_THAT(stage, HasSubstr("install-deps.sh --runtime"));
  EXPECT_THAT(stage, HasSubstr("/usr/local/bin/berth-scheduler"));
  EXPECT_THAT(stage, ::testing::ContainsRegex("\nUSER [0-9]+:[0-9]+"));
}

TEST(RuntimeDeps, EveryLoadedLibraryIsOnTheRuntimeList) {
  std::string binary = testing::BinaryPath("berth-scheduler");
  ASSERT_TRUE(std::filesystem::exists(binary)) << binary << " is not built";

  CommandResult listed =
      RunCommand({testing::RepoRoot() + "/deploy/install-deps.sh", "--print-runtime"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  std::vector<std::string> lines = Lines(listed.out);
  std::set<std::string> runtime(lines.begin(), lines.end());

  CommandResult ldd = RunCommand({"ldd", binary});
  ASSERT_EQ(ldd.exit_code, 0) << ldd.out << ldd.err;
  // "libssl.so.3 => /lib/x86_64-linux-gnu/libssl.so.3 (0x...)", the loader as
  // "/lib64/ld-linux-x86-64.so.2 (0x...)", and "linux-vdso.so.1 (0x...)" (in the kernel).
  static const std::regex kResolved(R"(^\s*(\S+) => (/\S+) \(0x[0-9a-f]+\)$)");
  static const std::regex kLoader(R"(^\s*(/\S+) \(0x[0-9a-f]+\)$)");
  std::map<std::string, std::string> package_of;  // library path -> package
  for (const std::string& line : Lines(ldd.out)) {
    std::smatch match;
    if (line.find("not found") != std::string::npos) {
      ADD_FAILURE() << "unresolved library: " << line;
    } else if (std::regex_match(line, match, kResolved) || std::regex_match(line, match, kLoader)) {
      std::string path = match[match.size() - 1];
      package_of[path] = OwningPackage(path);
    } else {
      EXPECT_THAT(line, HasSubstr("linux-vdso")) << "unexpected ldd line";
    }
  }
  // libc, libstdc++, OpenSSL, libcurl at the very least.
  ASSERT_GE(package_of.size(), 4u) << ldd.out;

  std::set<std::string> missing;
  for (const auto& [path, package] : package_of) {
    if (IsSanitizerRuntime(package)) continue;
    if (package.empty()) {
      ADD_FAILURE() << path << " belongs to no Debian package, so no apt install can provide it";
    } else if (!runtime.contains(package)) {
      std::string entry = package;
      entry.append(" (").append(path).append(")");
      missing.insert(entry);
    }
  }
  EXPECT_TRUE(missing.empty())
      << "berth-scheduler loads libraries from packages missing from RUNTIME_PACKAGES in "
         "deploy/install-deps.sh (the Dockerfile's runtime stage would lack them): "
      << ::testing::PrintToString(missing);
}

// One library per job: libcurl makes every outgoing request and Boost.Beast (header-only) serves
// the secure port, so cpprestsdk, which once did both, is not loaded at all.
TEST(RuntimeDeps, NoSecondHttpStackIsLoaded) {
  const std::string binary = testing::BinaryPath("berth-scheduler");
  ASSERT_TRUE(std::filesystem::exists(binary)) << binary << " is not built";
  CommandResult ldd = RunCommand({"ldd", binary});
  ASSERT_EQ(ldd.exit_code, 0) << ldd.out << ldd.err;
  EXPECT_THAT(ldd.out, HasSubstr("libcurl"));
  for (const std::string& line : Lines(ldd.out)) {
    EXPECT_THAT(line, ::testing::Not(HasSubstr("libcpprest")));
  }
}

}  // namespace
}  // namespace berth::packaging
