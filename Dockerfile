# SPDX-License-Identifier: MIT
# stategraph serve in a container: the Debian packages built from this tree (scripts/package),
# installed on debian:12-slim. Data in the /data volume, the API on port 2024.
#   docker build -t stategraph .
#   docker run -p 2024:2024 -v stategraph-data:/data -e STATEGRAPH_API_KEY=... stategraph
# The server binds 0.0.0.0 in the container, so it wants an API key: STATEGRAPH_API_KEY, or
# STATEGRAPH_API_KEY_FILE=/run/secrets/NAME for a secret (STATEGRAPH_ALLOW_PUBLIC=1 serves
# without one). Your own graphs: mount a stategraph.json and its graph libraries, and set
# STATEGRAPH_CONFIG (docs/install.md).

FROM debian:12-slim AS build
WORKDIR /src
COPY . .
RUN scripts/package

FROM debian:12-slim
COPY --from=build /src/dist/stategraph_*.deb /tmp/
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       /tmp/stategraph_*.deb curl ca-certificates \
    && rm -rf /var/lib/apt/lists/* /tmp/*.deb \
    && useradd --system --uid 10001 --home-dir /data stategraph \
    && mkdir -p /data && chown stategraph:stategraph /data
USER stategraph
WORKDIR /data
VOLUME /data
ENV STATEGRAPH_HOST=0.0.0.0 STATEGRAPH_PORT=2024 STATEGRAPH_DB=/data
EXPOSE 2024
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD curl -fsS http://127.0.0.1:2024/ok || exit 1
ENTRYPOINT ["stategraph", "serve"]
