package log

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/internal/tlogfmt"
	"github.com/memtrail/memtrail/log/posixstore"
	"github.com/memtrail/memtrail/log/sqliteindex"
	"github.com/memtrail/memtrail/log/store"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
	"github.com/transparency-dev/tessera"
)

type testLog struct {
	*Log
	t    *testing.T
	dir  string
	skey string
	s    *gen.Signers
	now  time.Time
}

func openTestLog(t *testing.T, dir, skey string, s *gen.Signers) *testLog {
	t.Helper()
	return openTestLogOn(t, dir, skey, s, openStorage(t, dir))
}

// openTestLogOn opens a test log on the storage parts given.
func openTestLogOn(t *testing.T, dir, skey string, s *gen.Signers, parts store.Parts) *testLog {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	l, err := Open(context.Background(), Config{
		Storage:            parts,
		SigningKey:         skey,
		Trust:              s.Trust(now.Add(-time.Hour)),
		BatchMaxAge:        5 * time.Millisecond,
		CheckpointInterval: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return &testLog{Log: l, t: t, dir: dir, skey: skey, s: s, now: now}
}

func newTestLog(t *testing.T) *testLog {
	return newTestLogWith(t, func(*store.Parts) {})
}

// newTestLogWith opens a fresh test log whose embedded storage parts adjust
// may wrap first (a gated index, a driver that integrates late), closed when
// the test ends.
func newTestLogWith(t *testing.T, adjust func(*store.Parts)) *testLog {
	t.Helper()
	skey, _, err := GenerateLogKey("memtrail.test/log")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := gen.NewSigners()
	dir := t.TempDir()
	parts := openStorage(t, dir)
	adjust(&parts)
	tl := openTestLogOn(t, dir, skey, s, parts)
	t.Cleanup(func() { tl.Close(context.Background()) })
	return tl
}

func (tl *testLog) reopen() *testLog {
	tl.t.Helper()
	if err := tl.Close(context.Background()); err != nil {
		tl.t.Fatalf("Close: %v", err)
	}
	n := openTestLog(tl.t, tl.dir, tl.skey, tl.s)
	tl.t.Cleanup(func() { n.Close(context.Background()) })
	return n
}

func (tl *testLog) projection(id string) *receipts.Submission {
	tl.t.Helper()
	r, _, err := tl.s.Projection(id, time.Now().UTC(), 2, 64)
	if err != nil {
		tl.t.Fatal(err)
	}
	return &receipts.Submission{Receipt: r}
}

func (tl *testLog) compaction(id string, items []receipts.ManifestItem, supersedes string, purged []string) *receipts.Submission {
	tl.t.Helper()
	c, mf, err := tl.s.Compaction(id, items, supersedes, purged, nil)
	if err != nil {
		tl.t.Fatal(err)
	}
	return &receipts.Submission{Receipt: c, Manifest: mf}
}

func (tl *testLog) tombstone(id, item string) *receipts.Submission {
	tl.t.Helper()
	ts, err := tl.s.Tombstone(id, item, time.Now())
	if err != nil {
		tl.t.Fatal(err)
	}
	return &receipts.Submission{Receipt: ts}
}

func (tl *testLog) mustSubmit(sub *receipts.Submission) *Accepted {
	tl.t.Helper()
	acc, err := tl.Submit(context.Background(), sub)
	if err != nil {
		tl.t.Fatalf("Submit(%s %s): %v", sub.Receipt.Kind(), sub.Receipt.ID(), err)
	}
	return acc
}

func (tl *testLog) wantRefused(sub *receipts.Submission, code receipts.Code) error {
	tl.t.Helper()
	_, err := tl.Submit(context.Background(), sub)
	if got := receipts.ErrorCode(err); got != code {
		tl.t.Fatalf("Submit(%s %s) = %v (code %q), want %q", sub.Receipt.Kind(), sub.Receipt.ID(), err, got, code)
	}
	return err
}

func (tl *testLog) waitIndexed(n uint64) {
	tl.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for tl.indexer.watermark() < n {
		if time.Now().After(deadline) {
			tl.t.Fatalf("index watermark %d, want %d", tl.indexer.watermark(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSubmitAndReplay(t *testing.T) {
	tl := newTestLog(t)
	a := tl.mustSubmit(tl.projection("urn:p:1"))
	b := tl.mustSubmit(tl.projection("urn:p:2"))
	if a.Index != 0 || b.Index != 1 {
		t.Errorf("indexes %d, %d; want 0, 1", a.Index, b.Index)
	}
	// A replay is refused whether the first is still in memory or only in
	// the index.
	err := tl.wantRefused(tl.projection("urn:p:1"), receipts.CodeProjectionReplay)
	var re *ReplayError
	if !errors.As(err, &re) || re.FirstIndex != 0 {
		t.Errorf("replay error %v, want first index 0", err)
	}
	tl.waitIndexed(2)
	err = tl.wantRefused(tl.projection("urn:p:2"), receipts.CodeProjectionReplay)
	if !errors.As(err, &re) || re.FirstIndex != 1 {
		t.Errorf("replay error %v, want first index 1", err)
	}
	// Same id, other kind: separate namespaces.
	tl.mustSubmit(tl.tombstone("urn:p:1", receipts.Digest([]byte("x"))))
	leaf, err := tl.ReadLeaf(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := receipts.ParseReceipt(leaf); err != nil || r.ID() != "urn:p:1" {
		t.Errorf("leaf 0 = %v, %v", r, err)
	}
}

// TestLateRetryIsReplay: a record whose id is logged, sent again once it
// is too old to be accepted, is answered as the replay (naming the index),
// in memory and from the index; an unlogged id of the same age is stale.
func TestLateRetryIsReplay(t *testing.T) {
	tl := newTestLog(t)
	tl.mustSubmit(tl.projection("urn:p:a"))
	acc := tl.mustSubmit(tl.projection("urn:p:late"))
	old := func(id string) *receipts.Submission {
		// Older than the freshness window, within the key's validity.
		r, _, err := tl.s.Projection(id, time.Now().UTC().Add(-30*time.Minute), 2, 64)
		if err != nil {
			t.Fatal(err)
		}
		return &receipts.Submission{Receipt: r}
	}
	for _, when := range []string{"claimed in memory", "indexed"} {
		if when == "indexed" {
			tl.waitIndexed(2)
		}
		err := tl.wantRefused(old("urn:p:late"), receipts.CodeProjectionReplay)
		var re *ReplayError
		if !errors.As(err, &re) || re.FirstIndex != acc.Index {
			t.Errorf("%s: %v, want a replay naming index %d", when, err, acc.Index)
		}
	}
	_, err := tl.Submit(context.Background(), old("urn:p:never"))
	if c := receipts.ErrorCode(err); c != receipts.CodeTrustSnapshotStale && c != receipts.CodeRecordStale {
		t.Errorf("an old record of an unlogged id: %v, want it refused as stale", err)
	}
	// A record that is malformed or badly signed is refused for that,
	// logged id or not.
	bad := old("urn:p:late").Receipt.(*receipts.ProjectionRecord)
	bad.Proof.Signature[0] ^= 1
	tl.wantRefused(&receipts.Submission{Receipt: bad}, receipts.CodeSignatureInvalid)
}

func TestConcurrentSingleUse(t *testing.T) {
	tl := newTestLog(t)
	sub := tl.projection("urn:p:contested")
	const n = 1000
	var wg sync.WaitGroup
	results := make([]error, n)
	indexes := make([]uint64, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			acc, err := tl.Submit(context.Background(), sub)
			results[i] = err
			if err == nil {
				indexes[i] = acc.Index
			}
		}(i)
	}
	wg.Wait()
	ok, first := 0, uint64(0)
	for i, err := range results {
		if err == nil {
			ok++
			first = indexes[i]
		}
	}
	if ok != 1 {
		t.Fatalf("%d submissions accepted, want exactly 1", ok)
	}
	for _, err := range results {
		var re *ReplayError
		if err != nil && (!errors.As(err, &re) || re.FirstIndex != first) {
			t.Fatalf("refusal %v, want projection_replay naming index %d", err, first)
		}
	}
}

func TestVerificationRefusals(t *testing.T) {
	tl := newTestLog(t)
	other, _ := gen.NewSigners()
	r, _, _ := other.Projection("urn:p:other", time.Now(), 1, 10)
	tl.wantRefused(&receipts.Submission{Receipt: r}, receipts.CodeSignatureInvalid)
	old, _, _ := tl.s.Projection("urn:p:old", time.Now().Add(-10*time.Minute), 1, 10)
	tl.wantRefused(&receipts.Submission{Receipt: old}, receipts.CodeTrustSnapshotStale)
	future, _, _ := tl.s.Projection("urn:p:future", time.Now().Add(10*time.Minute), 1, 10)
	tl.wantRefused(&receipts.Submission{Receipt: future}, receipts.CodeRecordFromFuture)
	big, _, _ := tl.s.Projection("urn:p:big", time.Now(), 300, 200)
	tl.wantRefused(&receipts.Submission{Receipt: big}, receipts.CodeTooLarge)
	ots, _ := other.Tombstone("urn:t:x", receipts.Digest(nil), time.Now())
	tl.wantRefused(&receipts.Submission{Receipt: ots}, receipts.CodeKeyNotPinned)
	// Revocation takes effect for later submissions only.
	acc := tl.mustSubmit(tl.projection("urn:p:before-revocation"))
	tr := *tl.Trust()
	pin := *tr.Adapters[0]
	at := time.Now().Add(-time.Second)
	pin.RevokedAt = &at
	tr.Adapters = []*receipts.AdapterPin{&pin}
	tl.SetTrust(&tr)
	tl.wantRefused(tl.projection("urn:p:after-revocation"), receipts.CodeAdapterKeyRevoked)
	leaf, err := tl.ReadLeaf(context.Background(), acc.Index)
	if err != nil || tlogfmt.LeafHash(leaf) != acc.LeafHash {
		t.Errorf("entry logged before revocation changed: %v", err)
	}
	if size, _ := tl.IntegratedSize(context.Background()); size != 1 {
		t.Errorf("tree size %d after refusals, want 1", size)
	}
}

func TestLineage(t *testing.T) {
	tl := newTestLog(t)
	items := gen.Items("doc", 5)
	c1 := tl.compaction("urn:c:1", items, "", nil)
	tl.mustSubmit(c1)
	tl.wantRefused(c1, receipts.CodeCompactionReplay)
	// A compaction with the wrong ceiling never reaches the log.
	bad, mf, _ := tl.s.Compaction("urn:c:bad", items, "", nil, receipts.DefaultLattice)
	bad.InheritedSensitivityCeiling = "PUBLIC"
	bad, _ = receipts.SignCompaction(bad, tl.s.Compactor)
	tl.wantRefused(&receipts.Submission{Receipt: bad, Manifest: mf}, receipts.CodeSensitivityCeilingMismatch)

	// Purge item 2.
	purged := items[2].ItemDigest
	tl.mustSubmit(tl.tombstone("urn:t:1", purged))
	tl.wantRefused(tl.tombstone("urn:t:2", purged), receipts.CodeItemPurged)
	// Any new compaction including it is refused.
	tl.wantRefused(tl.compaction("urn:c:again", items, "", nil), receipts.CodeItemPurged)
	rest := append(append([]receipts.ManifestItem{}, items[:2]...), items[3:]...)
	// Supersession: wrong manifest, missing Bloom entry, unknown target.
	tl.wantRefused(tl.compaction("urn:c:2", rest[:3], "urn:c:1", []string{purged}), receipts.CodeSupersessionInvalid)
	tl.wantRefused(tl.compaction("urn:c:2", rest, "urn:c:1", nil), receipts.CodeSupersessionInvalid)
	tl.wantRefused(tl.compaction("urn:c:2", rest, "urn:c:none", []string{purged}), receipts.CodeSupersessionInvalid)
	reordered := []receipts.ManifestItem{rest[1], rest[0], rest[2], rest[3]}
	tl.wantRefused(tl.compaction("urn:c:2", reordered, "urn:c:1", []string{purged}), receipts.CodeSupersessionInvalid)
	tl.mustSubmit(tl.compaction("urn:c:2", rest, "urn:c:1", []string{purged}))
	// Only once.
	tl.wantRefused(tl.compaction("urn:c:3", rest, "urn:c:1", []string{purged}), receipts.CodeSupersessionInvalid)

	tl.waitIndexed(3)
	ctx := context.Background()
	c1i, err := tl.Index().Compaction(ctx, "urn:c:1")
	if err != nil || c1i.State() != "superseded" || c1i.SupersededBy != "urn:c:2" {
		t.Errorf("urn:c:1 = %+v, %v; want superseded by urn:c:2", c1i, err)
	}
	c2i, _ := tl.Index().Compaction(ctx, "urn:c:2")
	if c2i.State() != "current" || c2i.ItemCount != 4 {
		t.Errorf("urn:c:2 = %+v", c2i)
	}
	// Purging an item of the current compaction leaves it awaiting
	// re-compaction.
	tl.mustSubmit(tl.tombstone("urn:t:3", rest[0].ItemDigest))
	tl.waitIndexed(4)
	c2i, _ = tl.Index().Compaction(ctx, "urn:c:2")
	if c2i.State() != "awaiting_recompaction" || c2i.PurgedItems != 1 {
		t.Errorf("urn:c:2 after purge = %+v", c2i)
	}
	inc, _ := tl.Index().CompactionsIncluding(ctx, rest[1].ItemDigest)
	if len(inc) != 2 {
		t.Errorf("item included by %d compactions, want 2", len(inc))
	}
	// The lineage survives a restart.
	tl2 := tl.reopen()
	tl2.mustSubmit(tl2.compaction("urn:c:4", rest[1:], "urn:c:2", []string{rest[0].ItemDigest}))
	tl2.wantRefused(tl2.compaction("urn:c:5", rest[1:], "urn:c:2", []string{rest[0].ItemDigest}), receipts.CodeSupersessionInvalid)
}

func TestConcurrentLineage(t *testing.T) {
	// Tombstones racing compactions: whatever the interleaving, no
	// compaction logged after a tombstone includes its item.
	tl := newTestLog(t)
	items := gen.Items("race", 40)
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(2)
		go func(i int) {
			defer wg.Done()
			tl.Submit(context.Background(), tl.tombstone(fmt.Sprint("urn:t:", i), items[i].ItemDigest))
		}(i)
		go func(i int) {
			defer wg.Done()
			tl.Submit(context.Background(), tl.compaction(fmt.Sprint("urn:c:", i), items[i:i+1], "", nil))
		}(i)
	}
	wg.Wait()
	size, _ := tl.IntegratedSize(context.Background())
	tombstoned := map[string]uint64{}
	for i := uint64(0); i < size; i++ {
		leaf, err := tl.ReadLeaf(context.Background(), i)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := receipts.ParseReceipt(leaf)
		switch r := r.(type) {
		case *receipts.Tombstone:
			tombstoned[r.ItemDigest] = i
		case *receipts.Compaction:
			raw, _ := tl.Manifests().Get(context.Background(), r.SourceItemsMerkleRoot)
			mf, _ := receipts.ParseManifest(raw)
			for _, it := range mf.Items {
				if at, ok := tombstoned[it.ItemDigest]; ok {
					t.Errorf("compaction %s at %d includes %s tombstoned at %d", r.EventID, i, it.ItemDigest, at)
				}
			}
		}
	}
	if len(tombstoned) != 40 {
		t.Errorf("%d tombstones logged, want 40", len(tombstoned))
	}
}

func TestRestartCatchesUpIndex(t *testing.T) {
	tl := newTestLog(t)
	var wg sync.WaitGroup
	for i := 0; i < 300; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if _, err := tl.Submit(context.Background(), tl.projection(fmt.Sprint("urn:p:", i))); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	tl.waitIndexed(300)
	// Simulate a crash after sequencing but before indexing: roll the index
	// back and reopen.
	if err := tl.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	idx, err := sqliteindex.OpenSQLiteIndex(tl.dir + "/index.db")
	if err != nil {
		t.Fatal(err)
	}
	idx.Reset(context.Background())
	idx.Close()
	tl2 := openTestLog(t, tl.dir, tl.skey, tl.s)
	defer tl2.Close(context.Background())
	if wm := tl2.indexer.watermark(); wm != 300 {
		t.Fatalf("watermark after reopen %d, want 300", wm)
	}
	tl2.wantRefused(tl2.projection("urn:p:123"), receipts.CodeProjectionReplay)
}

func TestProofs(t *testing.T) {
	tl := newTestLog(t)
	var accs []*Accepted
	for i := 0; i < 20; i++ {
		accs = append(accs, tl.mustSubmit(tl.projection(fmt.Sprint("urn:p:", i))))
	}
	ctx := context.Background()
	cp, err := tl.WaitPublished(ctx, 19)
	if err != nil {
		t.Fatal(err)
	}
	policy, err := verifier.ParsePolicy([]byte("log " + tl.VerifierKey() + "\nquorum none\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range accs {
		p, err := tl.InclusionProof(ctx, a.Index, cp)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := verifier.VerifyProof(policy, p, a.LeafHash[:]); err != nil {
			t.Errorf("proof of %d: %v\n%s", a.Index, err, p)
		}
	}
	if _, err := tl.ConsistencyProof(ctx, 5, 20); err != nil {
		t.Errorf("ConsistencyProof: %v", err)
	}
}

func TestTombstoneWaitsForUnsequencedCompaction(t *testing.T) {
	// Tessera may sequence two batches in either order, so a tombstone
	// must not be enqueued while a compaction accepted before it that
	// includes its item has no index yet.
	tl := newTestLog(t)
	items := gen.Items("order", 2)
	sub := tl.compaction("urn:c:pending", items, "", nil)
	pe := &pendingEntry{entry: Entry{Kind: receipts.KindCompaction, ID: "urn:c:pending", Items: manifestItems(sub.Manifest)}, done: make(chan struct{})}
	ts := tl.tombstone("urn:t:1", items[1].ItemDigest).Receipt.(*receipts.Tombstone)
	g := &tl.lineage
	g.mu.Lock()
	defer g.mu.Unlock()
	g.add(pe)
	var w errWait
	if err := tl.decideTombstone(context.Background(), ts); !errors.As(err, &w) || w.ch != pe.done {
		t.Fatalf("decideTombstone with an unsequenced compaction = %v, want a wait on it", err)
	}
	g.sequenced(pe, 7)
	if err := tl.decideTombstone(context.Background(), ts); err != nil {
		t.Fatalf("decideTombstone once the compaction is sequenced = %v", err)
	}
	if len(g.unsequenced) != 0 {
		t.Errorf("unsequenced map keeps %d items after sequencing", len(g.unsequenced))
	}
	g.remove(pe)
	if len(g.compactions) != 0 {
		t.Errorf("compaction still pending after remove")
	}
}

func TestIndexerRetiresLateArrivals(t *testing.T) {
	// An entry applied from the tiles before its in-memory hand-off
	// arrives must not leave its lineage state behind.
	tl := newTestLog(t)
	tl.mustSubmit(tl.projection("urn:p:1"))
	tl.waitIndexed(1)
	pe := &pendingEntry{entry: Entry{Kind: receipts.KindTombstone, ID: "urn:t:late", Item: "sha256:late"}, sequenced: true, done: make(chan struct{})}
	tl.lineage.mu.Lock()
	tl.lineage.add(pe)
	tl.lineage.mu.Unlock()
	tl.indexer.add(Entry{Kind: receipts.KindTombstone, ID: "urn:t:late", Index: 0}, pe)
	tl.lineage.mu.Lock()
	defer tl.lineage.mu.Unlock()
	if len(tl.lineage.tombstones) != 0 {
		t.Errorf("late arrival left %d pending tombstones", len(tl.lineage.tombstones))
	}
	tl.indexer.mu.Lock()
	defer tl.indexer.mu.Unlock()
	if len(tl.indexer.pending) != 0 {
		t.Errorf("late arrival queued below the watermark")
	}
}

func TestSequencingOutcomeUnknownHoldsID(t *testing.T) {
	// A sequencing failure that does not say whether the entry was logged
	// must never let the id be logged twice; once the index has caught up
	// with the tree, the question is settled either way.
	tl := newTestLog(t)
	ctx := context.Background()
	setAdd := func(f func(*tessera.Entry) tessera.IndexFuture) {
		tl.seq.mu.Lock()
		tl.seq.add = f
		tl.seq.mu.Unlock()
	}
	tl.settlePaused.Store(true)
	real := tl.seq.add
	// Not logged.
	setAdd(func(*tessera.Entry) tessera.IndexFuture {
		return func() (tessera.Index, error) { return tessera.Index{}, errors.New("bundle write timed out") }
	})
	p := tl.projection("urn:p:unknown")
	items := gen.Items("held", 2)
	ts := tl.tombstone("urn:t:unknown", items[0].ItemDigest)
	for _, sub := range []*receipts.Submission{p, ts} {
		if _, err := tl.Submit(ctx, sub); !errors.Is(err, ErrOutcomeUnknown) {
			t.Fatalf("Submit with a failing sequencer = %v, want ErrOutcomeUnknown", err)
		}
	}
	// Logged, though the append said it failed.
	setAdd(func(e *tessera.Entry) tessera.IndexFuture {
		f := real(e)
		return func() (tessera.Index, error) {
			if _, err := f(); err != nil {
				return tessera.Index{}, err
			}
			return tessera.Index{}, errors.New("couldn't sync the state directory")
		}
	})
	p2 := tl.projection("urn:p:unknown-but-logged")
	if _, err := tl.Submit(ctx, p2); !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("Submit with a sequencer failing after the write = %v, want ErrOutcomeUnknown", err)
	}
	setAdd(real)
	for _, sub := range []*receipts.Submission{p, p2} {
		if _, err := tl.Submit(ctx, sub); !errors.Is(err, ErrOutcomeUnknown) {
			t.Errorf("resubmission of a held id = %v, want ErrOutcomeUnknown", err)
		}
	}
	if _, err := tl.Submit(ctx, tl.compaction("urn:c:1", items, "", nil)); !errors.Is(err, ErrOutcomeUnknown) {
		t.Errorf("compaction over an item whose tombstone is held = %v, want ErrOutcomeUnknown", err)
	}
	tl.mustSubmit(tl.projection("urn:p:other"))

	tl.settlePaused.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for tl.unsettled.len() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d entries still unsettled", tl.unsettled.len())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := tl.Metrics.outcomeSettled.Load(); n != 3 {
		t.Errorf("settled %d, want 3", n)
	}
	// Not logged: released.
	tl.mustSubmit(p)
	tl.mustSubmit(ts)
	// Logged: a replay.
	var re *ReplayError
	if _, err := tl.Submit(ctx, p2); !errors.As(err, &re) {
		t.Errorf("resubmission of an entry logged despite the error = %v, want a replay", err)
	}
	// And after a restart, the same.
	tl2 := tl.reopen()
	for _, sub := range []*receipts.Submission{p, p2, ts} {
		if _, err := tl2.Submit(ctx, sub); !errors.As(err, &re) {
			t.Errorf("after a restart: %v, want a replay", err)
		}
	}
}

func TestRefusedLinePassesOrderOn(t *testing.T) {
	// A line refused before its decision must not let the next line decide
	// before the line ahead of it has.
	tl := newTestLog(t)
	after := make(chan struct{})
	decided := make(chan struct{})
	other, _ := gen.NewSigners()
	ts, err := other.Tombstone("urn:t:bad", gen.Items("x", 1)[0].ItemDigest, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tl.SubmitOrdered(context.Background(), &receipts.Submission{Receipt: ts}, after, decided); err == nil {
		t.Fatal("tampered tombstone accepted")
	}
	select {
	case <-decided:
		t.Fatal("refused line signalled its decision before the line ahead of it")
	case <-time.After(50 * time.Millisecond):
	}
	close(after)
	select {
	case <-decided:
	case <-time.After(5 * time.Second):
		t.Fatal("refused line never passed the order on")
	}
}

func TestDirLock(t *testing.T) {
	tl := newTestLog(t)
	_, err := posixstore.Open(context.Background(), posixstore.Config{Dir: tl.dir})
	if !errors.Is(err, posixstore.ErrDirInUse) || !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("second open of one directory = %v, want ErrDirInUse", err)
	}
	if _, err := posixstore.OpenCheck(context.Background(), tl.dir, false); !errors.Is(err, posixstore.ErrDirInUse) {
		t.Fatalf("fsck of a running log's directory = %v, want ErrDirInUse", err)
	}
	tl2 := tl.reopen() // Close releases the lock
	tl2.mustSubmit(tl2.projection("urn:p:after-lock"))
}

// gatedIndex holds every Apply while its gate is locked.
type gatedIndex struct {
	Index
	gate sync.Mutex
}

func (g *gatedIndex) Apply(ctx context.Context, first uint64, entries []Entry) error {
	g.gate.Lock()
	defer g.gate.Unlock()
	return g.Index.Apply(ctx, first, entries)
}

func TestLineageLookupsSeeUnindexedEntries(t *testing.T) {
	// An acknowledged lineage entry counts at once in lookups, though the
	// index trails the log (or, on a full disk, stands still).
	var gi *gatedIndex
	tl := newTestLogWith(t, func(p *store.Parts) {
		gi = &gatedIndex{Index: p.Index}
		p.Index = gi
	})
	ctx := context.Background()
	items := gen.Items("view", 3)
	c1 := tl.mustSubmit(tl.compaction("urn:c:v1", items, "", nil))
	tl.waitIndexed(c1.Index + 1)

	gi.gate.Lock()
	ts := tl.mustSubmit(tl.tombstone("urn:t:v1", items[1].ItemDigest))
	c2 := tl.mustSubmit(tl.compaction("urn:c:v2", []receipts.ManifestItem{items[0], items[2]}, "urn:c:v1", []string{items[1].ItemDigest}))
	check := func(when string) {
		t.Helper()
		got, err := tl.Compaction(ctx, "urn:c:v1")
		if err != nil {
			t.Fatalf("%s: Compaction(v1): %v", when, err)
		}
		if got.SupersededBy != "urn:c:v2" || got.SupersededAt != c2.Index || got.PurgedItems != 1 || got.PurgedSinceAt != ts.Index || got.State() != "superseded" {
			t.Errorf("%s: Compaction(v1) = %+v", when, got)
		}
		got, err = tl.Compaction(ctx, "urn:c:v2")
		if err != nil || got.Index != c2.Index || got.ItemCount != 2 || got.Supersedes != "urn:c:v1" || got.State() != "current" {
			t.Errorf("%s: Compaction(v2) = %+v, %v", when, got, err)
		}
		cs, err := tl.CompactionsIncluding(ctx, items[0].ItemDigest)
		if err != nil || len(cs) != 2 || cs[0].ID != "urn:c:v1" || cs[1].ID != "urn:c:v2" {
			t.Errorf("%s: CompactionsIncluding = %v, %v", when, cs, err)
		}
		tb, err := tl.Tombstone(ctx, items[1].ItemDigest)
		if err != nil || tb.ID != "urn:t:v1" || tb.Index != ts.Index {
			t.Errorf("%s: Tombstone = %+v, %v", when, tb, err)
		}
	}
	if w := tl.indexer.watermark(); w != c1.Index+1 {
		t.Fatalf("the index moved to %d while held", w)
	}
	check("before indexing")
	gi.gate.Unlock()
	tl.waitIndexed(c2.Index + 1)
	check("after indexing")
}

func TestSequencerPushback(t *testing.T) {
	release := make(chan struct{})
	var n atomic.Int64
	seq := newSequencer(func(*tessera.Entry) tessera.IndexFuture {
		i := n.Add(1) - 1
		return func() (tessera.Index, error) {
			<-release
			return tessera.Index{Index: uint64(i)}, nil
		}
	}, 10, 3)
	first := seq.enqueue(tessera.NewEntry([]byte("0")))
	deadline := time.Now().Add(5 * time.Second)
	for n.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first group never started")
		}
		time.Sleep(time.Millisecond)
	}
	var queued []tessera.IndexFuture
	for i := 1; i <= 3; i++ {
		queued = append(queued, seq.enqueue(tessera.NewEntry([]byte{byte(i)})))
	}
	if _, err := seq.enqueue(tessera.NewEntry([]byte("over")))(); !errors.Is(err, tessera.ErrPushback) {
		t.Fatalf("an entry beyond the queue bound = %v, want ErrPushback", err)
	}
	close(release)
	if idx, err := first(); err != nil || idx.Index != 0 {
		t.Fatalf("first = %v, %v", idx, err)
	}
	for i, f := range queued {
		if idx, err := f(); err != nil || idx.Index != uint64(i+1) {
			t.Errorf("queued %d = %v, %v", i, idx, err)
		}
	}
}

// TestRevocationReachesWaitingLineage: a tombstone and a compaction
// verified before a trust reload that revokes their keys, and still waiting
// for their turn in line order, are refused once their turn comes.
func TestRevocationReachesWaitingLineage(t *testing.T) {
	tl := newTestLog(t)
	items := gen.Items("revoked", 2)
	tomb := tl.tombstone("urn:t:revoked", items[0].ItemDigest)
	comp := tl.compaction("urn:c:revoked", items[1:], "", nil)
	for _, sub := range []*receipts.Submission{tomb, comp} {
		gate := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			_, err := tl.SubmitOrdered(context.Background(), sub, gate, make(chan struct{}))
			done <- err
		}()
		time.Sleep(50 * time.Millisecond) // verified, and waiting at the gate
		revoked := tl.s.Trust(tl.now.Add(-time.Hour))
		for _, k := range revoked.Issuers {
			at := time.Now().Add(-time.Second)
			k.RevokedAt = &at
		}
		for _, k := range revoked.Compactors {
			at := time.Now().Add(-time.Second)
			k.RevokedAt = &at
		}
		tl.SetTrust(revoked)
		close(gate)
		err := <-done
		if c := receipts.ErrorCode(err); c != receipts.CodeKeyRevoked {
			t.Errorf("%s verified before its key was revoked, logged after: %v, want key_revoked", sub.Receipt.Kind(), err)
		}
		tl.SetTrust(tl.s.Trust(tl.now.Add(-time.Hour)))
	}
	// With the key trusted again, the same receipts are logged: the
	// refusal released their ids.
	tl.mustSubmit(tomb)
	tl.mustSubmit(comp)
}

// TestOutputErasure: a tombstone of a compaction's compacted output erases
// its summary and discharges it, whatever was purged; it is the only
// discharge of a compaction whose every item was purged.
func TestOutputErasure(t *testing.T) {
	tl := newTestLog(t)
	ctx := context.Background()
	items := gen.Items("erase", 5)
	output := func(id string) string { return receipts.Digest([]byte("summary of " + id)) }

	// Every item of urn:c:all purged: it cannot be superseded.
	tl.mustSubmit(tl.compaction("urn:c:all", items[:2], "", nil))
	tl.mustSubmit(tl.tombstone("urn:t:a0", items[0].ItemDigest))
	last := tl.mustSubmit(tl.tombstone("urn:t:a1", items[1].ItemDigest))
	tl.waitIndexed(last.Index + 1)
	if c, err := tl.Compaction(ctx, "urn:c:all"); err != nil || c.State() != "awaiting_erasure" || c.OutputHash != output("urn:c:all") {
		t.Fatalf("fully purged compaction = %+v, %v; want awaiting_erasure", c, err)
	}
	err := tl.wantRefused(tl.compaction("urn:c:none-left", items[2:3], "urn:c:all", []string{items[0].ItemDigest, items[1].ItemDigest}), receipts.CodeSupersessionInvalid)
	if !strings.Contains(err.Error(), "every item of compaction urn:c:all") || !strings.Contains(err.Error(), output("urn:c:all")) {
		t.Errorf("refusal of a superseder of a fully purged compaction = %v; want it to name the output to tombstone", err)
	}
	erase := tl.mustSubmit(tl.tombstone("urn:t:out-all", output("urn:c:all")))
	check := func(when string) {
		t.Helper()
		c, err := tl.Compaction(ctx, "urn:c:all")
		if err != nil || c.State() != "erased" || c.ErasedBy != "urn:t:out-all" || c.ErasedAt != erase.Index {
			t.Errorf("%s: erased compaction = %+v, %v", when, c, err)
		}
		cs, err := tl.CompactionsProducing(ctx, output("urn:c:all"))
		if err != nil || len(cs) != 1 || cs[0].ID != "urn:c:all" || cs[0].ErasedBy != "urn:t:out-all" {
			t.Errorf("%s: CompactionsProducing = %+v, %v", when, cs, err)
		}
	}
	check("at once")
	tl.waitIndexed(erase.Index + 1)
	check("indexed")

	// The erased output may not be produced again, nor included.
	again, mf, err := tl.s.Compaction("urn:c:same-output", items[2:4], "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	again.CompactedOutputHash = output("urn:c:all")
	if again, err = receipts.SignCompaction(again, tl.s.Compactor); err != nil {
		t.Fatal(err)
	}
	err = tl.wantRefused(&receipts.Submission{Receipt: again, Manifest: mf}, receipts.CodeItemPurged)
	if !strings.Contains(err.Error(), "compacted_output_hash") {
		t.Errorf("refusal of an erased output = %v; want it to name compacted_output_hash", err)
	}
	tl.wantRefused(tl.compaction("urn:c:of-summary", []receipts.ManifestItem{{ItemDigest: output("urn:c:all"), Sensitivity: "INTERNAL"}}, "", nil), receipts.CodeItemPurged)

	// A partly purged compaction may be erased too; it is then discharged
	// and can no longer be superseded, and its remaining items compact
	// afresh.
	tl.mustSubmit(tl.compaction("urn:c:part", items[2:5], "", nil))
	tl.mustSubmit(tl.tombstone("urn:t:p2", items[2].ItemDigest))
	if c, _ := tl.Compaction(ctx, "urn:c:part"); c.State() != "awaiting_recompaction" {
		t.Errorf("partly purged compaction is %s, want awaiting_recompaction", c.State())
	}
	tl.mustSubmit(tl.tombstone("urn:t:out-part", output("urn:c:part")))
	if c, _ := tl.Compaction(ctx, "urn:c:part"); c.State() != "erased" {
		t.Errorf("erased partly purged compaction is %s, want erased", c.State())
	}
	err = tl.wantRefused(tl.compaction("urn:c:part2", items[3:5], "urn:c:part", []string{items[2].ItemDigest}), receipts.CodeSupersessionInvalid)
	if !strings.Contains(err.Error(), "discharged") {
		t.Errorf("refusal of a superseder of an erased compaction = %v", err)
	}
	tl.mustSubmit(tl.compaction("urn:c:part2", items[3:5], "", nil))

	// The lineage survives a restart and an index rebuilt from the log.
	tl2 := tl.reopen()
	if c, err := tl2.Compaction(ctx, "urn:c:all"); err != nil || c.State() != "erased" {
		t.Errorf("after reopen: %+v, %v", c, err)
	}
	tl2.wantRefused(tl2.compaction("urn:c:part3", items[3:5], "urn:c:part", []string{items[2].ItemDigest}), receipts.CodeSupersessionInvalid)
}

// TestTombstoneOfOutputWaitsForUnsequencedCompaction: a tombstone of an
// output waits, like one of an item, for the compaction accepted before it
// that produced it to be sequenced.
func TestTombstoneOfOutputWaitsForUnsequencedCompaction(t *testing.T) {
	tl := newTestLog(t)
	sub := tl.compaction("urn:c:pending", gen.Items("order", 2), "", nil)
	out := sub.Receipt.(*receipts.Compaction).CompactedOutputHash
	pe := &pendingEntry{entry: Entry{Kind: receipts.KindCompaction, ID: "urn:c:pending", Items: manifestItems(sub.Manifest), Output: out}, done: make(chan struct{})}
	ts := tl.tombstone("urn:t:1", out).Receipt.(*receipts.Tombstone)
	g := &tl.lineage
	g.mu.Lock()
	defer g.mu.Unlock()
	g.add(pe)
	var w errWait
	if err := tl.decideTombstone(context.Background(), ts); !errors.As(err, &w) || w.ch != pe.done {
		t.Fatalf("decideTombstone of the output of an unsequenced compaction = %v, want a wait on it", err)
	}
	g.sequenced(pe, 7)
	if len(g.unsequenced) != 0 {
		t.Errorf("unsequenced map keeps %d digests after sequencing", len(g.unsequenced))
	}
}

// TestIndexWithoutOutputsIsRebuilt: an index written before compactions
// recorded their output rebuilds its lineage tables from the log.
func TestIndexWithoutOutputsIsRebuilt(t *testing.T) {
	tl := newTestLog(t)
	items := gen.Items("old", 2)
	c := tl.compaction("urn:c:old", items, "", nil)
	tl.mustSubmit(c)
	last := tl.mustSubmit(tl.tombstone("urn:t:old", c.Receipt.(*receipts.Compaction).CompactedOutputHash))
	tl.waitIndexed(last.Index + 1)
	if err := tl.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(tl.dir, "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"DROP INDEX compactions_by_output", "ALTER TABLE compactions DROP COLUMN output"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	tl2 := openTestLog(t, tl.dir, tl.skey, tl.s)
	defer tl2.Close(context.Background())
	tl2.waitIndexed(last.Index + 1)
	got, err := tl2.Index().Compaction(context.Background(), "urn:c:old")
	if err != nil || got.State() != "erased" || got.ErasedBy != "urn:t:old" {
		t.Errorf("compaction after the upgrade = %+v, %v; want erased by urn:t:old", got, err)
	}
	tl2.wantRefused(tl2.compaction("urn:c:old", items, "", nil), receipts.CodeCompactionReplay)
}
