package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"

	"github.com/memtrail/memtrail/internal/atomicfile"
)

// CheckpointArchive keeps the signed checkpoints the log published, one per
// tree size, so that proofs can be given against any of them
// (GET /v1/checkpoints/{size}, /v1/proof/{index}?size=N) and auditors can
// check that any two are consistent.
//
// It is not derived from the log: a checkpoint carries the log's signature
// and the witnesses' cosignatures of the moment it was published, and
// nothing in the log re-creates them. So it is kept apart from the Index,
// which is rebuilt from the log: an index rebuild and fsck --repair never
// touch it. It is backed up with the log (docs/RELIABILITY.md, "Backup and
// restore").
//
// Contract, for every implementation:
//
//   - Put(size, signed) records signed as the checkpoint of tree size size
//     and is durable when it returns nil. signed is a signed note whose
//     text is a tlog-checkpoint of size: its second line is size in
//     decimal; anything else is refused with an error wrapping
//     ErrCheckpointMalformed, and nothing is stored.
//   - One checkpoint is held per size. Putting a size already held with
//     the same bytes is a no-op; with the same note text (the same tree,
//     signed again or with other cosignatures) it replaces the held one
//     atomically: a Get sees the old bytes or the new, never a mixture.
//     With another text it fails with an error wrapping
//     ErrCheckpointConflict and changes nothing (two trees of one size
//     signed by the log would be a fork).
//   - Get returns the checkpoint held for size, or an error wrapping
//     ErrNotFound.
//   - Latest returns the greatest size held and its checkpoint, or an
//     error wrapping ErrNotFound when nothing is held.
//   - Methods are safe for concurrent use, and Get and Latest see every
//     Put that returned before they were called.
//   - Other errors are storage failures.
//
// Who trusts it: nobody has to. Every checkpoint is signed by the log, and
// the log checks that signature before it serves one from the archive. An
// attacker who can write the archive can delete checkpoints (proofs against
// those sizes then fail with not found), or put back an older checkpoint of
// the same tree with fewer cosignatures, but cannot forge one.
type CheckpointArchive interface {
	Put(ctx context.Context, size uint64, signed []byte) error
	Get(ctx context.Context, size uint64) ([]byte, error)
	Latest(ctx context.Context) (uint64, []byte, error)
}

// ErrCheckpointConflict is returned by CheckpointArchive.Put for a
// checkpoint whose text differs from the one held for its size.
var ErrCheckpointConflict = errors.New("another checkpoint of that size is archived")

// ErrCheckpointMalformed is returned by CheckpointArchive.Put for bytes that
// are not a signed checkpoint of the size given.
var ErrCheckpointMalformed = errors.New("not a signed checkpoint of that size")

// checkpointText returns the note text of a signed checkpoint (up to and
// including the newline before the blank line), checking that its second
// line is size.
func checkpointText(size uint64, signed []byte) ([]byte, error) {
	i := bytes.Index(signed, []byte("\n\n"))
	if i < 0 {
		return nil, fmt.Errorf("%w: no signature block", ErrCheckpointMalformed)
	}
	text := signed[:i+1]
	lines := bytes.SplitN(text, []byte("\n"), 3)
	if len(lines) < 3 || string(lines[1]) != strconv.FormatUint(size, 10) {
		return nil, fmt.Errorf("%w: its second line is not the size %d", ErrCheckpointMalformed, size)
	}
	return text, nil
}

// FileCheckpointArchive is the embedded CheckpointArchive: one file per
// checkpoint, DIR/<size/1000>/<size> in decimal (size 1234567 is
// DIR/1234/1234567), holding the signed note as published. A file is
// written to a temporary file, synced and renamed into place, and the
// directories it was created in are synced, so a crash leaves the old file
// or the new one.
//
// Why files and not a database: each file is written once (again only when
// the same tree is re-witnessed) and never changes otherwise, so the
// archive can be copied while the log runs (cp -a, rsync, or any file
// backup) and restored by copying the files back, even into an archive
// that has gone on growing since; every file is a public, signed
// checkpoint that anyone can read and check. One checkpoint per
// --checkpoint-interval in which the tree grew is one small file and one
// sync, and a directory holds at most a thousand of them.
type FileCheckpointArchive struct {
	dir string
	mu  sync.Mutex // serializes Put's read-compare-replace
}

// NewFileCheckpointArchive returns the archive rooted at dir, creating it.
func NewFileCheckpointArchive(dir string) (*FileCheckpointArchive, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("couldn't create the checkpoint archive directory: %w", err)
	}
	return &FileCheckpointArchive{dir: dir}, nil
}

// Dir returns the archive's directory.
func (a *FileCheckpointArchive) Dir() string { return a.dir }

func (a *FileCheckpointArchive) path(size uint64) string {
	return filepath.Join(a.dir, strconv.FormatUint(size/1000, 10), strconv.FormatUint(size, 10))
}

func (a *FileCheckpointArchive) Put(ctx context.Context, size uint64, signed []byte) error {
	text, err := checkpointText(size, signed)
	if err != nil {
		return fmt.Errorf("couldn't archive the checkpoint of size %d: %w", size, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.path(size)
	old, err := os.ReadFile(p)
	switch {
	case err == nil && bytes.Equal(old, signed):
		return nil
	case err == nil:
		// A file that is not a checkpoint of its size (torn by a crash
		// on storage that ignores syncs) is replaced.
		if oldText, err := checkpointText(size, old); err == nil && !bytes.Equal(oldText, text) {
			return fmt.Errorf("couldn't archive the checkpoint of size %d: %w (%s)", size, ErrCheckpointConflict, p)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("couldn't read the archived checkpoint of size %d: %w", size, err)
	}
	sub := filepath.Dir(p)
	if _, err := os.Stat(sub); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return fmt.Errorf("couldn't create %s: %w", sub, err)
		}
		// The new directory's name must be as durable as the file in it.
		if err := atomicfile.SyncDir(a.dir); err != nil {
			return err
		}
	}
	if err := atomicfile.Write(p, signed, 0o644); err != nil {
		return fmt.Errorf("couldn't archive the checkpoint of size %d: %w", size, err)
	}
	return nil
}

func (a *FileCheckpointArchive) Get(ctx context.Context, size uint64) ([]byte, error) {
	b, err := os.ReadFile(a.path(size))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint of size %d: %w", size, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("couldn't read the archived checkpoint of size %d: %w", size, err)
	}
	return b, nil
}

func (a *FileCheckpointArchive) Latest(ctx context.Context) (uint64, []byte, error) {
	groups, err := numberedEntries(a.dir, true)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil, fmt.Errorf("no checkpoint archived: %w", ErrNotFound)
	}
	if err != nil {
		return 0, nil, err
	}
	// The greatest group first; a group left empty (its first Put
	// failed after the directory was made) is skipped.
	for i := len(groups) - 1; i >= 0; i-- {
		sizes, err := numberedEntries(filepath.Join(a.dir, strconv.FormatUint(groups[i], 10)), false)
		if err != nil {
			return 0, nil, err
		}
		for j := len(sizes) - 1; j >= 0; j-- {
			if sizes[j]/1000 != groups[i] {
				continue // not where Put puts it
			}
			b, err := a.Get(ctx, sizes[j])
			if err != nil {
				return 0, nil, err
			}
			return sizes[j], b, nil
		}
	}
	return 0, nil, fmt.Errorf("no checkpoint archived: %w", ErrNotFound)
}

// numberedEntries returns, in increasing order, the decimal names of the
// directories (dirs) or regular files (!dirs) in dir; other names
// (temporary files, anything put there by hand) are ignored.
func numberedEntries(dir string, dirs bool) ([]uint64, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("couldn't list the checkpoint archive: %w", err)
	}
	var out []uint64
	for _, e := range es {
		if e.IsDir() != dirs || (!dirs && !e.Type().IsRegular()) {
			continue
		}
		n, err := strconv.ParseUint(e.Name(), 10, 64)
		if err != nil || strconv.FormatUint(n, 10) != e.Name() {
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// legacyCheckpointIndex is an index that may hold checkpoints archived by
// an earlier memtrail, which kept the archive in index.db (SQLiteIndex).
type legacyCheckpointIndex interface {
	legacyCheckpoints(ctx context.Context, fn func(size uint64, signed []byte) error) (int, error)
	dropLegacyCheckpoints(ctx context.Context) error
}

// migrateCheckpoints moves the checkpoints an earlier memtrail archived in
// the index into the archive: all of them are put, and made durable, before
// they are removed from the index, so a crash in between only means they
// are moved again (putting the same bytes is a no-op). It returns how many
// were moved.
func migrateCheckpoints(ctx context.Context, x Index, a CheckpointArchive) (int, error) {
	legacy, ok := x.(legacyCheckpointIndex)
	if !ok {
		return 0, nil
	}
	put := a.Put
	flush := func() error { return nil }
	if fa, ok := a.(*FileCheckpointArchive); ok {
		// One sync per checkpoint would make moving a long-running log's
		// millions of checkpoints take hours: write them all, then sync
		// the file system once.
		put, flush = fa.putUnsynced, fa.syncAll
	}
	n, err := legacy.legacyCheckpoints(ctx, func(size uint64, signed []byte) error {
		err := put(ctx, size, signed)
		if errors.Is(err, ErrCheckpointConflict) || errors.Is(err, ErrCheckpointMalformed) {
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
		return 0, legacy.dropLegacyCheckpoints(ctx)
	}
	if err := flush(); err != nil {
		return 0, err
	}
	return n, legacy.dropLegacyCheckpoints(ctx)
}

// putUnsynced is Put without syncing, for migrateCheckpoints, which calls
// syncAll once the whole batch is written. A file torn by a crash before
// that is a malformed one, which the next Put replaces.
func (a *FileCheckpointArchive) putUnsynced(ctx context.Context, size uint64, signed []byte) error {
	text, err := checkpointText(size, signed)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.path(size)
	if old, err := os.ReadFile(p); err == nil {
		if bytes.Equal(old, signed) {
			return nil
		}
		if oldText, err := checkpointText(size, old); err == nil && !bytes.Equal(oldText, text) {
			return ErrCheckpointConflict
		}
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("couldn't create %s: %w", filepath.Dir(p), err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp-*")
	if err != nil {
		return fmt.Errorf("couldn't archive the checkpoint of size %d: %w", size, err)
	}
	_, werr := f.Write(signed)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(f.Name(), 0o644), os.Rename(f.Name(), p)); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("couldn't archive the checkpoint of size %d: %w", size, err)
	}
	return nil
}

// syncAll makes everything putUnsynced wrote durable.
func (a *FileCheckpointArchive) syncAll() error {
	syscall.Sync()
	return atomicfile.SyncDir(a.dir)
}

// ErrArchiveAhead is returned by Open when the checkpoint archive holds a
// checkpoint of a size beyond the log's tree: the tiles are older than the
// archive (restored from an older backup, say). Appending to such a log
// would sign a different tree at a size it published before, a fork.
var ErrArchiveAhead = errors.New("the checkpoint archive is ahead of the log")

// checkArchiveBehind checks that the archive holds no checkpoint beyond the
// tree in the tiles directory.
func checkArchiveBehind(ctx context.Context, a CheckpointArchive, tiles string) error {
	asize, _, err := a.Latest(ctx)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	size, _, err := readTreeState(tiles)
	if errors.Is(err, fs.ErrNotExist) {
		size, err = 0, nil
	}
	if err != nil {
		return fmt.Errorf("couldn't read the tree state: %w", err)
	}
	if asize > size {
		return fmt.Errorf("%w: it holds a checkpoint of size %d, the log has %d entries", ErrArchiveAhead, asize, size)
	}
	return nil
}

// sizes lists every archived size, in increasing order (for fsck).
func (a *FileCheckpointArchive) sizes() ([]uint64, error) {
	groups, err := numberedEntries(a.dir, true)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, g := range groups {
		sizes, err := numberedEntries(filepath.Join(a.dir, strconv.FormatUint(g, 10)), false)
		if err != nil {
			return nil, err
		}
		for _, s := range sizes {
			if s/1000 == g {
				out = append(out, s)
			}
		}
	}
	return out, nil
}
