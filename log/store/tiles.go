package store

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/transparency-dev/tessera/api/layout"
)

// ErrTileDamaged is returned for a hash tile or entry bundle whose stored
// bytes cannot be what the log wrote: a tile of the wrong length, a bundle
// that does not hold its entries, or, at the start, tiles at the tree's
// right edge that do not hash to the tree's root. Tessera's drivers write
// every resource whole (the POSIX driver through a synced temporary file
// and a rename), so this is damage from outside (a torn write on storage
// that lied about syncing, a truncated file). "memtrail fsck --repair"
// rewrites damaged tiles from the entries; damaged entries cannot be
// rebuilt from the log.
var ErrTileDamaged = errors.New("tile damaged")

// width returns the number of hashes or entries of a tile or bundle of
// partial width p (0: full).
func width(p uint8) int {
	if p == 0 {
		return layout.TileWidth
	}
	return int(p)
}

// CheckTile checks the length of a hash tile of partial width p read from
// storage. A longer tile is accepted: asked for a partial tile, storage may
// give the full tile that replaced it.
func CheckTile(raw []byte, p uint8) error {
	if len(raw)%sha256.Size != 0 || len(raw)/sha256.Size < width(p) || len(raw)/sha256.Size > layout.TileWidth {
		return fmt.Errorf("%w: a tile of width %d is %d bytes", ErrTileDamaged, width(p), len(raw))
	}
	return nil
}

// CheckEntryBundle checks that an entry bundle of partial width p read from
// storage holds whole entries, at least p of them (all 256 if full).
func CheckEntryBundle(raw []byte, p uint8) error {
	_, err := entryBundlePrefix(raw, p)
	return err
}

// entryBundlePrefix checks raw as CheckEntryBundle does and returns the
// length of its first width(p) entries.
func entryBundlePrefix(raw []byte, p uint8) (int, error) {
	n, prefix := 0, 0
	for off := 0; off < len(raw); n++ {
		if len(raw)-off < 2 {
			return 0, fmt.Errorf("%w: entry bundle ends inside the length of entry %d", ErrTileDamaged, n)
		}
		off += 2 + int(binary.BigEndian.Uint16(raw[off:]))
		if off > len(raw) {
			return 0, fmt.Errorf("%w: entry bundle ends inside entry %d", ErrTileDamaged, n)
		}
		if n+1 == width(p) {
			prefix = off
		}
	}
	if n < width(p) || n > layout.EntryBundleWidth {
		return 0, fmt.Errorf("%w: an entry bundle of width %d holds %d entries", ErrTileDamaged, width(p), n)
	}
	return prefix, nil
}

// TrimTile checks a hash tile of partial width p read from storage and
// returns the tile of that width: raw itself, or, when storage gave the
// full tile that replaced a partial one, its first p hashes (a tile's
// hashes never change once written). Any other length is damage.
func TrimTile(raw []byte, p uint8) ([]byte, error) {
	if len(raw) != width(p)*sha256.Size && len(raw) != layout.TileWidth*sha256.Size {
		return nil, fmt.Errorf("%w: a tile of width %d is %d bytes", ErrTileDamaged, width(p), len(raw))
	}
	return raw[:width(p)*sha256.Size], nil
}

// TrimEntryBundle checks an entry bundle of partial width p as
// CheckEntryBundle does and returns its first p entries (all of a full
// one), as TrimTile does for tiles.
func TrimEntryBundle(raw []byte, p uint8) ([]byte, error) {
	n, err := entryBundlePrefix(raw, p)
	if err != nil {
		return nil, err
	}
	return raw[:n], nil
}
