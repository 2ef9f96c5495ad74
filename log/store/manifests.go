package store

import (
	"context"
	"errors"
)

// ManifestStore keeps the source manifests of logged compactions, content
// addressed by their source tree root ("sha256:<hex>"), immutable.
//
// Contract, for every implementation (TestManifestStore checks it):
//
//   - Put stores the canonical manifest bytes under root and is durable when
//     it returns nil. Putting the same root again is a no-op; Put never
//     replaces stored bytes.
//   - Get returns the stored bytes, or an error wrapping ErrNotFound. It
//     checks that the bytes still hash to the root they are stored under
//     (a manifest's root is the Merkle root of its items, so it parses
//     them) and returns an error wrapping ErrManifestCorrupt otherwise.
//   - Roots lists every stored root (for fsck), in any order.
//   - Methods are safe for concurrent use, and Get sees every Put that
//     returned before it was called, from any process sharing the store.
//
// The log calls Put before it appends the compaction, so every logged
// compaction has its manifest; a crash in between leaves an unreferenced
// manifest, which fsck reports and may remove (see ManifestRemover).
//
// Who trusts it: nobody has to. Anyone who fetches a manifest recomputes its
// root and compares it with the logged ECCR. An attacker who can write the
// store can delete or alter manifests (the log then serves errors and fsck
// reports the damage) but cannot make an altered manifest verify.
type ManifestStore interface {
	Put(ctx context.Context, root string, canonical []byte) error
	Get(ctx context.Context, root string) ([]byte, error)
	Roots(ctx context.Context) ([]string, error)
}

// A ManifestRemover is a ManifestStore that can delete a manifest: fsck
// --repair removes the manifests no logged compaction references. A store
// without it keeps them (they are harmless: content addressed, and never
// served as part of the log).
type ManifestRemover interface {
	Remove(ctx context.Context, root string) error
}

// ErrManifestCorrupt is returned when stored manifest bytes do not match
// the root they are stored under.
var ErrManifestCorrupt = errors.New("stored manifest does not match its root")
