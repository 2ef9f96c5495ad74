package log

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrStorageUnavailable is returned while the log cannot write to its data
// directory: the disk is full, the directory or its file system was made
// read-only, or a write failed with an I/O error. Submissions are refused,
// and nothing is acknowledged that was not written; reads, lookups and
// proofs go on. The log probes the directory and accepts submissions again
// once it is writable.
var ErrStorageUnavailable = errors.New("the log cannot write to its data directory")

// storageErrnos are the write failures that mean the storage, not the
// submission, is at fault.
var storageErrnos = []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EFBIG, syscall.EROFS, syscall.EACCES, syscall.EPERM, syscall.EIO}

// sqliteStorageErrors are SQLite's texts for the same failures
// (SQLITE_FULL, SQLITE_READONLY, SQLITE_IOERR).
var sqliteStorageErrors = []string{"database or disk is full", "attempt to write a readonly database", "disk I/O error"}

// isStorageError reports whether err is one of storageErrnos or of
// sqliteStorageErrors. Tessera formats some of its errors with %v, which
// drops the errno but keeps its text, so the text is matched too.
func isStorageError(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	for _, e := range storageErrnos {
		if errors.Is(err, e) || strings.Contains(msg, e.Error()) {
			return true
		}
	}
	for _, m := range sqliteStorageErrors {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// Probe intervals: while the storage is healthy a small probe runs now and
// then to notice a directory made read-only before a sequencing batch
// trips over it; while it is not, a larger probe runs often, to notice
// that space was freed.
const (
	probeHealthy  = time.Second
	probeDegraded = 250 * time.Millisecond
	// probeSize is written by the probe while degraded: a disk that cannot
	// take it would fail the next batch.
	probeSize = 1 << 20
)

// errIndexGone is the probe's failure when the embedded index's file was
// removed or replaced under the running log: its connections no longer
// agree on one database, so submissions stop until a restart rebuilds the
// index from the log.
var errIndexGone = errors.New("the index file was removed or replaced while the log was running; restart memtrail serve to rebuild it from the log")

// storageGuard keeps track of whether the data directory is writable.
type storageGuard struct {
	dirs    []string
	logger  *slog.Logger
	metrics *Metrics
	// indexPath is the embedded index's file and indexFile what it was at
	// the start (nil with another Index).
	indexPath string
	indexFile os.FileInfo

	mu    sync.Mutex
	err   error // the failure that made the storage unavailable; nil when it is writable
	since time.Time
}

// unavailable returns the refusal for submissions while the storage is
// not writable, or nil.
func (g *storageGuard) unavailable() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil {
		return nil
	}
	return fmt.Errorf("%w (since %s): %w", ErrStorageUnavailable, g.since.UTC().Format(time.RFC3339), g.err)
}

// failed examines a write failure. If it is a storage failure the log
// stops accepting submissions until a probe succeeds, and the returned
// error wraps ErrStorageUnavailable; otherwise err is returned as is.
func (g *storageGuard) failed(err error) error {
	if !isStorageError(err) {
		return err
	}
	g.degrade(err)
	return fmt.Errorf("%w: %w", ErrStorageUnavailable, err)
}

func (g *storageGuard) degrade(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return
	}
	g.err, g.since = err, time.Now()
	g.metrics.storageWritable.Store(0)
	g.logger.Error("refusing submissions: the log cannot write to its data directory (free space, make it writable, or as the error says); reads go on", "error", err)
}

func (g *storageGuard) recover() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil {
		return
	}
	g.logger.Info("accepting submissions: the log can write to its data directory again", "unavailable_for", time.Since(g.since).Round(time.Millisecond))
	g.err = nil
	g.metrics.storageWritable.Store(1)
}

// probe checks that every directory of the log takes a new file of size
// bytes. The file is not synced: space is reserved when it is written.
func (g *storageGuard) probe(size int) error {
	if g.indexFile != nil {
		if fi, err := os.Stat(g.indexPath); err != nil || !os.SameFile(fi, g.indexFile) {
			return fmt.Errorf("%s: %w", g.indexPath, errIndexGone)
		}
	}
	buf := make([]byte, size)
	for _, dir := range g.dirs {
		f, err := os.CreateTemp(dir, ".probe-*")
		if err != nil {
			return fmt.Errorf("couldn't create a file in %s: %w", dir, err)
		}
		_, werr := f.Write(buf)
		cerr := f.Close()
		rerr := os.Remove(f.Name())
		if err := errors.Join(werr, cerr, rerr); err != nil {
			return fmt.Errorf("couldn't write a file in %s: %w", dir, err)
		}
	}
	return nil
}

// run probes the storage until ctx is done.
func (g *storageGuard) run(ctx context.Context) {
	for {
		g.mu.Lock()
		degraded := g.err != nil
		g.mu.Unlock()
		wait, size := probeHealthy, 0
		if degraded {
			wait, size = probeDegraded, probeSize
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		switch err := g.probe(size); {
		case err == nil && degraded:
			g.recover()
		case err != nil && (isStorageError(err) || errors.Is(err, errIndexGone)):
			g.degrade(err)
		case err != nil:
			g.logger.Warn("couldn't probe the data directory", "error", err)
		}
	}
}

// storageDirs returns the directories the log writes in.
func storageDirs(cfg Config) []string {
	dirs := []string{cfg.Dir, filepath.Join(cfg.Dir, tilesDir)}
	if cfg.Manifests == nil {
		dirs = append(dirs, filepath.Join(cfg.Dir, "manifests"))
	}
	if cfg.Checkpoints == nil {
		dirs = append(dirs, filepath.Join(cfg.Dir, checkpointsDir))
	}
	return dirs
}
