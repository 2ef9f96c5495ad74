package verifier

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// maxConsistencyPath bounds a consistency proof: at most two hashes per level
// of a tree of at most 2^64 leaves.
const maxConsistencyPath = 128

// ForkKind says why two checkpoints of one log cannot both be true.
type ForkKind string

const (
	// ForkSameSize: both checkpoints have the same size and different root
	// hashes. The two signed checkpoints alone prove that the log forked.
	ForkSameSize ForkKind = "same_size_different_root"

	// ForkInconsistent: the consistency proof from the older to the newer
	// checkpoint does not verify. This is evidence against the log when the
	// log itself served the proof; anyone can write a wrong proof, so it does
	// not convince a third party by itself.
	ForkInconsistent ForkKind = "inconsistent"

	// ForkRollback: the checkpoint seen later is smaller than the one seen
	// before, so the log is presenting an older view than it already showed.
	ForkRollback ForkKind = "rollback"
)

// ForkError reports two checkpoints of the same log that cannot both be true
// of one append-only log, with the signed checkpoints (and the consistency
// proof, if any) as evidence. It matches [ErrSecurity] with [errors.Is], and
// for [ForkInconsistent] also [ErrConsistency].
type ForkError struct {
	Kind   ForkKind `json:"kind"`
	Origin string   `json:"origin"`

	// Older and Newer are the raw signed checkpoints, in the order they were
	// given: Older was seen first.
	Older []byte `json:"older"`
	Newer []byte `json:"newer"`

	// Proof is the consistency proof that failed, if any.
	Proof [][]byte `json:"proof,omitempty"`

	// Err is the underlying verification failure, if any.
	Err error `json:"-"`
}

func (e *ForkError) Error() string {
	msg := fmt.Sprintf("verifier: log %q forked (%s)", e.Origin, e.Kind)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is reports whether target is [ErrSecurity].
func (e *ForkError) Is(target error) bool { return target == ErrSecurity }

func (e *ForkError) Unwrap() error { return e.Err }

// Conclusive reports whether the two signed checkpoints alone, with no proof,
// demonstrate the fork to anyone holding the log's public key.
func (e *ForkError) Conclusive() bool { return e.Kind == ForkSameSize }

// CheckConsistency checks that newer, a checkpoint seen after older, extends
// older, using a consistency proof from older's size to newer's (RFC 6962
// §2.1.2; empty when the sizes are equal or older is empty). Both checkpoints
// should come from [OpenCheckpoint] under the same policy.
//
// When the two cannot both be true of an append-only log, the error is a
// *[ForkError] carrying both raw checkpoints and the proof:
//
//   - equal sizes with different root hashes ([ForkSameSize]);
//   - a proof that does not verify ([ForkInconsistent]);
//   - newer smaller than older ([ForkRollback]; no proof is checked).
//
// Equal checkpoints, and an empty older checkpoint, need no proof; a non-empty
// one, proof hashes that are not 32 bytes, or more than 128 of them, make the
// error match [ErrMalformed] instead. Checkpoints of two different origins are not
// comparable and give an error that is neither.
func CheckConsistency(older, newer *Checkpoint, consistencyProof [][]byte) error {
	if older == nil || newer == nil {
		return errors.New("verifier: nil checkpoint")
	}
	if older.Origin != newer.Origin {
		return fmt.Errorf("verifier: checkpoints of different logs %q and %q", older.Origin, newer.Origin)
	}
	if err := checkProofHashes(consistencyProof); err != nil {
		return fmt.Errorf("verifier: %w", err)
	}
	fork := func(kind ForkKind, err error) error {
		return &ForkError{
			Kind:   kind,
			Origin: older.Origin,
			Older:  older.Raw,
			Newer:  newer.Raw,
			Proof:  consistencyProof,
			Err:    err,
		}
	}
	switch {
	case newer.Size < older.Size:
		return fork(ForkRollback, fmt.Errorf("size %d after size %d", newer.Size, older.Size))
	case newer.Size == older.Size && newer.Hash != older.Hash:
		return fork(ForkSameSize, fmt.Errorf("size %d with roots %s and %s", older.Size,
			base64.StdEncoding.EncodeToString(older.Hash[:]), base64.StdEncoding.EncodeToString(newer.Hash[:])))
	case newer.Size == older.Size || older.Size == 0:
		// The checkpoints alone settle it: they are consistent, and there is
		// nothing to prove.
		if len(consistencyProof) != 0 {
			return fmt.Errorf("verifier: %w: consistency proof from size %d to %d must be empty", ErrMalformed, older.Size, newer.Size)
		}
		return nil
	}
	if err := verifyConsistency(older.Size, newer.Size, consistencyProof, older.Hash[:], newer.Hash[:]); err != nil {
		return fork(ForkInconsistent, err)
	}
	return nil
}

// IsRollback reports whether current, seen after previous, is a checkpoint of
// the same log with fewer leaves: the log is showing an older state than it
// already showed. [CheckConsistency] reports the same case as a *[ForkError]
// of kind [ForkRollback].
func IsRollback(previous, current *Checkpoint) bool {
	return previous != nil && current != nil &&
		previous.Origin == current.Origin && current.Size < previous.Size
}

// VerifyConsistency checks an RFC 6962 consistency proof between the tree of
// size1 with root hash root1 and the tree of size2 with root hash root2.
//
// It follows the rules of the transparency-dev/merkle vectors: size1 must be
// at least 1 (a proof from the empty tree proves nothing), size2 at least
// size1, and when the sizes are equal the proof must be empty and the roots
// byte-for-byte equal. Proof hashes that are not 32 bytes, and otherwise roots
// that are not 32 bytes, make the error match [ErrMalformed]; any other
// failure matches [ErrConsistency].
//
// [CheckConsistency] applies this to checkpoints, where an empty older
// checkpoint is trivially consistent with any newer one.
func VerifyConsistency(size1, size2 uint64, consistencyProof [][]byte, root1, root2 []byte) error {
	if err := checkProofHashes(consistencyProof); err != nil {
		return fmt.Errorf("verifier: %w", err)
	}
	if err := verifyConsistency(size1, size2, consistencyProof, root1, root2); err != nil {
		return fmt.Errorf("verifier: %w", err)
	}
	return nil
}

func checkProofHashes(p [][]byte) error {
	if len(p) > maxConsistencyPath {
		return fmt.Errorf("%w: consistency proof of %d hashes", ErrMalformed, len(p))
	}
	for _, h := range p {
		if len(h) != sha256.Size {
			return fmt.Errorf("%w: consistency proof hash of %d bytes", ErrMalformed, len(h))
		}
	}
	return nil
}

func verifyConsistency(size1, size2 uint64, p [][]byte, root1, root2 []byte) error {
	switch {
	case size1 > size2:
		return fmt.Errorf("%w: size %d is larger than size %d", ErrConsistency, size1, size2)
	case size1 == 0:
		return fmt.Errorf("%w: a proof from the empty tree proves nothing", ErrConsistency)
	case size1 == size2:
		if len(p) != 0 {
			return fmt.Errorf("%w: proof between equal sizes must be empty", ErrConsistency)
		}
		if !bytes.Equal(root1, root2) {
			return fmt.Errorf("%w: different roots at size %d", ErrConsistency, size1)
		}
		return nil
	}
	if len(root1) != sha256.Size || len(root2) != sha256.Size {
		return fmt.Errorf("%w: root hashes must be %d bytes", ErrMalformed, sha256.Size)
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, size1, size2, p, root1, root2); err != nil {
		return fmt.Errorf("%w: %w", ErrConsistency, describeMerkle(err))
	}
	return nil
}
