package log

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/datadir"
	"github.com/memtrail/memtrail/witness"
	"github.com/memtrail/memtrail/witness/sqlitestore"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/api/layout"
)

// TestRewitnessAtStart: a log started with a witness policy whose
// published checkpoint lacks the quorum publishes a cosigned checkpoint of
// the same tree without waiting for an entry, and archives it in place of
// the unwitnessed one. A later fail-open re-publication of the same tree
// without the quorum does not replace the cosigned one in the archive.
func TestRewitnessAtStart(t *testing.T) {
	ctx := context.Background()
	tl := newTestLog(t)
	var last *Accepted
	for i := range 3 {
		last = tl.mustSubmit(tl.projection("urn:p:" + string(rune('a'+i))))
	}
	unwitnessed, err := tl.WaitPublished(ctx, last.Index)
	if err != nil {
		t.Fatal(err)
	}
	size := last.Index + 1
	waitArchived(t, tl.Log, size)
	if err := tl.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// An in-process witness that knows the log.
	wkey, wvkey, err := witness.GenerateKey("witness.test/w")
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlitestore.Open(filepath.Join(t.TempDir(), "witness.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	w, err := witness.New(ctx, witness.Config{Key: wkey, Store: store, Logs: []witness.Log{{Origin: tl.Origin(), VKey: tl.VerifierKey()}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(w.Handler())
	wg, err := tessera.NewWitnessGroupFromPolicy([]byte("log " + tl.VerifierKey() + "\nwitness w " + wvkey + " " + srv.URL + "\nquorum w\n"))
	if err != nil {
		t.Fatal(err)
	}
	if wg.Satisfied(unwitnessed) {
		t.Fatal("the unwitnessed checkpoint satisfies the policy")
	}
	open := func(failOpen bool) *Log {
		l, err := Open(ctx, Config{Storage: openStorage(t, tl.dir), SigningKey: tl.skey, Trust: tl.s.Trust(tl.now), CheckpointInterval: 100 * time.Millisecond,
			Witnesses: &wg, WitnessTimeout: 500 * time.Millisecond, WitnessFailOpen: failOpen})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	published := func(l *Log, what string, cond func([]byte) bool) []byte {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if raw, cp, err := l.Checkpoint(ctx); err == nil && cond(raw) {
				if cp.Size != size {
					t.Fatalf("%s: published size %d, want %d (no entry was added)", what, cp.Size, size)
				}
				return raw
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 10s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	l := open(false)
	cosigned := published(l, "cosigned checkpoint of the idle log", wg.Satisfied)
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 10s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("the cosigned checkpoint archived", func() bool {
		b, err := l.checkpoints.Get(ctx, size)
		return err == nil && wg.Satisfied(b)
	})
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// The witness gone, fail-open, and the same tree published again
	// without it (Tessera does so once the checkpoint is older than the
	// republish interval: the file time is set back to get there now).
	srv.Close()
	l = open(true)
	defer l.Close(ctx)
	past := time.Now().Add(-2 * republishInterval(100*time.Millisecond))
	if err := os.Chtimes(filepath.Join(tl.dir, datadir.Tiles, layout.CheckpointPath), past, past); err != nil {
		t.Fatal(err)
	}
	published(l, "fail-open re-publication", func(raw []byte) bool { return !wg.Satisfied(raw) })
	time.Sleep(300 * time.Millisecond) // a few archiving passes
	if b, err := l.checkpoints.Get(ctx, size); err != nil || string(b) != string(cosigned) {
		t.Errorf("archived checkpoint of size %d after a fail-open re-publication = %q, %v; want the cosigned one", size, b, err)
	}
}
