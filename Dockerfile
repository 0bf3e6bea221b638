# copydesk container image: a static binary on an empty base, run as a
# non-root user, with its data in the /data volume.
#
#   docker build -t copydesk .
#   docker run -d -p 127.0.0.1:8080:8080 --stop-timeout 40 \
#       -v copydesk-data:/data --name copydesk copydesk
#   docker exec -it copydesk /copydesk users create --email you@example.com \
#       --username admin --role super_admin --password-stdin
#
# The port is published on loopback: registration is open until an admin
# closes it, so put a reverse proxy with TLS in front before publishing it
# further. --stop-timeout 40 (Compose: stop_grace_period: 40s) gives a stop
# the 30 s shutdown timeout, within which requests finish and background
# work stops cleanly; Docker's default of 10 s would kill it first.
# Exports are rendered under /data/tmp: the image has no /tmp.
#
# The build stage fetches only Go modules (through GOPROXY); the final image
# holds the binary, CA certificates for HTTPS calls to providers and sites,
# and nothing else: no shell, no package manager.

ARG GO_VERSION=1.26
FROM golang:${GO_VERSION}-alpine AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=docker
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath -tags nomsgpack \
      -ldflags "-s -w -X github.com/copydesk/copydesk/internal/buildinfo.version=${VERSION} -X github.com/copydesk/copydesk/internal/buildinfo.commit=${COMMIT}" \
      -o /out/copydesk . \
 && mkdir -p /out/data && chown 65532:65532 /out/data && chmod 0700 /out/data

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/copydesk /copydesk
COPY --from=build --chown=65532:65532 /out/data /data
# An unprivileged user id that exists nowhere else: the image has no
# /etc/passwd, and needs none.
USER 65532:65532
ENV COPYDESK_HTTP=0.0.0.0:8080 \
    COPYDESK_DATA_DIR=/data \
    COPYDESK_LOG_FORMAT=json
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/copydesk", "healthcheck"]
# The default shutdown timeout (30 s) fits in `docker run --stop-timeout 40`
# (or `docker stop -t 40`); see the header.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/copydesk"]
CMD ["serve"]
