# syntax=docker/dockerfile:1
#
# Ripple's image for docker buildx users. `make image` builds the same
# image from the same sources without a container engine or a base image
# (hack/release; see the README's "Install"); this file is for those who
# build with buildx instead. The builder runs on the build platform and
# cross-compiles for each target (no emulation):
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=<the chart's appVersion> \
#     --build-arg REVISION=$(git rev-parse HEAD) \
#     -t <registry>/ripple:<the chart's appVersion> --push .

# The Go release must satisfy go.mod's go line (test/chart checks it).
ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
# Dependencies first, so that a source change reuses the module download.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
# Set by buildx for each target platform.
ARG TARGETOS TARGETARCH
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath \
      -ldflags "-s -w -X github.com/ripple-dev/ripple/internal/version.Version=${VERSION}" \
      -o /out/ripple ./cmd/ripple

# The nonroot user 65532, CA certificates and /tmp, as `make image` puts
# beside the binary (there, the CA certificates come from the pinned Go
# module golang.org/x/crypto/x509roots/fallback; here, from distroless).
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="ripple" \
      org.opencontainers.image.description="Rolls workloads when the ConfigMaps and Secrets they use change; a drop-in replacement for Stakater Reloader." \
      org.opencontainers.image.source="https://github.com/ripple-dev/ripple" \
      org.opencontainers.image.url="https://github.com/ripple-dev/ripple" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/ripple /ripple
# Numerically, so that runAsNonRoot can check it.
USER 65532:65532
# Metrics (/metrics) and health (/live, /healthz, /readyz).
EXPOSE 9090
ENTRYPOINT ["/ripple"]
