package posixstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/memtrail/memtrail/log/store"
)

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

// errIndexGone is the probe's failure when the embedded index's file was
// removed or replaced under the running log: its connections no longer
// agree on one database, so submissions stop until a restart rebuilds the
// index from the log.
var errIndexGone = errors.New("the index file was removed or replaced while the log was running; restart memtrail serve to rebuild it from the log")

// Health is the store.Health of a data directory: a failure is the
// storage's when it is a file system's (full, quota, read-only, permission,
// I/O error) or SQLite's text for one, and the probe writes a file in each
// directory the log writes in and checks that the index file is still the
// one the index opened.
type Health struct {
	dirs []string
	// indexPath is the index's file and indexFile what it was at the
	// start (nil: not checked).
	indexPath string
	indexFile os.FileInfo
}

var _ store.Health = (*Health)(nil)

// NewHealth returns the Health of the directories dirs; indexPath, if not
// "", is a file that must stay the one it is now.
func NewHealth(dirs []string, indexPath string) *Health {
	h := &Health{dirs: dirs}
	if indexPath != "" {
		if fi, err := os.Stat(indexPath); err == nil {
			h.indexPath, h.indexFile = indexPath, fi
		}
	}
	return h
}

// Unavailable reports whether err is a file system's failure to write, or
// the index file's replacement.
func (h *Health) Unavailable(err error) bool {
	return isStorageError(err) || errors.Is(err, errIndexGone)
}

// Probe checks that every directory takes a new file of size bytes. The
// file is not synced: space is reserved when it is written.
func (h *Health) Probe(ctx context.Context, size int) error {
	if h.indexFile != nil {
		if fi, err := os.Stat(h.indexPath); err != nil || !os.SameFile(fi, h.indexFile) {
			return fmt.Errorf("%s: %w", h.indexPath, errIndexGone)
		}
	}
	buf := make([]byte, size)
	for _, dir := range h.dirs {
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
