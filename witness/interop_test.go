package witness_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/memtrail/memtrail/witness"
	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/storage/posix"
	"golang.org/x/mod/sumdb/note"
)

// TestTesseraInterop has our witness, the "memtrail witness serve" binary,
// cosign a log that is not ours: a Tessera v1.0.4 POSIX log, configured with
// a witness policy naming our witness and driven by Tessera's own witness
// client. (Tessera's POSIX conformance binary has no witness option, so
// the same POSIX storage runs in process here.) Every checkpoint Tessera
// publishes must carry our cosignature, verifiable with
// transparency-dev/formats/note, over several rounds of growth, so the
// client goes through its 409 recovery and consistency proofs.
func TestTesseraInterop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const origin = "example.com/tessera-interop"
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	logSigner, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	logVerifier, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	logsFile := filepath.Join(dir, "logs")
	if err := os.WriteFile(logsFile, witness.FormatLogs([]witness.Log{{Origin: origin, VKey: vkey}}), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startWitness(t, buildMemtrail(t), "--data", filepath.Join(dir, "witness"), "--logs", logsFile, "--name", "witness.example.com/interop")
	defer p.Stop(30 * time.Second)
	cosigV, err := fnote.NewVerifierForCosignatureV1(p.VKey)
	if err != nil {
		t.Fatal(err)
	}

	policy := fmt.Sprintf("log %s\nwitness w1 %s %s\nquorum w1\n", vkey, p.VKey, p.URL())
	group, err := tessera.NewWitnessGroupFromPolicy([]byte(policy))
	if err != nil {
		t.Fatal(err)
	}
	driver, err := posix.New(ctx, posix.Config{Path: filepath.Join(dir, "log")})
	if err != nil {
		t.Fatal(err)
	}
	appender, shutdown, reader, err := tessera.NewAppender(ctx, driver, tessera.NewAppendOptions().
		WithCheckpointSigner(logSigner).
		WithCheckpointInterval(100*time.Millisecond).
		WithBatching(64, 20*time.Millisecond).
		WithWitnesses(group, &tessera.WitnessOptions{Timeout: 10 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background())
	awaiter := tessera.NewPublicationAwaiter(ctx, reader.ReadCheckpoint, 20*time.Millisecond)

	var lastSize uint64
	for round := range 4 {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var maxIdx uint64
		for i := range 10 + round*37 {
			wg.Go(func() {
				idx, cp, err := awaiter.Await(ctx, appender.Add(ctx, tessera.NewEntry([]byte(fmt.Sprintf("round %d entry %d", round, i)))))
				if err != nil {
					t.Errorf("round %d: adding entry %d: %v", round, i, err)
					return
				}
				checkWitnessed(t, cp, logVerifier, cosigV)
				mu.Lock()
				maxIdx = max(maxIdx, idx.Index)
				mu.Unlock()
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		cp, err := reader.ReadCheckpoint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, size, _ := checkWitnessed(t, cp, logVerifier, cosigV)
		if size <= maxIdx || size <= lastSize {
			t.Fatalf("round %d: published size %d, want above index %d and above the previous %d", round, size, maxIdx, lastSize)
		}
		lastSize = size
	}

	// The witness serves the same history: the size it holds is at least
	// the one published last, and its checkpoint verifies.
	resp, err := http.Get(p.URL() + checkpointPath(origin))
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET checkpoint = %d %q", resp.StatusCode, served)
	}
	if _, size, _ := checkWitnessed(t, served, logVerifier, cosigV); size < lastSize {
		t.Fatalf("witness serves size %d, below the published %d", size, lastSize)
	}
}

// checkWitnessed checks that a checkpoint verifies with the log's key and
// carries a cosignature of the witness, and returns it parsed.
func checkWitnessed(t *testing.T, cp []byte, logV, cosigV note.Verifier) (string, uint64, []byte) {
	t.Helper()
	if _, err := note.Open(cp, note.VerifierList(logV)); err != nil {
		t.Fatalf("checkpoint %q does not verify with the log key: %v", cp, err)
	}
	n, err := note.Open(cp, note.VerifierList(cosigV))
	if err != nil {
		t.Fatalf("checkpoint %q carries no valid cosignature of our witness: %v", cp, err)
	}
	if len(n.Sigs) != 1 || n.Sigs[0].Name != cosigV.Name() {
		t.Fatalf("checkpoint %q: cosignatures %v", cp, n.Sigs)
	}
	if _, err := fnote.CoSigV1Timestamp(n.Sigs[0]); err != nil {
		t.Fatalf("cosignature timestamp: %v", err)
	}
	return parseServed(t, cp)
}
