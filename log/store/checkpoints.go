package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
// Contract, for every implementation (TestCheckpointArchive checks it):
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
//   - Range calls fn with every checkpoint held of a size in [from, to),
//     in increasing size, and stops at fn's first error, which it returns.
//     Damage in the store (bytes that are not what Put wrote) is reported
//     as an error after fn was called for what could be read.
//   - Methods are safe for concurrent use, and Get, Latest and Range see
//     every Put that returned before they were called.
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
	Range(ctx context.Context, from, to uint64, fn func(size uint64, signed []byte) error) error
}

// ErrCheckpointConflict is returned by CheckpointArchive.Put for a
// checkpoint whose text differs from the one held for its size.
var ErrCheckpointConflict = errors.New("another checkpoint of that size is archived")

// ErrCheckpointMalformed is returned by CheckpointArchive.Put for bytes that
// are not a signed checkpoint of the size given.
var ErrCheckpointMalformed = errors.New("not a signed checkpoint of that size")

// CheckpointText returns the note text of a signed checkpoint (up to and
// including the newline before the blank line), checking that its second
// line is size; otherwise it returns an error wrapping
// ErrCheckpointMalformed. Archives compare texts to tell a checkpoint
// signed again from another tree of the same size.
func CheckpointText(size uint64, signed []byte) ([]byte, error) {
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
