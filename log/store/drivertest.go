package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fmtlog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"
)

// countingSigner counts the checkpoints it signs.
type countingSigner struct {
	note.Signer
	n atomic.Int64
}

func (s *countingSigner) Sign(msg []byte) ([]byte, error) {
	s.n.Add(1)
	return s.Signer.Sign(msg)
}

// TestDriver runs the contract of Driver, and what the log relies on from
// the appender and reader Tessera builds on it, against an implementation.
// fresh returns, for one new and empty storage, a function that opens a
// Driver of it: called again, it opens the same storage again, as after a
// restart.
func TestDriver(t *testing.T, fresh func(t *testing.T) func() Driver) {
	ctx := context.Background()
	skey, vkey, err := note.GenerateKey(rand.Reader, "driver.test/log")
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	const interval = 100 * time.Millisecond
	// start starts an appender on d, and returns it with its signer; it
	// is shut down when the test ends, unless stop is called first.
	type running struct {
		add    func(data []byte) tessera.IndexFuture
		reader tessera.LogReader
		signer *countingSigner
		stop   func()
	}
	start := func(t *testing.T, d Driver, republish bool) *running {
		t.Helper()
		s, err := note.NewSigner(skey)
		if err != nil {
			t.Fatal(err)
		}
		cs := &countingSigner{Signer: s}
		runCtx, cancel := context.WithCancel(ctx)
		drv, err := d.Open(runCtx, DriverOptions{Republish: republish})
		if err != nil {
			cancel()
			t.Fatalf("Open = %v", err)
		}
		opts := tessera.NewAppendOptions().WithCheckpointSigner(cs).WithBatching(64, 5*time.Millisecond).
			WithCheckpointInterval(interval).WithCheckpointRepublishInterval(time.Hour)
		a, shutdown, r, err := tessera.NewAppender(runCtx, drv, opts)
		if err != nil {
			cancel()
			t.Fatalf("tessera.NewAppender on the driver = %v", err)
		}
		var once sync.Once
		stop := func() {
			once.Do(func() {
				sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
				defer scancel()
				if err := shutdown(sctx); err != nil {
					t.Errorf("shutting the appender down: %v", err)
				}
				cancel()
			})
		}
		t.Cleanup(stop)
		return &running{add: func(data []byte) tessera.IndexFuture { return a.Add(ctx, tessera.NewEntry(data)) }, reader: r, signer: cs, stop: stop}
	}
	reader := func(t *testing.T, d Driver) tessera.LogReader {
		t.Helper()
		r, err := d.Reader(ctx)
		if err != nil {
			t.Fatalf("Reader = %v", err)
		}
		return r
	}
	waitFor := func(t *testing.T, what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	entry := func(i int) []byte { return fmt.Appendf(nil, "entry %d of the driver test", i) }
	// checkTree checks, through r, that the tree holds exactly the n
	// entries of entry(0) to entry(n-1): every bundle, the tiles, and the
	// published checkpoint of size n.
	checkTree := func(t *testing.T, r tessera.LogReader, n int) {
		t.Helper()
		waitFor(t, fmt.Sprintf("an integrated size of %d", n), func() bool {
			s, err := r.IntegratedSize(ctx)
			return err == nil && s >= uint64(n)
		})
		if next, err := r.NextIndex(ctx); err != nil || next < uint64(n) {
			t.Errorf("NextIndex = %d, %v; want at least the integrated size %d", next, err, n)
		}
		rf := compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
		rng := rf.NewEmptyRange(0)
		for ri := range layout.Range(0, uint64(n), uint64(n)) {
			raw, err := r.ReadEntryBundle(ctx, ri.Index, ri.Partial)
			if err != nil {
				t.Fatalf("ReadEntryBundle(%d, %d) = %v", ri.Index, ri.Partial, err)
			}
			var b api.EntryBundle
			if err := b.UnmarshalText(raw); err != nil || uint(len(b.Entries)) < ri.First+ri.N {
				t.Fatalf("entry bundle %d: %d entries, %v", ri.Index, len(b.Entries), err)
			}
			for j := ri.First; j < ri.First+ri.N; j++ {
				i := int(ri.Index)*layout.EntryBundleWidth + int(j)
				if !bytes.Equal(b.Entries[j], entry(i)) {
					t.Fatalf("entry %d = %q, want %q", i, b.Entries[j], entry(i))
				}
				rng.Append(rfc6962.DefaultHasher.HashLeaf(b.Entries[j]), nil)
			}
		}
		root, err := rng.GetRootHash(nil)
		if err != nil {
			t.Fatal(err)
		}
		var cp *fmtlog.Checkpoint
		waitFor(t, fmt.Sprintf("a checkpoint of size %d", n), func() bool {
			raw, err := r.ReadCheckpoint(ctx)
			if err != nil {
				return false
			}
			c, _, _, err := fmtlog.ParseCheckpoint(raw, verifier.Name(), verifier)
			if err != nil {
				t.Fatalf("the published checkpoint does not verify: %v", err)
			}
			cp = c
			return c.Size >= uint64(n)
		})
		if cp.Size != uint64(n) || !bytes.Equal(cp.Hash, root) {
			t.Fatalf("checkpoint of size %d root %x; the %d entries hash to %x", cp.Size, cp.Hash, n, root)
		}
		pb, err := client.NewProofBuilder(ctx, uint64(n), r.ReadTile)
		if err != nil {
			t.Fatalf("reading the tiles of size %d: %v", n, err)
		}
		for _, i := range []int{0, n / 2, n - 1} {
			p, err := pb.InclusionProof(ctx, uint64(i))
			if err != nil {
				t.Fatalf("inclusion proof of %d: %v", i, err)
			}
			if err := proof.VerifyInclusion(rfc6962.DefaultHasher, uint64(i), uint64(n), rfc6962.DefaultHasher.HashLeaf(entry(i)), p, root); err != nil {
				t.Fatalf("the tiles give a wrong inclusion proof of %d: %v", i, err)
			}
		}
	}

	t.Run("new storage", func(t *testing.T) {
		r := reader(t, fresh(t)())
		if _, err := r.ReadCheckpoint(ctx); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("ReadCheckpoint of new storage = %v, want os.ErrNotExist", err)
		}
		if n, err := r.IntegratedSize(ctx); err != nil || n != 0 {
			t.Errorf("IntegratedSize of new storage = %d, %v; want 0", n, err)
		}
		if _, err := r.ReadTile(ctx, 0, 0, 1); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("ReadTile of new storage = %v, want os.ErrNotExist", err)
		}
		if _, err := r.ReadEntryBundle(ctx, 0, 1); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("ReadEntryBundle of new storage = %v, want os.ErrNotExist", err)
		}
	})

	t.Run("sequencing and integration", func(t *testing.T) {
		d := fresh(t)()
		run := start(t, d, false)
		// One total order: indexes are given in the order of the Add
		// calls, each once.
		const n = 300
		futures := make([]tessera.IndexFuture, n)
		for i := range futures {
			futures[i] = run.add(entry(i))
		}
		for i, f := range futures {
			idx, err := f()
			if err != nil {
				t.Fatalf("Add(%d) = %v", i, err)
			}
			if idx.Index != uint64(i) {
				t.Fatalf("Add number %d was given index %d", i, idx.Index)
			}
		}
		checkTree(t, run.reader, n)
		// The driver's own reader, beside the appender, sees the same.
		checkTree(t, reader(t, d), n)
		// A partial resource gives the full one once it replaced it.
		r := reader(t, d)
		full, err := r.ReadTile(ctx, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := r.ReadTile(ctx, 0, 0, 7); err != nil || len(got) < 7*32 || !bytes.Equal(got[:7*32], full[:7*32]) {
			t.Errorf("ReadTile(0, 0, 7) of a tree of %d = %d bytes, %v; want the first 7 hashes of the full tile", n, len(got), err)
		}
		if got, err := r.ReadEntryBundle(ctx, 0, 7); err != nil || CheckEntryBundle(got, 7) != nil {
			t.Errorf("ReadEntryBundle(0, 7) of a tree of %d = %d bytes, %v", n, len(got), err)
		}
		// Concurrent Adds: each index once, none skipped.
		var wg sync.WaitGroup
		var mu sync.Mutex
		seen := map[uint64]bool{}
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < 25; i++ {
					idx, err := run.add(fmt.Appendf(nil, "concurrent %d %d", w, i))()
					mu.Lock()
					if err != nil || seen[idx.Index] || idx.Index < n || idx.Index >= n+100 {
						t.Errorf("concurrent Add = %d, %v", idx.Index, err)
					}
					seen[idx.Index] = true
					mu.Unlock()
				}
			}(w)
		}
		wg.Wait()
	})

	t.Run("durable across a restart", func(t *testing.T) {
		open := fresh(t)
		run := start(t, open(), false)
		const n = 20
		for i := 0; i < n; i++ {
			if _, err := run.add(entry(i))(); err != nil {
				t.Fatal(err)
			}
		}
		checkTree(t, run.reader, n)
		run.stop()
		d := open()
		checkTree(t, reader(t, d), n)
		run = start(t, d, false)
		if idx, err := run.add(entry(n))(); err != nil || idx.Index != n {
			t.Fatalf("Add after a restart = %d, %v; want %d", idx.Index, err, n)
		}
		checkTree(t, run.reader, n+1)
	})

	t.Run("republish", func(t *testing.T) {
		open := fresh(t)
		run := start(t, open(), false)
		if _, err := run.add(entry(0))(); err != nil {
			t.Fatal(err)
		}
		checkTree(t, run.reader, 1)
		run.stop()
		// The tree has not grown: without Republish, nothing is signed
		// again before the republish interval.
		run = start(t, open(), false)
		time.Sleep(5 * interval)
		if n := run.signer.n.Load(); n != 0 {
			t.Errorf("%d checkpoints signed of a tree that did not grow, without Republish", n)
		}
		run.stop()
		run = start(t, open(), true)
		waitFor(t, "a checkpoint signed again with Republish", func() bool { return run.signer.n.Load() > 0 })
	})
}

// TestLease runs the contract of Lease against an implementation: acquire
// tries to take a lease of one storage, the same each time.
func TestLease(t *testing.T, acquire func() (Lease, error)) {
	l1, err := acquire()
	if err != nil {
		t.Fatalf("acquire = %v", err)
	}
	if lost := l1.Lost(); lost != nil {
		select {
		case <-lost:
			t.Errorf("a lease just acquired is lost")
		default:
		}
	}
	if _, err := acquire(); !errors.Is(err, ErrLeaseHeld) {
		t.Errorf("acquire while it is held = %v, want ErrLeaseHeld", err)
	}
	l1.Release()
	l1.Release() // safe twice
	l2, err := acquire()
	if err != nil {
		t.Fatalf("acquire after Release = %v", err)
	}
	if _, err := acquire(); !errors.Is(err, ErrLeaseHeld) {
		t.Errorf("acquire while it is held again = %v, want ErrLeaseHeld", err)
	}
	l2.Release()
}
