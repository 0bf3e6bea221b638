# copydesk build and checks. `make` with no target builds the binary.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)

.PHONY: build test race vet lint fmt-check openapi bench run clean perf-me perf-lists

build:
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o copydesk .

run:
	go run . serve

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
	rm -f copydesk

# GET /api/auth/me versus a bare JWT-verifying Gin handler, with wrk.
perf-me:
	go run ./server/authbench/cmd -connections 50 -duration 10s -rounds 3

# GET /api/agents?per_page=50 over 10,000 agents and POST /api/agents versus
# a bare Gin + JWT + SQLite list (COUNT + 50 rows) and create (one INSERT
# ... RETURNING), with wrk.
perf-lists:
	go run ./server/authbench/cmd -bench list,create -connections 50 -duration 10s -rounds 3
