#!/usr/bin/env bash
# Installs the Debian packages Berth needs. Idempotent: when every package is already
# installed it asks apt nothing and returns at once.
#
#   deploy/install-deps.sh            build + test + runtime packages (developer machine, CI)
#   deploy/install-deps.sh --fuzz     those plus clang and its libFuzzer runtime (make fuzz)
#   deploy/install-deps.sh --runtime  only the shared libraries berth-scheduler links against
#   deploy/install-deps.sh --print-runtime   print that runtime list (the Dockerfile test reads it)
#
# The same script serves the Dockerfile's builder stage and the machine.
set -euo pipefail

# Shared libraries the berth-scheduler binary loads at run time. The Dockerfile's runtime stage
# installs exactly these; test/packaging checks every library `ldd` reports is covered.
RUNTIME_PACKAGES=(
  ca-certificates
  libssl3
  libprometheus-cpp-core1.0
  libprometheus-cpp-pull1.0
  libspdlog1.10
  libfmt9
  libyaml-cpp0.7
  libstdc++6
  libgcc-s1
  libc6
  zlib1g
  libbrotli1
  # The Kubernetes client's HTTP/2 and HTTP/1.1 (pkg/client/curl_transport.cc), with nghttp2.
  libcurl4
  libnghttp2-14
  # RE2 (libre2-dev's runtime half): the regular expressions of DRA device selectors' CEL
  # (pkg/cel), which DynamicResources evaluates.
  libre2-9
  # What libcurl4 itself loads (apt installs them with it; listed for the packaging test,
  # which checks every library ldd reports).
  libcom-err2
  libffi8
  libgmp10
  libgnutls30
  libgssapi-krb5-2
  libhogweed6
  libidn2-0
  libk5crypto3
  libkeyutils1
  libkrb5-3
  libkrb5support0
  libldap-2.5-0
  libnettle8
  libp11-kit0
  libpsl5
  librtmp1
  libsasl2-2
  libssh2-1
  libtasn1-6
  libunistring2
  libzstd1
)

BUILD_PACKAGES=(
  build-essential
  cmake
  ninja-build
  pkg-config
  git
  libcurl4-openssl-dev
  # Boost.Beast and Boost.Asio (the secure port's HTTP server and the tests' fake apiserver):
  # header-only, in the unversioned Boost headers package, named here since nothing else pulls it in.
  libboost-dev
  libssl-dev
  nlohmann-json3-dev
  prometheus-cpp-dev
  libspdlog-dev
  libfmt-dev
  libyaml-cpp-dev
  libgtest-dev
  libgmock-dev
  zlib1g-dev
  # RE2, the regular expressions of the DRA selectors' CEL (pkg/cel): Go's regexp syntax.
  libre2-dev
)

# Tools the tests and scripts run: openssl mints the local control plane's PKI, curl probes
# it, clang-format/clang-tidy keep the style, prometheus is scraped by the e2e tests.
TEST_PACKAGES=(
  openssl
  curl
  procps
  psmisc
  iproute2
  python3
  clang-format
  clang-tidy
  prometheus
)

# The fuzz targets (test/fuzz) are built with clang, whose libFuzzer runtime ships apart from it;
# only `make fuzz` needs them, so the image's builder stage does without.
FUZZ_PACKAGES=(
  clang-14
  libclang-rt-14-dev
)

mode=all
case "${1:-}" in
  --runtime) mode=runtime ;;
  --fuzz) mode=fuzz ;;
  --print-runtime) printf '%s\n' "${RUNTIME_PACKAGES[@]}"; exit 0 ;;
  "") ;;
  *) echo "usage: $0 [--fuzz|--runtime|--print-runtime]" >&2; exit 2 ;;
esac

if [[ $mode == runtime ]]; then
  wanted=("${RUNTIME_PACKAGES[@]}")
elif [[ $mode == fuzz ]]; then
  wanted=("${RUNTIME_PACKAGES[@]}" "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}" "${FUZZ_PACKAGES[@]}")
else
  wanted=("${RUNTIME_PACKAGES[@]}" "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}")
fi

missing=()
for pkg in "${wanted[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing Debian packages: ${missing[*]}" >&2
  echo "install-deps: run this script as root (or install them with apt-get)" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The prometheus package starts a system service on install; the e2e tests run their own.
if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null 2>&1; then
  systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
echo "install-deps: done"
