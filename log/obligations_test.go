package log

import (
	"context"
	"testing"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/log/store"
)

// TestOpenObligationsSeeUnindexedEntries: an acknowledged tombstone opens
// obligations, and an acknowledged supersession discharges them, at once in
// Log.OpenObligations, though the index trails the log.
func TestOpenObligationsSeeUnindexedEntries(t *testing.T) {
	var gi *gatedIndex
	tl := newTestLogWith(t, func(p *store.Parts) {
		gi = &gatedIndex{Index: p.Index}
		p.Index = gi
	})
	ctx := context.Background()
	items := gen.Items("obligations", 3)
	c1 := tl.mustSubmit(tl.compaction("urn:c:o1", items, "", nil))
	c2 := tl.mustSubmit(tl.compaction("urn:c:o2", items[1:2], "", nil))
	t0 := tl.mustSubmit(tl.tombstone("urn:t:o0", items[0].ItemDigest))
	tl.waitIndexed(t0.Index + 1)
	check := func(when string, want ...Obligation) {
		t.Helper()
		got, total, err := tl.OpenObligations(ctx, 100)
		if err != nil || total != len(want) || len(got) != len(want) {
			t.Fatalf("%s: OpenObligations = %+v, %d, %v; want %+v", when, got, total, err, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: obligation %d = %+v, want %+v", when, i, got[i], want[i])
			}
		}
	}
	purgedAt := func(item string) int64 {
		tb, err := tl.Tombstone(ctx, item)
		if err != nil {
			t.Fatal(err)
		}
		return tb.PurgedAt
	}
	o0 := Obligation{Item: items[0].ItemDigest, TombstoneID: "urn:t:o0", TombstoneIndex: t0.Index, PurgedAt: purgedAt(items[0].ItemDigest), CompactionID: "urn:c:o1", CompactionIndex: c1.Index}
	check("indexed", o0)

	gi.gate.Lock()
	t1 := tl.mustSubmit(tl.tombstone("urn:t:o1", items[1].ItemDigest))
	o1a := Obligation{Item: items[1].ItemDigest, TombstoneID: "urn:t:o1", TombstoneIndex: t1.Index, PurgedAt: purgedAt(items[1].ItemDigest), CompactionID: "urn:c:o1", CompactionIndex: c1.Index}
	o1b := o1a
	o1b.CompactionID, o1b.CompactionIndex = "urn:c:o2", c2.Index
	check("tombstone not indexed", o0, o1a, o1b)
	if got, total, _ := tl.OpenObligations(ctx, 2); total != 3 || len(got) != 2 || got[1] != o1a {
		t.Errorf("OpenObligations(limit 2) = %+v, %d", got, total)
	}
	// Superseding urn:c:o1 discharges its two, pending or indexed.
	tl.mustSubmit(tl.compaction("urn:c:o3", items[2:], "urn:c:o1", []string{items[0].ItemDigest, items[1].ItemDigest}))
	check("supersession not indexed", o1b)
	gi.gate.Unlock()
	tl.waitIndexed(t1.Index + 2)
	check("after indexing", o1b)
}

// afterReadIndex runs after once, on the first Compaction read of the index
// that follows the moment it is set.
type afterReadIndex struct {
	*gatedIndex
	after func()
}

func (x *afterReadIndex) Compaction(ctx context.Context, id string) (*CompactionInfo, error) {
	c, err := x.gatedIndex.Compaction(ctx, id)
	if f := x.after; f != nil {
		x.after = nil
		f()
	}
	return c, err
}

// TestCompactionReadWhileIndexing: a tombstone the index applies just after
// a lookup read the compaction from it (so the read does not count it) is
// still counted: the overlay judges what the read saw by the watermark it
// was read at, not by asking the index again afterwards.
func TestCompactionReadWhileIndexing(t *testing.T) {
	var x *afterReadIndex
	tl := newTestLogWith(t, func(p *store.Parts) {
		x = &afterReadIndex{gatedIndex: &gatedIndex{Index: p.Index}}
		p.Index = x
	})
	ctx := context.Background()
	items := gen.Items("read-while-indexing", 2)
	c := tl.mustSubmit(tl.compaction("urn:c:r", items, "", nil))
	tl.waitIndexed(c.Index + 1)
	x.gate.Lock() // the indexer stops before the tombstone
	ts := tl.mustSubmit(tl.tombstone("urn:t:r", items[0].ItemDigest))
	x.after = func() {
		x.gate.Unlock()
		tl.waitIndexed(ts.Index + 1)
	}
	info, err := tl.Compaction(ctx, "urn:c:r")
	if err != nil {
		t.Fatal(err)
	}
	if info.PurgedItems != 1 || info.State() != "awaiting_recompaction" {
		t.Errorf("compaction read while its tombstone was indexed: %d purged, %s; want 1, awaiting_recompaction", info.PurgedItems, info.State())
	}
}
