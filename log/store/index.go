package store

import (
	"context"
	"crypto/sha256"
	"errors"

	"github.com/memtrail/memtrail/receipts"
)

// An Entry is what the index learns from one log entry: its position, its
// kind and single-use id, and for compactions and tombstones the facts the
// lineage rules need. Entries are applied in log order.
type Entry struct {
	Index    uint64
	Kind     receipts.Kind
	ID       string
	LeafHash [32]byte

	// Compactions.
	ManifestRoot string   // source_items_merkle_root
	Items        []string // item digests, manifest order
	Supersedes   string   // compaction_event_id it replaces, or ""
	Output       string   // compacted_output_hash

	// Tombstones.
	Item     string // the purged item digest
	PurgedAt int64
}

// CompactionInfo is the index's view of one logged compaction.
type CompactionInfo struct {
	ID            string
	Index         uint64
	ManifestRoot  string
	ItemCount     int
	Supersedes    string // "" when it supersedes nothing
	SupersededBy  string // "" while current
	SupersededAt  uint64 // index of the superseding compaction
	PurgedItems   int    // items of this compaction that have been tombstoned
	PurgedSinceAt uint64 // index of the earliest such tombstone (0 if none)
	OutputHash    string // compacted_output_hash
	ErasedBy      string // id of the tombstone of OutputHash, "" while the output stands
	ErasedAt      uint64 // index of that tombstone
}

// State returns the compaction's place in its lineage:
//
//   - "superseded": a later compaction replaced it;
//   - "erased": its compacted output was tombstoned, which discharges it
//     whatever was purged;
//   - "awaiting_erasure": every item was purged, so no compaction can
//     supersede it (a manifest holds at least one item) and only a
//     tombstone of its output discharges it;
//   - "awaiting_recompaction": some item was purged, and it awaits a
//     compaction that supersedes it (or a tombstone of its output);
//   - "current" otherwise.
func (c *CompactionInfo) State() string {
	switch {
	case c.SupersededBy != "":
		return "superseded"
	case c.ErasedBy != "":
		return "erased"
	case c.PurgedItems > 0 && c.PurgedItems >= c.ItemCount:
		return "awaiting_erasure"
	case c.PurgedItems > 0:
		return "awaiting_recompaction"
	}
	return "current"
}

// TombstoneInfo is the index's view of one logged tombstone.
type TombstoneInfo struct {
	ID       string
	Index    uint64
	Item     string
	PurgedAt int64
}

// Obligation is an open erasure obligation: Item was tombstoned (by the
// tombstone at TombstoneIndex), and the compaction at CompactionIndex, which
// includes it, is neither superseded nor erased (a tombstone of its
// compacted output).
type Obligation struct {
	Item            string
	TombstoneID     string
	TombstoneIndex  uint64
	PurgedAt        int64
	CompactionID    string
	CompactionIndex uint64
}

// ErrNotFound is wrapped by the errors of lookups that find nothing, in
// every part: the index, the manifest store and the checkpoint archive.
var ErrNotFound = errors.New("not found")

// Index is the log's derived index: single-use ids and the lineage state of
// compactions, items and tombstones. The log is the source of truth; an
// Index is rebuilt or caught up from it, so it need not be durable entry by
// entry, but it must be consistent. It holds nothing that cannot be
// re-derived: the checkpoints the log published are in its
// CheckpointArchive.
//
// Contract, for every implementation (TestIndex checks it):
//
//   - The watermark is the number of log entries, from index 0, whose
//     effects are all visible. Watermark never reports an entry whose
//     effects are not all visible.
//   - Apply must be called with first == Watermark() and entries carrying
//     the indexes first, first+1, …; otherwise it returns an error wrapping
//     ErrOutOfOrder and changes nothing.
//   - Apply is atomic for the watermark and the lineage state: when it
//     returns nil, every effect of the run is visible and the watermark is
//     first+len(entries); when it returns an error, or is cut short by a
//     crash, the watermark is unchanged and Compaction, CompactionsIncluding,
//     CompactionsProducing, Tombstone, TombstonesOf, Counts and
//     OpenObligations answer for the entries below it only.
//   - LookupID answers for every id below the watermark. It may also find
//     an id of a run whose Apply failed for a storage reason or was cut
//     short by a crash, at that entry's index: such an entry was sequenced,
//     so it is in the log, and the log applies it again (which must succeed
//     and change nothing that is already right). A run that holds an id
//     already indexed at another index is refused with an error before
//     anything of it is visible: an id logged twice is damage, never
//     indexed over.
//   - Durability is not per Apply: after a crash, or a power loss that
//     drops writes not yet synced, the watermark may be lower than the last
//     Apply left it (never higher), and what is below it is intact. The log
//     re-applies the rest from the log.
//   - Lookups see every entry applied before they were called. Lookups may
//     run concurrently with each other and with one Apply; Apply and Reset
//     are called by one goroutine at a time.
//   - Lookups that find nothing return an error wrapping ErrNotFound.
//   - Reset removes everything, leaving the watermark at 0.
//   - Errors other than ErrNotFound and ErrOutOfOrder are storage failures.
//
// Apply does not judge the lineage rules; the log does that before writing.
// It records facts: a compaction with Supersedes marks the superseded
// compaction (if indexed) as superseded by it; a tombstone marks its item
// purged, and erases the output of every compaction whose Output it names
// (ErasedBy, whichever of the two was applied first).
//
// An implementation may also list the hashes of the ids it holds
// (IDHashes(ctx, fn func(h []byte)) (uint64, error), calling fn with
// IDHash of every id): the log then fills an in-memory filter from it at
// start and skips the lookup for ids it has never seen.
type Index interface {
	Watermark(ctx context.Context) (uint64, error)
	Apply(ctx context.Context, first uint64, entries []Entry) error

	// LookupID returns the index of the entry that used id for kind.
	LookupID(ctx context.Context, kind receipts.Kind, id string) (uint64, error)
	Compaction(ctx context.Context, id string) (*CompactionInfo, error)
	// CompactionsIncluding returns the compactions whose manifests include
	// item, in log order.
	CompactionsIncluding(ctx context.Context, item string) ([]*CompactionInfo, error)
	// CompactionsProducing returns the compactions whose
	// compacted_output_hash is output, in log order.
	CompactionsProducing(ctx context.Context, output string) ([]*CompactionInfo, error)
	// Tombstone returns the tombstone of item.
	Tombstone(ctx context.Context, item string) (*TombstoneInfo, error)
	// TombstonesOf returns the tombstones of those of items that have one,
	// keyed by item.
	TombstonesOf(ctx context.Context, items []string) (map[string]*TombstoneInfo, error)
	// Counts returns the number of entries of each kind.
	Counts(ctx context.Context) (map[receipts.Kind]uint64, error)
	// OpenObligations returns the open erasure obligations (every
	// tombstoned item of every compaction not superseded), ordered by
	// compaction index then tombstone index, at most limit of them, and
	// how many there are in all.
	OpenObligations(ctx context.Context, limit int) ([]Obligation, int, error)

	Reset(ctx context.Context) error
	Close() error
}

// ErrOutOfOrder is returned by Index.Apply when first is not the watermark.
var ErrOutOfOrder = errors.New("entries applied out of order")

// IDHash is the 16-byte hash an Index may key single-use ids by, and the
// one IDHashes lists: the first 16 bytes of SHA-256(kind || 0x00 || id). A
// collision could only refuse a fresh id as a replay, never let an id be
// logged twice, and at 2^-64 for four billion ids it does not happen.
func IDHash(kind receipts.Kind, id string) []byte {
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(id))
	return h.Sum(nil)[:16]
}
