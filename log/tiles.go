package log

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"
)

// ErrTileDamaged is returned for a hash tile or entry bundle whose stored
// bytes cannot be what the log wrote: a tile of the wrong length, a bundle
// that does not hold its entries, or, at the start, tiles at the tree's
// right edge that do not hash to the tree state. Tessera writes every file
// through a synced temporary file and a rename, so this is damage from
// outside (a torn write on storage that lied about syncing, a truncated
// file). "memtrail fsck --repair" rewrites damaged tiles from the entries;
// damaged entries cannot be rebuilt from the log.
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
	n := 0
	for off := 0; off < len(raw); n++ {
		if len(raw)-off < 2 {
			return fmt.Errorf("%w: entry bundle ends inside the length of entry %d", ErrTileDamaged, n)
		}
		off += 2 + int(binary.BigEndian.Uint16(raw[off:]))
		if off > len(raw) {
			return fmt.Errorf("%w: entry bundle ends inside entry %d", ErrTileDamaged, n)
		}
	}
	if n < width(p) || n > layout.EntryBundleWidth {
		return fmt.Errorf("%w: an entry bundle of width %d holds %d entries", ErrTileDamaged, width(p), n)
	}
	return nil
}

// readTile reads a hash tile for the proof builder, refusing a damaged one
// rather than building a wrong proof from it.
func (l *Log) readTile(ctx context.Context, level, index uint64, p uint8) ([]byte, error) {
	raw, err := l.reader.ReadTile(ctx, level, index, p)
	if err != nil {
		return nil, err
	}
	if err := CheckTile(raw, p); err != nil {
		return nil, fmt.Errorf("%s: %w", layout.TilePath(level, index, p), err)
	}
	return raw, nil
}

// readFileResource reads a tile or bundle from a tiles directory, falling
// back from a partial resource to the full one that replaced it, as
// Tessera's readers do.
func readFileResource(tiles string, path func(p uint8) string, p uint8) ([]byte, error) {
	raw, err := os.ReadFile(filepath.Join(tiles, filepath.FromSlash(path(p))))
	if errors.Is(err, fs.ErrNotExist) && p > 0 {
		raw, err = os.ReadFile(filepath.Join(tiles, filepath.FromSlash(path(0))))
	}
	return raw, err
}

// checkRightEdge checks, before the log appends anything, the files a new
// batch builds on: the last entry bundle and the hash tiles at the right
// edge of the tree must be whole, and must hash, with the last entry, to
// the root of the tree state. Tessera extends these files without reading
// them back, so a torn one (a write lost in a crash on storage that does
// not honour fsync, a truncated file) would otherwise make every later tile
// wrong. Interior tiles are checked when they are read (CheckTile) and in
// full by fsck.
func checkRightEdge(ctx context.Context, tiles string) error {
	size, root, err := readTreeState(tiles)
	if errors.Is(err, fs.ErrNotExist) || err == nil && size == 0 {
		return nil // a new log
	}
	if err != nil {
		return fmt.Errorf("couldn't read the tree state: %w", err)
	}
	// Every tile at the right edge, level by level: whole, of its width.
	for level := uint64(0); size>>(level*layout.TileHeight) > 0; level++ {
		n := size >> (level * layout.TileHeight)
		index := (n - 1) / layout.TileWidth
		p := layout.PartialTileSize(level, index, size)
		raw, err := readFileResource(tiles, func(p uint8) string { return layout.TilePath(level, index, p) }, p)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrTileDamaged, layout.TilePath(level, index, p), err)
		}
		if err := CheckTile(raw, p); err != nil {
			return fmt.Errorf("%s: %w", layout.TilePath(level, index, p), err)
		}
	}
	// The last entry bundle: whole, and its leaves are the level-0 tile's.
	bundle := (size - 1) / layout.EntryBundleWidth
	p := layout.PartialTileSize(0, bundle, size)
	rawBundle, err := readFileResource(tiles, func(p uint8) string { return layout.EntriesPath(bundle, p) }, p)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrTileDamaged, layout.EntriesPath(bundle, p), err)
	}
	if err := CheckEntryBundle(rawBundle, p); err != nil {
		return fmt.Errorf("%s: %w", layout.EntriesPath(bundle, p), err)
	}
	var b api.EntryBundle
	if err := b.UnmarshalText(rawBundle); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrTileDamaged, layout.EntriesPath(bundle, p), err)
	}
	tile0, err := readFileResource(tiles, func(p uint8) string { return layout.TilePath(0, bundle, p) }, p)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrTileDamaged, layout.TilePath(0, bundle, p), err)
	}
	for i := 0; i < width(p); i++ {
		if !bytes.Equal(rfc6962.DefaultHasher.HashLeaf(b.Entries[i]), tile0[i*sha256.Size:(i+1)*sha256.Size]) {
			return fmt.Errorf("%w: %s: hash %d is not the hash of entry %d of %s", ErrTileDamaged, layout.TilePath(0, bundle, p), i, bundle*layout.EntryBundleWidth+uint64(i), layout.EntriesPath(bundle, p))
		}
	}
	// The tiles' nodes along the last entry's path hash to the root.
	fetch := func(ctx context.Context, level, index uint64, p uint8) ([]byte, error) {
		return readFileResource(tiles, func(p uint8) string { return layout.TilePath(level, index, p) }, p)
	}
	pb, err := client.NewProofBuilder(ctx, size, fetch)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTileDamaged, err)
	}
	path, err := pb.InclusionProof(ctx, size-1)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTileDamaged, err)
	}
	leaf := rfc6962.DefaultHasher.HashLeaf(b.Entries[width(p)-1])
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, size-1, size, leaf, path, root); err != nil {
		return fmt.Errorf("%w: the tiles at the right edge do not hash to the root of the tree state (size %d): %w", ErrTileDamaged, size, err)
	}
	return nil
}
