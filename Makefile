# memtrail — common tasks. "make test" is what CI runs.

GO       ?= go
BIN      ?= bin/memtrail
PKGS     ?= ./...
FUZZTIME ?= 30s

.PHONY: all build run test test-crash vet bench bench-ingest fuzz clean

all: build

# -buildvcs=auto stamps the git revision into the binary ("memtrail
# version") even where GOFLAGS turns it off; a git worktree has none to give.
build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/memtrail

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
	MEMTRAIL_CRASH_TRIALS=$${MEMTRAIL_CRASH_TRIALS:-150} $(GO) test -count=1 -timeout 90m -run 'Crash' -v ./cmd/memtrail ./witness/...

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# bench-ingest reproduces the ingest figures of docs/PERFORMANCE.md, Rekor v2
# comparison included (it builds rekor-tiles on first use).
bench-ingest: build
	./$(BIN) bench ingest --modes raw,batch,single,wait,rekor,rate --total 100000 --wait-total 20000 --wait-clients 1000 --single-clients 1000

# fuzz runs every fuzz target for FUZZTIME each (a duration such as 30s, or
# an execution count such as 1000000x). A target fails only on a finding: an
# input written to testdata/fuzz. Go 1.26's coordinator can end a timed run
# with a bare "context deadline exceeded" and no input (golang/go#75804);
# that is reported and the run goes on.
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$target"; \
	    before=$$(ls $$dir/testdata/fuzz/$$target 2>/dev/null | wc -l); \
	    if ! $(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; then \
	      after=$$(ls $$dir/testdata/fuzz/$$target 2>/dev/null | wc -l); \
	      if [ "$$after" -gt "$$before" ]; then echo "== FINDING: $$pkg $$target (see $$dir/testdata/fuzz/$$target)"; exit 1; fi; \
	      echo "== $$target: the run ended without a finding (no input written; golang/go#75804)"; \
	    fi; \
	  done; \
	done

clean:
	rm -rf bin
