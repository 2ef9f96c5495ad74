package api

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"
)

// fillLog submits n projection records concurrently and waits until a
// published checkpoint covers them.
func (ts *testServer) fillLog(prefix string, n int) {
	ts.t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			if code, _, body := ts.do("POST", "/v1/projections", "application/json", ts.projection(fmt.Sprint("urn:interop:", prefix, ":", i))); code != 201 {
				ts.t.Errorf("submission %d: %d %s", i, code, body)
			}
		}(i)
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	size, _ := ts.l.IntegratedSize(ctx)
	if _, err := ts.l.WaitPublished(ctx, size-1); err != nil {
		ts.t.Fatal(err)
	}
}

// TestTesseraFsck runs Tessera's own fsck against a running memtrail: it
// fetches the checkpoint, every tile and every entry bundle over the
// tlog-tiles API and checks them against each other.
func TestTesseraFsck(t *testing.T) {
	ts := newTestServer(t)
	ts.fillLog("a", 700)
	keyFile := filepath.Join(t.TempDir(), "log.vkey")
	os.WriteFile(keyFile, []byte(ts.vkey), 0o644)
	cmd := exec.Command("go", "run", "github.com/transparency-dev/tessera/cmd/fsck@v1.0.4",
		"--storage_url="+ts.srv.URL+"/", "--public_key="+keyFile, "--ui=false", "--N=4")
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("Tessera fsck: %v\n%s", err, out)
	}
	t.Logf("Tessera fsck passed:\n%s", lastLines(out, 3))
}

func lastLines(b []byte, n int) string {
	lines := 0
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			lines++
			if lines > n {
				return string(b[i+1:])
			}
		}
	}
	return string(b)
}

// TestTesseraClient verifies inclusion and consistency with Tessera's
// client package against the served tiles.
func TestTesseraClient(t *testing.T) {
	ts := newTestServer(t)
	ts.fillLog("a", 300)
	ctx := context.Background()
	u, _ := url.Parse(ts.srv.URL + "/")
	f, err := client.NewHTTPFetcher(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(ts.vkey)
	if err != nil {
		t.Fatal(err)
	}
	cp1, raw1, _, err := client.FetchCheckpoint(ctx, f.ReadCheckpoint, v, v.Name())
	if err != nil {
		t.Fatal(err)
	}
	tracker, err := client.NewLogStateTracker(ctx, f.ReadTile, raw1, v, v.Name(), client.UnilateralConsensus(f.ReadCheckpoint))
	if err != nil {
		t.Fatal(err)
	}
	pb, err := client.NewProofBuilder(ctx, cp1.Size, f.ReadTile)
	if err != nil {
		t.Fatal(err)
	}
	for _, idx := range []uint64{0, 1, 255, 256, cp1.Size - 1} {
		bundle, err := client.GetEntryBundle(ctx, f.ReadEntryBundle, idx/256, cp1.Size)
		if err != nil {
			t.Fatal(err)
		}
		leaf := bundle.Entries[idx%256]
		p, err := pb.InclusionProof(ctx, idx)
		if err != nil {
			t.Fatal(err)
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, idx, cp1.Size, rfc6962.DefaultHasher.HashLeaf(leaf), p, cp1.Hash); err != nil {
			t.Errorf("inclusion of %d: %v", idx, err)
		}
	}
	// Grow the log and follow it: the tracker checks consistency.
	ts.fillLog("b", 50)
	if _, _, _, err := tracker.Update(ctx); err != nil {
		t.Fatalf("consistency with Tessera's tracker: %v", err)
	}
	if got := tracker.Latest().Size; got <= cp1.Size {
		t.Errorf("tracker did not advance: %d", got)
	}
}
