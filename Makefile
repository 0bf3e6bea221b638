# copydesk build and checks. `make` with no target builds the binary.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
# The version and commit `copydesk version` reports (internal/buildinfo).
BI := github.com/copydesk/copydesk/internal/buildinfo
LDFLAGS := -s -w -X $(BI).version=$(VERSION) -X $(BI).commit=$(COMMIT)
# nomsgpack leaves out Gin's MessagePack codec, which copydesk never uses
# (6.5 MB of binary); everything else is the same as a plain go build.
BUILDFLAGS := -trimpath -tags nomsgpack -ldflags '$(LDFLAGS)'
# The release platforms of `make dist`.
PLATFORMS := linux/amd64 linux/arm64 darwin/arm64 windows/amd64

.PHONY: build dist docker test race vet lint fmt-check openapi bench run clean perf-me perf-lists perf-engines perf-start console console-check

build:
	CGO_ENABLED=0 go build $(BUILDFLAGS) -o copydesk .

# Static binaries for every release platform, with the version stamped, and
# their SHA256SUMS, in dist/.
dist:
	rm -rf dist && mkdir -p dist
	set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; ext=; [ "$$os" = windows ] && ext=.exe; \
		echo "dist/copydesk-$(VERSION)-$$os-$$arch$$ext"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build $(BUILDFLAGS) -o dist/copydesk-$(VERSION)-$$os-$$arch$$ext .; \
	done
	cd dist && if command -v sha256sum >/dev/null; then sha256sum copydesk-* > SHA256SUMS; else shasum -a 256 copydesk-* > SHA256SUMS; fi
	cat dist/SHA256SUMS

# The container image (needs a Docker engine).
docker:
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t copydesk:$(VERSION) .

run:
	go run . serve

# The web console (docs/console.md): rebuild web/console/dist from its
# sources (commit the result: the binary embeds it), and its checks and
# browser tests (node 20+, Debian's chromium).
console:
	cd web/console && npm ci --no-audit --no-fund && npm run build

console-check: console
	cd web/console && npm run check && npm run budget && npm test

test:
	go test ./...

race:
	go test -race ./...

vet:
	go vet ./...

# The same linters, at the same versions, as .ci/run.
LINTBIN ?= $(HOME)/.cache/copydesk-lint
lint:
	GOBIN=$(LINTBIN) go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
	GOBIN=$(LINTBIN) go install github.com/kisielk/errcheck@v1.30.0
	$(LINTBIN)/staticcheck ./...
	$(LINTBIN)/errcheck -ignoretests -exclude .errcheck-excludes ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Rewrite web/openapi.json from the route table.
openapi:
	go test ./server -run TestOpenAPIDocumentIsCurrent -update

bench:
	go test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf copydesk dist

# GET /api/auth/me versus a bare JWT-verifying Gin handler, with wrk.
perf-me:
	go run ./server/authbench/cmd -connections 50 -duration 10s -rounds 3

# GET /api/agents?per_page=50 over 10,000 agents and POST /api/agents versus
# a bare Gin + JWT + SQLite list (COUNT + 50 rows) and create (one INSERT
# ... RETURNING), with wrk.
perf-lists:
	go run ./server/authbench/cmd -bench list,create -connections 50 -duration 10s -rounds 3

# Every scenario (sign-in, /api/auth/me, the list, the create) on SQLite and
# on PostgreSQL in the same alternating rounds, PostgreSQL in a throwaway
# cluster with its default (durable) settings (scripts/with-postgres.sh).
perf-engines:
	COPYDESK_PG_SETTINGS= scripts/with-postgres.sh sh -c 'go run ./server/authbench/cmd -bench signin,me,list,create -database "$$COPYDESK_TEST_DATABASE" -connections 50 -duration 10s -rounds 3'

# Start to first /api/health answer and RSS at idle on a fresh data
# directory, and the time of `copydesk version`, of the `make build` binary.
perf-start: build
	go run ./internal/perfstart -bin ./copydesk -rounds 7
