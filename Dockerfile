# The hub as a container image, for serving a team over HTTP
# (README: "Running for a team"). Two targets:
#
#   docker build -t dynamic-mcp .                      # default: static binary on distroless (a 26 MB binary)
#   docker build --target with-node -t dynamic-mcp:node .  # Debian slim with Node 22, for npx stdio servers
#
#   docker run -p 127.0.0.1:8080:8080 -e DYNAMIC_MCP_TOKEN=... \
#     -v ./config.yaml:/etc/dynamic-mcp/config.yaml:ro -v dmcp-state:/var/lib/dynamic-mcp dynamic-mcp
#
# The default image has no shell, no package manager and no Node: its
# upstreams are remote (url:) servers, or static binaries copied into a
# derived image. A config whose groups start `npx ...` needs with-node.
# The default image has no HEALTHCHECK: distroless has no curl and the
# hub no probe command; the balancer (a Kubernetes readinessProbe, a
# cloud load balancer) asks GET /readyz itself. with-node asks it with
# node. cmd/dynamic-mcp/dockerfile_test.go runs this
# file's build command and CMD, so that they cannot rot unseen.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Pure Go: the keychain library (zalando/go-keyring) talks D-Bus itself,
# and in a container without a Secret Service the vault's key is kept in
# a file under the state dir.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/dynamic-mcp ./cmd/dynamic-mcp
RUN mkdir -p /out/state

# with-node: for configs that start stdio servers with npx (the reference
# servers, most community servers). Runs as the image's non-root "node".
FROM node:22-bookworm-slim AS with-node
COPY --from=build /out/dynamic-mcp /usr/local/bin/dynamic-mcp
COPY --from=build --chown=node:node /out/state /var/lib/dynamic-mcp
ENV DYNAMIC_MCP_HOME=/var/lib/dynamic-mcp DYNAMIC_MCP_LOG_FORMAT=json
USER node
EXPOSE 8080
# Node is here, so Docker can ask /readyz itself (no curl in either image).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/readyz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
VOLUME /var/lib/dynamic-mcp
ENTRYPOINT ["dynamic-mcp"]
CMD ["serve", "--http", "0.0.0.0:8080", "-c", "/etc/dynamic-mcp/config.yaml"]

# The default target: the static binary alone, as distroless's nonroot
# user (65532).
FROM gcr.io/distroless/static-debian12:nonroot AS hub
COPY --from=build /out/dynamic-mcp /usr/local/bin/dynamic-mcp
COPY --from=build --chown=65532:65532 /out/state /var/lib/dynamic-mcp
# The state dir (pins, audit trail, sign-ins, the vault) is a volume, so
# that it outlives the container. Logs are JSON lines on stderr.
ENV DYNAMIC_MCP_HOME=/var/lib/dynamic-mcp DYNAMIC_MCP_LOG_FORMAT=json
USER 65532:65532
# "--http :8080" would listen on loopback only (the hub's rule for a bare
# port), out of reach of the container's published port.
EXPOSE 8080
VOLUME /var/lib/dynamic-mcp
ENTRYPOINT ["dynamic-mcp"]
CMD ["serve", "--http", "0.0.0.0:8080", "-c", "/etc/dynamic-mcp/config.yaml"]
