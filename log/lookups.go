package log

import (
	"context"
	"errors"

	"github.com/memtrail/memtrail/internal/tlogfmt"
	"github.com/memtrail/memtrail/receipts"
)

// EntryView is the log's view of one entry found by its single-use id.
type EntryView struct {
	Index    uint64
	LeafHash [32]byte // RFC 6962 leaf hash of Leaf
	Kind     receipts.Kind
	ID       string
	Leaf     []byte // the receipt, as logged
	// Proof is the entry's tlog-proof against the latest published
	// checkpoint, or nil while no published checkpoint covers it.
	Proof []byte
}

// Entry returns the entry whose id of the given kind is id: ErrNotFound
// when none is logged.
func (l *Log) Entry(ctx context.Context, kind receipts.Kind, id string) (*EntryView, error) {
	idx, err := l.LookupID(ctx, kind, id)
	if err != nil {
		return nil, err
	}
	leaf, err := l.ReadLeaf(ctx, idx)
	if err != nil {
		return nil, err
	}
	e := &EntryView{Index: idx, LeafHash: tlogfmt.LeafHash(leaf), Kind: kind, ID: id, Leaf: leaf}
	proof, err := l.LatestInclusionProof(ctx, idx)
	switch {
	case err == nil:
		e.Proof = proof
	case errors.Is(err, ErrNotPublished):
	default:
		return nil, err
	}
	return e, nil
}

// The states of a source item, as [ItemView.State] names them.
const (
	// ItemUnknown: in no compaction, the output of none, and not
	// tombstoned.
	ItemUnknown = "unknown"
	// ItemRetained: not tombstoned.
	ItemRetained = "retained"
	// ItemPurged: tombstoned, and every compaction that included it
	// superseded or erased.
	ItemPurged = "purged"
	// ItemAwaitingRecompaction: tombstoned, and some compaction that
	// includes it neither superseded nor erased (its state says whether a
	// superseding compaction can still discharge it).
	ItemAwaitingRecompaction = "awaiting_recompaction"
)

// ItemView is the erasure lineage of one source item, by its digest.
type ItemView struct {
	Item  string
	State string // ItemUnknown, ItemRetained, ItemPurged or ItemAwaitingRecompaction
	// Compactions are those whose sources include the item, in log order.
	Compactions []*CompactionInfo
	// OutputOf are the compactions whose compacted_output_hash is the
	// item, in log order: a tombstone of it erases their output.
	OutputOf []*CompactionInfo
	// Tombstone is the item's tombstone, or nil.
	Tombstone *TombstoneInfo
	// Obligations are the compactions of a tombstoned item not yet
	// superseded or erased, in log order: the obligations still open.
	Obligations []*CompactionInfo
}

// Item returns the erasure lineage of item, answered from the log as it
// stands (see [Log.CompactionsIncluding]).
func (l *Log) Item(ctx context.Context, item string) (*ItemView, error) {
	cs, err := l.CompactionsIncluding(ctx, item)
	if err != nil {
		return nil, err
	}
	outs, err := l.CompactionsProducing(ctx, item)
	if err != nil {
		return nil, err
	}
	v := &ItemView{Item: item, Compactions: cs, OutputOf: outs}
	ts, err := l.Tombstone(ctx, item)
	switch {
	case err == nil:
		v.Tombstone = ts
	case !errors.Is(err, ErrNotFound):
		return nil, err
	}
	switch {
	case v.Tombstone == nil && len(cs) == 0 && len(outs) == 0:
		v.State = ItemUnknown
	case v.Tombstone == nil:
		v.State = ItemRetained
	default:
		v.State = ItemPurged
		for _, c := range cs {
			if st := c.State(); st != "superseded" && st != "erased" {
				v.State = ItemAwaitingRecompaction
				v.Obligations = append(v.Obligations, c)
			}
		}
	}
	return v, nil
}
