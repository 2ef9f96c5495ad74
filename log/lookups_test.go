package log

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/internal/tlogfmt"
	"github.com/memtrail/memtrail/receipts"
)

func TestItemView(t *testing.T) {
	tl := newTestLog(t)
	ctx := context.Background()
	items := gen.Items("view", 4)
	tl.mustSubmit(tl.compaction("urn:c:1", items, "", nil))
	tl.mustSubmit(tl.tombstone("urn:t:1", items[0].ItemDigest))
	rest := items[1:]
	tl.mustSubmit(tl.compaction("urn:c:2", rest, "urn:c:1", []string{items[0].ItemDigest}))
	tl.mustSubmit(tl.tombstone("urn:t:2", items[1].ItemDigest))
	tl.waitIndexed(4)

	for _, tt := range []struct {
		item        string
		state       string
		compactions []string
		obligations []string
		tombstone   string
	}{
		{items[0].ItemDigest, ItemPurged, []string{"urn:c:1"}, nil, "urn:t:1"},
		{items[1].ItemDigest, ItemAwaitingRecompaction, []string{"urn:c:1", "urn:c:2"}, []string{"urn:c:2"}, "urn:t:2"},
		{items[2].ItemDigest, ItemRetained, []string{"urn:c:1", "urn:c:2"}, nil, ""},
		{receipts.Digest([]byte("never logged")), ItemUnknown, nil, nil, ""},
	} {
		v, err := tl.Item(ctx, tt.item)
		if err != nil {
			t.Fatalf("Item(%s) = %v", tt.item, err)
		}
		ts := ""
		if v.Tombstone != nil {
			ts = v.Tombstone.ID
		}
		if v.Item != tt.item || v.State != tt.state || !equalIDs(v.Compactions, tt.compactions) || !equalIDs(v.Obligations, tt.obligations) || ts != tt.tombstone {
			t.Errorf("Item(%s) = state %s, compactions %v, obligations %v, tombstone %q; want %s, %v, %v, %q",
				tt.item, v.State, v.Compactions, v.Obligations, ts, tt.state, tt.compactions, tt.obligations, tt.tombstone)
		}
	}
}

func equalIDs(cs []*CompactionInfo, ids []string) bool {
	if len(cs) != len(ids) {
		return false
	}
	for i, c := range cs {
		if c.ID != ids[i] {
			return false
		}
	}
	return true
}

func TestEntryView(t *testing.T) {
	tl := newTestLog(t)
	ctx := context.Background()
	sub := tl.projection("urn:p:view")
	a := tl.mustSubmit(sub)
	if _, err := tl.WaitPublished(ctx, a.Index); err != nil {
		t.Fatal(err)
	}
	e, err := tl.Entry(ctx, receipts.KindProjection, "urn:p:view")
	if err != nil {
		t.Fatal(err)
	}
	leaf := sub.Receipt.Canonical()
	if e.Index != a.Index || e.Kind != receipts.KindProjection || e.ID != "urn:p:view" || !bytes.Equal(e.Leaf, leaf) ||
		e.LeafHash != tlogfmt.LeafHash(leaf) || e.LeafHash != a.LeafHash {
		t.Errorf("Entry() = %+v, want index %d and leaf %q", e, a.Index, leaf)
	}
	p, ok := tlogfmt.ParseProof(e.Proof)
	if !ok || p.Index != a.Index {
		t.Errorf("Entry().Proof = %q, want a tlog-proof of index %d", e.Proof, a.Index)
	}
	if _, err := tl.Entry(ctx, receipts.KindTombstone, "urn:p:view"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Entry(tombstone, a projection's id) = %v, want ErrNotFound", err)
	}
}
