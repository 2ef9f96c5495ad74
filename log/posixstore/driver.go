package posixstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/memtrail/memtrail/internal/atomicfile"
	"github.com/memtrail/memtrail/log/store"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"
	"github.com/transparency-dev/tessera/storage/posix"
)

// Driver is the embedded store.Driver: Tessera's POSIX driver on a tiles
// directory, the tlog-tiles resources laid out as they are served, which
// Tessera writes through synced temporary files and renames. It integrates
// every batch within Add, and keeps the size and root of the integrated
// tree in its private tree state (DIR/.state/treeState), which only this
// package reads.
//
// Beyond Tessera's driver it
//
//   - checks, before the appender starts, that the files a new batch
//     builds on (the hash tiles at the right edge of the tree and the last
//     entry bundle) are whole and hash to the tree state's root: Tessera
//     extends them without checking them, so a torn one (a write lost on
//     storage that does not honour fsync, a truncated file) would
//     otherwise make every later tile wrong;
//   - keeps publication independent of the wall clock: the driver
//     publishes once the published checkpoint is older than the interval,
//     judging its age by the file's modification time, so a checkpoint
//     file whose time is ahead of the clock (the clock was set back) gets
//     the clock's time;
//   - honours store.DriverOptions.Republish by setting that time back past
//     the republish interval.
type Driver struct {
	dir string
}

var (
	_ store.Driver       = (*Driver)(nil)
	_ store.TileRepairer = (*Driver)(nil)
)

// NewDriver returns the driver of the tiles directory dir.
func NewDriver(dir string) *Driver { return &Driver{dir: dir} }

// Reader returns a reader of the tiles directory: Tessera's file fetcher
// (a partial resource falls back to the full one that replaced it) and the
// tree state for the integrated size.
func (d *Driver) Reader(ctx context.Context) (tessera.LogReader, error) {
	return &Reader{FileFetcher: client.FileFetcher{Root: d.dir}, dir: d.dir}, nil
}

// Open checks the right edge of the tree and returns Tessera's POSIX
// driver on the directory, creating it.
func (d *Driver) Open(ctx context.Context, opts store.DriverOptions) (tessera.Driver, error) {
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return nil, fmt.Errorf("couldn't create the tiles directory: %w", err)
	}
	r, _ := d.Reader(ctx)
	if err := checkRightEdge(ctx, r.(*Reader)); err != nil {
		return nil, err
	}
	drv, err := posix.New(ctx, posix.Config{Path: d.dir, HTTPClient: opts.HTTPClient})
	if err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	return &appenderDriver{posix: drv.(appendLifecycle), dir: d.dir, republish: opts.Republish, logger: logger}, nil
}

// RepairTile replaces the hash tile at level, index and width p with tile.
func (d *Driver) RepairTile(ctx context.Context, level, index uint64, p uint8, tile []byte) error {
	return writeFileAtomic(filepath.Join(d.dir, filepath.FromSlash(layout.TilePath(level, index, p))), tile, 0o644)
}

// appendLifecycle is what tessera.NewAppender asks of a driver.
type appendLifecycle interface {
	Appender(context.Context, *tessera.AppendOptions) (*tessera.Appender, tessera.LogReader, error)
}

// appenderDriver is the tessera.Driver Open returns: the POSIX driver,
// with the checkpoint file's time kept in hand.
type appenderDriver struct {
	posix     appendLifecycle
	dir       string
	republish bool
	logger    *slog.Logger
	watch     sync.Once
}

func (a *appenderDriver) Appender(ctx context.Context, opts *tessera.AppendOptions) (*tessera.Appender, tessera.LogReader, error) {
	path := filepath.Join(a.dir, layout.CheckpointPath)
	if a.republish {
		past := time.Now().Add(-opts.CheckpointRepublishInterval() - opts.CheckpointInterval())
		if err := os.Chtimes(path, past, past); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("couldn't have the published checkpoint signed again: %w", err)
		}
	}
	a.watch.Do(func() { go watchCheckpointTime(ctx, path, opts.CheckpointInterval(), a.logger) })
	return a.posix.Appender(ctx, opts)
}

// watchCheckpointTime gives the checkpoint file at path the clock's time
// whenever its time is ahead of the clock by more than interval, until ctx
// is done: Tessera's POSIX driver publishes a new checkpoint only once the
// published one is older than the checkpoint interval, by the file's
// modification time, so after the system clock is set back nothing would
// be published until the clock caught up with the file (an hour set back,
// an hour without checkpoints, and every ?wait=proof failing).
func watchCheckpointTime(ctx context.Context, path string, interval time.Duration, logger *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fi, err := os.Stat(path)
		if err != nil {
			continue
		}
		now := time.Now()
		if ahead := fi.ModTime().Sub(now); ahead > interval {
			if err := os.Chtimes(path, now, now); err != nil {
				logger.Error("the published checkpoint's file time is ahead of the clock, and couldn't be reset: no checkpoint is published until the clock catches up", "ahead", ahead.Round(time.Second), "error", err)
				continue
			}
			logger.Warn("the published checkpoint's file time was ahead of the clock (was the clock set back?); reset it so that publication goes on", "ahead", ahead.Round(time.Second))
		}
	}
}

// Reader reads a tiles directory, appending nothing. It is a
// store.TreeReader.
type Reader struct {
	client.FileFetcher
	dir string
}

var (
	_ tessera.LogReader = (*Reader)(nil)
	_ store.TreeReader  = (*Reader)(nil)
)

// IntegratedSize returns the tree state's size (0 when there is none yet).
func (r *Reader) IntegratedSize(ctx context.Context) (uint64, error) {
	size, _, err := r.IntegratedTree(ctx)
	return size, err
}

// NextIndex is the integrated size: the POSIX driver integrates within Add.
func (r *Reader) NextIndex(ctx context.Context) (uint64, error) { return r.IntegratedSize(ctx) }

// IntegratedTree returns the tree state's size and root (0 and the empty
// tree's root when there is none yet).
func (r *Reader) IntegratedTree(ctx context.Context) (uint64, []byte, error) {
	size, root, err := readTreeState(r.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, rfc6962.DefaultHasher.EmptyRoot(), nil
	}
	return size, root, err
}

// treeStatePath is the tree state's file under the tiles directory.
var treeStatePath = filepath.Join(".state", "treeState")

// readTreeState reads the POSIX driver's tree state; it fails with an
// error wrapping fs.ErrNotExist when there is none.
func readTreeState(tiles string) (uint64, []byte, error) {
	raw, err := os.ReadFile(filepath.Join(tiles, treeStatePath))
	if err != nil {
		return 0, nil, err
	}
	var ts struct {
		Size uint64 `json:"size"`
		Root []byte `json:"root"`
	}
	if err := json.Unmarshal(raw, &ts); err != nil || len(ts.Root) != sha256.Size {
		return 0, nil, fmt.Errorf("tree state file is malformed: %v", err)
	}
	return ts.Size, ts.Root, nil
}

// checkRightEdge checks, before the log appends anything, the files a new
// batch builds on: the last entry bundle and the hash tiles at the right
// edge of the tree must be whole, and must hash, with the last entry, to
// the root of the tree state. Interior tiles are checked when they are read
// (store.CheckTile) and in full by fsck.
func checkRightEdge(ctx context.Context, r *Reader) error {
	size, root, err := readTreeState(r.dir)
	if errors.Is(err, fs.ErrNotExist) || err == nil && size == 0 {
		return nil // a new log
	}
	if err != nil {
		return fmt.Errorf("couldn't read the tree state: %w", err)
	}
	width := func(p uint8) int {
		if p == 0 {
			return layout.TileWidth
		}
		return int(p)
	}
	// Every tile at the right edge, level by level: whole, of its width.
	for level := uint64(0); size>>(level*layout.TileHeight) > 0; level++ {
		n := size >> (level * layout.TileHeight)
		index := (n - 1) / layout.TileWidth
		p := layout.PartialTileSize(level, index, size)
		raw, err := r.ReadTile(ctx, level, index, p)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", store.ErrTileDamaged, layout.TilePath(level, index, p), err)
		}
		if err := store.CheckTile(raw, p); err != nil {
			return fmt.Errorf("%s: %w", layout.TilePath(level, index, p), err)
		}
	}
	// The last entry bundle: whole, and its leaves are the level-0 tile's.
	bundle := (size - 1) / layout.EntryBundleWidth
	p := layout.PartialTileSize(0, bundle, size)
	rawBundle, err := r.ReadEntryBundle(ctx, bundle, p)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", store.ErrTileDamaged, layout.EntriesPath(bundle, p), err)
	}
	if err := store.CheckEntryBundle(rawBundle, p); err != nil {
		return fmt.Errorf("%s: %w", layout.EntriesPath(bundle, p), err)
	}
	var b api.EntryBundle
	if err := b.UnmarshalText(rawBundle); err != nil {
		return fmt.Errorf("%w: %s: %w", store.ErrTileDamaged, layout.EntriesPath(bundle, p), err)
	}
	tile0, err := r.ReadTile(ctx, 0, bundle, p)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", store.ErrTileDamaged, layout.TilePath(0, bundle, p), err)
	}
	for i := 0; i < width(p); i++ {
		if !bytes.Equal(rfc6962.DefaultHasher.HashLeaf(b.Entries[i]), tile0[i*sha256.Size:(i+1)*sha256.Size]) {
			return fmt.Errorf("%w: %s: hash %d is not the hash of entry %d of %s", store.ErrTileDamaged, layout.TilePath(0, bundle, p), i, bundle*layout.EntryBundleWidth+uint64(i), layout.EntriesPath(bundle, p))
		}
	}
	// The tiles' nodes along the last entry's path hash to the root.
	pb, err := client.NewProofBuilder(ctx, size, r.ReadTile)
	if err != nil {
		return fmt.Errorf("%w: %w", store.ErrTileDamaged, err)
	}
	path, err := pb.InclusionProof(ctx, size-1)
	if err != nil {
		return fmt.Errorf("%w: %w", store.ErrTileDamaged, err)
	}
	leaf := rfc6962.DefaultHasher.HashLeaf(b.Entries[width(p)-1])
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, size-1, size, leaf, path, root); err != nil {
		return fmt.Errorf("%w: the tiles at the right edge do not hash to the root of the tree state (size %d): %w", store.ErrTileDamaged, size, err)
	}
	return nil
}

// writeFileAtomic replaces path with data (see atomicfile.Write),
// creating its directory if needed.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("couldn't create %s: %w", dir, err)
	}
	return atomicfile.Write(path, data, perm)
}
