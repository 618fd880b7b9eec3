# Glovebox as a container: Debian with Chromium, `glovebox serve` as the entry point, the data
# directory (records, tokens, profiles, artifacts) as a volume. Build: docker build -t glovebox .
# A sample deployment with Prometheus scraping it: deploy/compose.yaml.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p glovebox

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends chromium ca-certificates fonts-dejavu-core \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --create-home --home-dir /var/lib/glovebox --uid 10001 glovebox
COPY --from=build /src/target/release/glovebox /usr/local/bin/glovebox
USER glovebox
ENV GLOVEBOX_DATA_DIR=/var/lib/glovebox \
    GLOVEBOX_CHROMIUM=/usr/bin/chromium \
    GLOVEBOX_BIND=0.0.0.0:7777
VOLUME ["/var/lib/glovebox"]
EXPOSE 7777
# Off loopback, /mcp and /metrics need the bearer token: the data directory's mcp-token (made at
# the first start) or GLOVEBOX_TOKEN. /healthz and /readyz answer without one.
ENTRYPOINT ["glovebox", "serve"]
