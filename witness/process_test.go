package witness_test

import (
	"os"
	"sync"
	"testing"

	"github.com/memtrail/memtrail/witness/internal/witnesstest"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// buildMemtrail builds the memtrail command once per test binary and
// returns its path.
func buildMemtrail(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "memtrail-witness-test-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin, buildErr = witnesstest.BuildMemtrail(dir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// startWitness runs "memtrail witness serve" with args and waits until it
// listens.
func startWitness(t testing.TB, bin string, args ...string) *witnesstest.Process {
	t.Helper()
	p, err := witnesstest.Start(bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
