package verifier

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/memtrail/memtrail/internal/tlogfmt"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// Limits on a tlog-proof. An inclusion path in a tree of at most 2^64 leaves
// has at most 64 hashes.
const (
	maxProofSize     = tlogfmt.MaxProofSize
	maxInclusionPath = tlogfmt.MaxInclusionPath
)

var errMalformedProof error = malformedError("malformed tlog proof")

// InclusionProof is a parsed [C2SP tlog-proof]: an offline proof that the leaf
// at Index is in the tree of a signed checkpoint.
//
// The encoded form is a header line, an optional extra line, the index line,
// the inclusion path one base64 hash per line from the leaf's sibling up, an
// empty line, and the signed checkpoint verbatim (signatures shortened here):
//
//	c2sp.org/tlog-proof@v1
//	extra Y29udGV4dA==
//	index 5
//	GNgcj037S5yzdXw7bG4QDOdAwRZQOMs1KrgBzjgmMmc=
//	VlKS5ObAdYITnDGJ3g2487gpz+eBF5wdPkkyjmOUSPw=
//	0WbOG7xWRm3BpRSBljLpIhu9KyzOUrLOw+GuBR41VzQ=
//
//	example.com/memtrail
//	8
//	OPYi+o2V1pmTMUgSCBndmtuDacXwq1W2LY5Tp9Mtlfw=
//
//	— example.com/memtrail j78KMFTlbB0ZSX8evc3Rj8kmXtbfJ6VmGHhN...
//	— witness1.example OHutCAAAAABqbTc8ntNuCkqBxm/JY8Xjsql44P9h...
//	— witness2.example PWblpwAAAABqbTc96OOrdugCQxHIEwLKe5iqXLiX...
//
// [C2SP tlog-proof]: https://c2sp.org/tlog-proof
type InclusionProof struct {
	// Extra is the optional opaque extra data. It is not authenticated:
	// nothing in the proof vouches for it. Nil means the proof has no extra
	// line; an empty non-nil slice means an extra line with no data.
	Extra []byte

	// Index is the zero-based index of the leaf in the log.
	Index uint64

	// Path is the RFC 6962 inclusion path, 32-byte hashes from the leaf's
	// sibling up to the root's child.
	Path [][]byte

	// Checkpoint is the signed checkpoint, verbatim.
	Checkpoint []byte
}

// ParseProof parses a tlog-proof without verifying it.
//
// It is strict, so that parsing and formatting give back the same bytes:
// every line ends with a newline (no carriage returns); base64 is canonical
// standard base64 with padding; the index is decimal without sign or leading
// zeroes and fits in 64 bits; there are at most 64 path hashes, each 32 bytes;
// the checkpoint is non-empty and ends with a newline. The whole proof is at
// most 576 KiB. Every failure is the same error, which matches
// [ErrMalformed]. The checkpoint is checked only by [OpenCheckpoint] (and so
// by [VerifyProof]).
func ParseProof(b []byte) (*InclusionProof, error) {
	p, ok := parseProof(b)
	if !ok {
		return nil, fmt.Errorf("verifier: %w", errMalformedProof)
	}
	return p, nil
}

func parseProof(b []byte) (*InclusionProof, bool) {
	p, ok := tlogfmt.ParseProof(b)
	if !ok {
		return nil, false
	}
	return (*InclusionProof)(p), true
}

// FormatProof encodes a tlog-proof without extra data: the leaf index, its
// RFC 6962 inclusion path (as returned by a tlog-tiles client or
// github.com/transparency-dev/merkle/proof) and the signed checkpoint the
// path leads to, which is copied verbatim.
//
// FormatProof does not check its inputs. A path hash that is not 32 bytes or a
// checkpoint that does not end in a newline yields bytes that [ParseProof]
// refuses.
func FormatProof(index uint64, path [][]byte, checkpoint []byte) []byte {
	return tlogfmt.FormatProof(index, path, checkpoint)
}

// Format encodes p as a tlog-proof. For any p returned by [ParseProof],
// Format returns the bytes it was parsed from.
func (p *InclusionProof) Format() []byte { return (*tlogfmt.Proof)(p).Format() }

// VerifyProof verifies a tlog-proof for the leaf whose RFC 6962 leaf hash is
// leafHash (see [LeafHash]), under policy p, following the steps of
// c2sp.org/tlog-proof: it parses the proof ([ParseProof]), opens its
// checkpoint under p ([OpenCheckpoint]: the log's signature for the origin and
// the witness quorum), and checks that the inclusion path leads from the leaf
// at the proof's index to the checkpoint's root hash ([VerifyInclusion]).
//
// It returns the parsed proof and the opened checkpoint. Errors match
// [ErrMalformed] or [ErrSecurity]; a path that does not lead to the root
// matches [ErrInclusion]. The proof's extra data is returned but not trusted.
func VerifyProof(p *Policy, tlogProof []byte, leafHash []byte) (*InclusionProof, *Checkpoint, error) {
	if len(leafHash) != sha256.Size {
		return nil, nil, fmt.Errorf("verifier: %w: leaf hash is %d bytes, want %d", ErrMalformed, len(leafHash), sha256.Size)
	}
	ip, ok := parseProof(tlogProof)
	if !ok {
		return nil, nil, fmt.Errorf("verifier: %w", errMalformedProof)
	}
	c, err := openCheckpoint(p, ip.Checkpoint)
	if err != nil {
		return nil, nil, fmt.Errorf("verifier: tlog proof checkpoint: %w", err)
	}
	if err := verifyInclusion(ip.Index, c.Size, leafHash, ip.Path, c.Hash[:]); err != nil {
		return nil, nil, fmt.Errorf("verifier: tlog proof for index %d in %s at size %d: %w", ip.Index, c.Origin, c.Size, err)
	}
	return ip, c, nil
}

// LeafHash returns the RFC 6962 hash of a log entry, SHA-256(0x00 || entry).
func LeafHash(entry []byte) []byte {
	h := tlogfmt.LeafHash(entry)
	return h[:]
}

// VerifyInclusion checks an RFC 6962 inclusion path for the leaf with hash
// leafHash at index in the tree of the given size and root hash.
//
// Hashes that are not 32 bytes make the error match [ErrMalformed]; any other
// failure (index not below size, wrong path length, root mismatch) matches
// [ErrInclusion].
func VerifyInclusion(index, size uint64, leafHash []byte, path [][]byte, root []byte) error {
	if err := verifyInclusion(index, size, leafHash, path, root); err != nil {
		return fmt.Errorf("verifier: %w", err)
	}
	return nil
}

func verifyInclusion(index, size uint64, leafHash []byte, path [][]byte, root []byte) error {
	if len(leafHash) != sha256.Size || len(root) != sha256.Size {
		return fmt.Errorf("%w: leaf and root hashes must be %d bytes", ErrMalformed, sha256.Size)
	}
	if len(path) > maxInclusionPath {
		return fmt.Errorf("%w: inclusion path of %d hashes", ErrMalformed, len(path))
	}
	for _, h := range path {
		if len(h) != sha256.Size {
			return fmt.Errorf("%w: inclusion path hash of %d bytes", ErrMalformed, len(h))
		}
	}
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, index, size, leafHash, path, root); err != nil {
		return fmt.Errorf("%w: %w", ErrInclusion, describeMerkle(err))
	}
	return nil
}

// describeMerkle rewrites the merkle package's root mismatch, whose message
// prints hashes as decimal byte lists, with base64 hashes.
func describeMerkle(err error) error {
	var m proof.RootMismatchError
	if errors.As(err, &m) {
		return fmt.Errorf("calculated root %s, want %s",
			base64.StdEncoding.EncodeToString(m.CalculatedRoot), base64.StdEncoding.EncodeToString(m.ExpectedRoot))
	}
	return err
}
