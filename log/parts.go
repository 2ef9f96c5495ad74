package log

import (
	"github.com/memtrail/memtrail/log/store"
	"github.com/memtrail/memtrail/receipts"
)

// The parts a log is built from, and the sentinels of their contracts, are
// defined in package store (see its docs); these are the same types and
// values, under the names the log's callers have always used.

type (
	Entry             = store.Entry
	CompactionInfo    = store.CompactionInfo
	TombstoneInfo     = store.TombstoneInfo
	Obligation        = store.Obligation
	Index             = store.Index
	ManifestStore     = store.ManifestStore
	CheckpointArchive = store.CheckpointArchive
)

var (
	ErrNotFound            = store.ErrNotFound
	ErrOutOfOrder          = store.ErrOutOfOrder
	ErrManifestCorrupt     = store.ErrManifestCorrupt
	ErrCheckpointConflict  = store.ErrCheckpointConflict
	ErrCheckpointMalformed = store.ErrCheckpointMalformed
	ErrTileDamaged         = store.ErrTileDamaged
	ErrStorageUnavailable  = store.ErrStorageUnavailable
)

// idHash is the hash of an id in the seen filter: the one Index.IDHashes
// lists (store.IDHash).
func idHash(kind receipts.Kind, id string) []byte { return store.IDHash(kind, id) }
