# Multi-stage build on Debian bookworm. The builder uses the same install script as developers
# and CI (deploy/install-deps.sh); the runtime stage installs only the shared libraries the
# binary links against (deploy/install-deps.sh --runtime) and runs as a non-root user.
FROM debian:bookworm AS builder
WORKDIR /src
COPY deploy/install-deps.sh deploy/install-deps.sh
RUN deploy/install-deps.sh
COPY . .
RUN cmake -S . -B _output/build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBERTH_WERROR=ON \
 && cmake --build _output/build --target berth-scheduler -j"$(nproc)" \
 && strip _output/bin/berth-scheduler

FROM debian:bookworm-slim
COPY deploy/install-deps.sh /tmp/install-deps.sh
RUN /tmp/install-deps.sh --runtime && rm -rf /var/lib/apt/lists/* /tmp/install-deps.sh
COPY --from=builder /src/_output/bin/berth-scheduler /usr/local/bin/berth-scheduler
USER 65532:65532
ENTRYPOINT ["berth-scheduler"]
