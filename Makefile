# memtrail — common tasks. "make test" is what CI runs.

GO       ?= go
BIN      ?= bin/memtrail
PKGS     ?= ./...
FUZZTIME ?= 30s

.PHONY: all build run test test-crash vet bench bench-ingest fuzz clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/memtrail

# run starts the log on its embedded defaults: data in ./memtrail-data,
# listening on 127.0.0.1:8080, keys generated on first run.
run: build
	./$(BIN) serve

vet:
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test: vet
	$(GO) test -count=1 -timeout 20m $(PKGS)

# test-crash kills the log and the witness with SIGKILL under load, many
# times, and checks their invariants after every restart.
test-crash:
	MEMTRAIL_CRASH_TRIALS=$${MEMTRAIL_CRASH_TRIALS:-150} $(GO) test -count=1 -timeout 60m -run 'Crash' -v ./cmd/memtrail ./witness/...

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# bench-ingest reproduces the ingest figures of docs/PERFORMANCE.md, Rekor v2
# comparison included (it builds rekor-tiles on first use).
bench-ingest: build
	./$(BIN) bench ingest --modes raw,batch,single,wait,rekor,rate --total 100000 --wait-total 20000 --wait-clients 1000 --single-clients 1000

# fuzz runs every fuzz target for FUZZTIME each.
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$target"; \
	    $(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf bin
