// Package posixstore is the embedded storage of a memtrail log: a data
// directory of files on a POSIX file system (internal/datadir gives its
// layout), with the index beside them in SQLite (log/sqliteindex). Each part
// is a store seam's implementation and runs its contract suite:
//
//   - Driver, Tessera's POSIX driver on DIR/log, and Reader, which reads
//     it without appending;
//   - FileManifestStore, the manifests as files under DIR/manifests;
//   - FileCheckpointArchive, the published checkpoints in append-only
//     segment files under DIR/checkpoints;
//   - DirLock, the store.Lease: the kernel's lock on DIR/memtrail.lock;
//   - Health, which reads file-system and SQLite failures and probes the
//     directories.
//
// Open assembles them into the store.Parts that log.Open takes, and
// OpenCheck into the store.Check that log.Fsck takes.
package posixstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/memtrail/memtrail/internal/datadir"
	"github.com/memtrail/memtrail/log/sqliteindex"
	"github.com/memtrail/memtrail/log/store"
)

// Config says which data directory Open opens.
type Config struct {
	// Dir is the data directory; it is created if missing. It may be
	// left empty when Lock is set.
	Dir string
	// Lock is the directory's lock, taken by the caller with LockDir (to
	// write into the directory before the log opens). Nil makes Open take
	// it. Either way the returned parts own it (store.Parts.Lease), and a
	// failed Open releases it.
	Lock *DirLock
	// Logger receives what Open has to say (default slog.Default()).
	Logger *slog.Logger
}

// Open opens (or creates) the data directory for a log, and returns its
// parts for log.Config.Storage. While another process has the directory
// open it fails with an error wrapping ErrDirInUse; a directory the log
// cannot write, with an error wrapping store.ErrStorageUnavailable.
//
// A data directory of an earlier memtrail, which kept the checkpoint
// archive in the index, has its checkpoints moved into the archive here.
func Open(ctx context.Context, cfg Config) (parts store.Parts, err error) {
	lock := cfg.Lock
	defer func() {
		if err != nil {
			lock.Release()
		}
	}()
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	dir := cfg.Dir
	// Nothing is written into the directory before its lock is held.
	switch {
	case lock == nil:
		if dir == "" {
			return store.Parts{}, errors.New("posixstore: Config.Dir or Config.Lock is required")
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return store.Parts{}, fmt.Errorf("posixstore: couldn't create data directory: %w", err)
		}
		if lock, err = lockDir(dir); err != nil {
			return store.Parts{}, fmt.Errorf("posixstore: %w", err)
		}
	case dir == "":
		dir = lock.dir
		fallthrough
	default:
		if !lock.holds(dir) {
			return store.Parts{}, fmt.Errorf("posixstore: Config.Lock is not a held lock of %s", dir)
		}
	}
	tiles := filepath.Join(dir, datadir.Tiles)
	if err := os.MkdirAll(tiles, 0o755); err != nil {
		return store.Parts{}, fmt.Errorf("posixstore: couldn't create data directory: %w", err)
	}
	manifests, err := NewFileManifestStore(filepath.Join(dir, datadir.Manifests))
	if err != nil {
		return store.Parts{}, fmt.Errorf("posixstore: %w", err)
	}
	archive, err := NewFileCheckpointArchive(filepath.Join(dir, datadir.Checkpoints))
	if err != nil {
		return store.Parts{}, fmt.Errorf("posixstore: %w", err)
	}
	// A directory the log cannot write is refused here, with a clear
	// error: SQLite would open it read-only without saying so, and
	// Tessera's POSIX driver would panic on its lock file.
	dirs := []string{dir, tiles, manifests.dir, archive.dir}
	if err := NewHealth(dirs, "").Probe(ctx, 0); err != nil {
		return store.Parts{}, fmt.Errorf("posixstore: %w: %w", store.ErrStorageUnavailable, err)
	}
	indexPath := filepath.Join(dir, datadir.Index)
	index, err := sqliteindex.OpenSQLiteIndex(indexPath)
	if err != nil {
		return store.Parts{}, fmt.Errorf("posixstore: %w", err)
	}
	if n, err := migrateCheckpoints(ctx, index, archive); err != nil {
		index.Close()
		return store.Parts{}, fmt.Errorf("posixstore: %w", err)
	} else if n > 0 {
		logger.Info("moved the checkpoint archive out of the index into its own store", "checkpoints", n, "dir", archive.dir)
	}
	return store.Parts{
		Driver:      NewDriver(tiles),
		Index:       index,
		Manifests:   manifests,
		Checkpoints: archive,
		Lease:       lock,
		Health:      NewHealth(dirs, indexPath),
	}, nil
}

// OpenCheck opens the data directory dir of a log that is not running for
// log.Fsck. It takes the directory's lock, so it refuses (ErrDirInUse)
// while memtrail serve runs on it; a directory it cannot write is opened
// without the lock for a check, but not for repair. A check writes
// nothing: a missing index is not created, nor is a missing archive.
func OpenCheck(ctx context.Context, dir string, repair bool) (store.Check, error) {
	lock, err := lockDir(dir)
	switch {
	case errors.Is(err, ErrDirInUse):
		return store.Check{}, fmt.Errorf("%w: stop memtrail serve before checking its directory", err)
	case err != nil && repair:
		return store.Check{}, err
	}
	tiles := filepath.Join(dir, datadir.Tiles)
	if _, err := os.Stat(filepath.Join(tiles, treeStatePath)); errors.Is(err, fs.ErrNotExist) {
		lock.Release()
		return store.Check{}, fmt.Errorf("%s holds no log (no %s): %w", dir, filepath.Join(datadir.Tiles, treeStatePath), err)
	}
	manifests, err := NewFileManifestStore(filepath.Join(dir, datadir.Manifests))
	if err != nil {
		lock.Release()
		return store.Check{}, err
	}
	archive := &FileCheckpointArchive{dir: filepath.Join(dir, datadir.Checkpoints)}
	if repair {
		if archive, err = NewFileCheckpointArchive(archive.dir); err != nil {
			lock.Release()
			return store.Check{}, err
		}
	}
	c := store.Check{Parts: store.Parts{Driver: NewDriver(tiles), Manifests: manifests, Checkpoints: archive}}
	if lock != nil {
		c.Lease = lock
	}
	indexPath := filepath.Join(dir, datadir.Index)
	if _, err := os.Stat(indexPath); errors.Is(err, fs.ErrNotExist) {
		c.IndexErr = fmt.Errorf("the index database %s is missing: memtrail serve (or fsck --repair) rebuilds it from the log: %w", indexPath, err)
	} else if x, err := sqliteindex.OpenSQLiteIndex(indexPath); err != nil {
		c.IndexErr = err
	} else {
		c.Index = x
		if repair {
			// The checkpoint archive is not in the index, but an index
			// written by an earlier memtrail may still hold the checkpoints
			// it archived: they are moved out before fsck touches the index.
			if _, err := migrateCheckpoints(ctx, x, archive); err != nil {
				c.Close()
				return store.Check{}, err
			}
		}
	}
	if repair {
		c.NewIndex = func(ctx context.Context) (store.Index, error) {
			for _, suffix := range []string{"", "-wal", "-shm", "-ids"} {
				os.Remove(indexPath + suffix)
			}
			x, err := sqliteindex.OpenSQLiteIndex(indexPath)
			if err != nil {
				return nil, fmt.Errorf("couldn't recreate the index: %w", err)
			}
			return x, nil
		}
	}
	return c, nil
}

// PublishedCheckpoint returns the signed checkpoint the log in the data
// directory dir published last, as it is served at /checkpoint, for a log
// that is not open (memtrail serve reads it before it opens the log). It
// returns an error wrapping fs.ErrNotExist when the log has published
// none.
func PublishedCheckpoint(dir string) ([]byte, error) {
	r, err := NewDriver(filepath.Join(dir, datadir.Tiles)).Reader(context.Background())
	if err != nil {
		return nil, err
	}
	return r.ReadCheckpoint(context.Background())
}

// migrateCheckpoints moves the checkpoints an earlier memtrail archived in
// the index into the archive: all of them are put, and made durable, before
// they are removed from the index, so a crash in between only means they
// are moved again (putting the same bytes is a no-op). It returns how many
// were moved.
func migrateCheckpoints(ctx context.Context, x *sqliteindex.SQLiteIndex, a *FileCheckpointArchive) (int, error) {
	// One sync per checkpoint would make moving a long-running log's
	// millions of checkpoints take hours: write them all, then sync the
	// file system once.
	n, err := x.LegacyCheckpoints(ctx, func(size uint64, signed []byte) error {
		err := a.put(size, signed, false)
		if errors.Is(err, store.ErrCheckpointConflict) || errors.Is(err, store.ErrCheckpointMalformed) {
			// The archive's own copy wins over a conflicting one, and a
			// row that is not a checkpoint of its size is not one to keep.
			return nil
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("couldn't move the checkpoints archived in the index into the checkpoint archive: %w", err)
	}
	if n == 0 {
		return 0, x.DropLegacyCheckpoints(ctx)
	}
	if err := a.syncAll(); err != nil {
		return 0, err
	}
	return n, x.DropLegacyCheckpoints(ctx)
}
