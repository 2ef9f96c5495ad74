package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
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
		put = func(ctx context.Context, size uint64, signed []byte) error { return fa.put(size, signed, false) }
		flush = fa.syncAll
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
