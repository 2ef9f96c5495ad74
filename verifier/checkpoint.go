package verifier

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/memtrail/memtrail/internal/tlogfmt"
	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
)

// Errors. Every error returned by this half of the package for bytes that do
// not verify matches exactly one of ErrMalformed and ErrSecurity with
// [errors.Is]; the finer sentinels below each match ErrSecurity as well.
// Errors that match neither are caller mistakes (a nil policy, checkpoints of
// two different logs compared with each other).
var (
	// ErrMalformed means the input is not in the format it claims to be:
	// nothing about it was verified.
	ErrMalformed = errors.New("malformed input")

	// ErrSecurity means the input is well formed but does not verify under
	// the policy: it must not be trusted. A *[ForkError] matches it too.
	ErrSecurity = errors.New("security error")

	// ErrLogSignature means a checkpoint carries no valid signature from a
	// log of the policy whose origin is the checkpoint's origin.
	ErrLogSignature error = securityError("checkpoint not signed by a log of the policy")

	// ErrInvalidSignature means a signature line names a key of the policy
	// but the signature does not verify: the note was altered or the key
	// holder misbehaved.
	ErrInvalidSignature error = securityError("invalid signature from a key of the policy")

	// ErrQuorum means the valid witness cosignatures do not satisfy the
	// policy's quorum.
	ErrQuorum error = securityError("witness quorum not met")

	// ErrInclusion means an inclusion proof does not prove the leaf at its
	// index under the checkpoint's root.
	ErrInclusion error = securityError("inclusion proof does not verify")

	// ErrConsistency means a consistency proof does not prove that the
	// larger tree extends the smaller one.
	ErrConsistency error = securityError("consistency proof does not verify")
)

// securityError is a sentinel that also matches ErrSecurity.
type securityError string

func (e securityError) Error() string        { return string(e) }
func (e securityError) Is(target error) bool { return target == ErrSecurity }

// malformedError is a uniform parser error that matches ErrMalformed.
type malformedError string

func (e malformedError) Error() string        { return string(e) }
func (e malformedError) Is(target error) bool { return target == ErrMalformed }

// MaxCheckpointSize bounds a signed checkpoint: the note text plus up to 100
// signature lines (the most note.Open reads), ML-DSA-44 cosignatures being the
// largest at about 3.3 kB each. [OpenCheckpoint] refuses larger ones, and a
// log source need read no more.
const MaxCheckpointSize = tlogfmt.MaxCheckpointSize

const maxCheckpointSize = MaxCheckpointSize

var errMalformedCheckpoint error = malformedError("malformed checkpoint")

// Checkpoint is a [C2SP tlog-checkpoint] that opened under a [Policy]: the
// log's signature for its origin verified and its witness cosignatures met the
// quorum.
//
// [C2SP tlog-checkpoint]: https://c2sp.org/tlog-checkpoint
type Checkpoint struct {
	Origin string            // first line: the log's identity
	Size   uint64            // number of leaves in the tree
	Hash   [sha256.Size]byte // RFC 6962 root hash of the tree at Size

	// Extensions are the note text lines after the root hash, without their
	// newlines. They are covered by the log's signature and by Ed25519
	// cosignatures (not ML-DSA-44 ones), but witnesses make no statement
	// about them.
	Extensions []string

	// LogKey is the vkey of the policy log whose signature verified (the
	// first one, when several did).
	LogKey string

	// Cosignatures are the verified cosignatures of policy witnesses, in the
	// order of the signature lines. Signatures from keys the policy does not
	// know are ignored, as c2sp.org/signed-note requires.
	Cosignatures []Cosignature

	// Raw is the signed checkpoint exactly as it was opened.
	Raw []byte
}

// Cosignature is a verified [C2SP tlog-cosignature] on a checkpoint.
//
// [C2SP tlog-cosignature]: https://c2sp.org/tlog-cosignature
type Cosignature struct {
	Witness string    // the witness's name in the policy
	KeyName string    // the key name on the signature line
	KeyHash uint32    // the key ID on the signature line
	Time    time.Time // the signed timestamp, in UTC, to the second
}

// OpenCheckpoint verifies a signed checkpoint under policy p and parses it.
//
// The checkpoint must be a valid signed note of at most 512 KiB whose text
// follows c2sp.org/tlog-checkpoint exactly: a non-empty origin line, the tree
// size in decimal without leading zeroes, the canonical base64 of a 32-byte
// root hash (for size 0, the hash of the empty string), then optional
// non-empty extension lines. Then:
//
//   - a log of p whose origin is the checkpoint's origin must have signed it,
//     or the error matches [ErrLogSignature]; when the checkpoint has
//     extension lines, that signature must cover them (an ML-DSA-44 log
//     signature signs only the origin, size and root, so it does not count);
//   - every signature line that names a key of p must verify, or the error
//     matches [ErrInvalidSignature];
//   - the witnesses whose cosignatures verified must satisfy p's quorum, or
//     the error matches [ErrQuorum].
//
// Signature lines from keys p does not know are ignored. Cosignature
// timestamps are reported, not judged: no clock is consulted.
func OpenCheckpoint(p *Policy, signed []byte) (*Checkpoint, error) {
	c, err := openCheckpoint(p, signed)
	if err != nil {
		return nil, fmt.Errorf("verifier: %w", err)
	}
	return c, nil
}

func openCheckpoint(p *Policy, signed []byte) (*Checkpoint, error) {
	if p == nil || p.verifiers == nil {
		return nil, errors.New("no policy")
	}
	if len(signed) > maxCheckpointSize {
		return nil, errMalformedCheckpoint
	}
	n, err := note.Open(signed, p.verifiers)
	var invalid *note.InvalidSignatureError
	var unverified *note.UnverifiedNoteError
	switch {
	case errors.As(err, &invalid):
		return nil, fmt.Errorf("%w: %s (key ID %08x)", ErrInvalidSignature, invalid.Name, invalid.Hash)
	case errors.As(err, &unverified):
		// The note parsed, but no signature is from a key of the policy.
		if _, perr := parseCheckpointText(unverified.Note.Text); perr != nil {
			return nil, perr
		}
		origin := unverifiedOrigin(unverified.Note.Text)
		return nil, fmt.Errorf("%w: origin %q: %s", ErrLogSignature, origin, p.wrongKey(origin, unverified.Note.UnverifiedSigs))
	case err != nil:
		return nil, errMalformedCheckpoint
	}
	c, err := parseCheckpointText(n.Text)
	if err != nil {
		return nil, err
	}
	cosigned := make([]bool, len(p.witnesses))
	uncovered := false // a log signed, but without covering the extension lines
	for _, s := range n.Sigs {
		who := p.signers[keyID{s.Name, s.Hash}]
		switch who.kind {
		case componentLog:
			l := p.logs[who.index]
			switch {
			case l.Origin != c.Origin:
			case len(c.Extensions) > 0 && p.logTypes[who.index] == keyTypeMLDSA44:
				// The ML-DSA-44 signed message holds the origin, size
				// and root only: anyone could have added the extension
				// lines, which Checkpoint would present as signed.
				uncovered = true
			case c.LogKey == "":
				c.LogKey = l.VKey
			}
		case componentWitness:
			t, err := fnote.CoSigV1Timestamp(s)
			if err != nil || t.Unix() < 0 {
				// The timestamp is covered by the signature that just
				// verified, but lies beyond 2^63-1, which the spec forbids.
				return nil, fmt.Errorf("%w: cosignature from %s has an out-of-range timestamp", ErrMalformed, s.Name)
			}
			cosigned[who.index] = true
			c.Cosignatures = append(c.Cosignatures, Cosignature{
				Witness: p.witnesses[who.index].Name,
				KeyName: s.Name,
				KeyHash: s.Hash,
				Time:    t.UTC(),
			})
		}
	}
	if c.LogKey == "" && uncovered {
		return nil, fmt.Errorf("%w: origin %q: its ML-DSA-44 signature does not cover the extension lines", ErrLogSignature, c.Origin)
	}
	if c.LogKey == "" {
		return nil, fmt.Errorf("%w: origin %q: %s", ErrLogSignature, c.Origin, p.wrongKey(c.Origin, append(append([]note.Signature(nil), n.Sigs...), n.UnverifiedSigs...)))
	}
	if !p.quorumMet(cosigned) {
		unknown := ""
		if len(n.UnverifiedSigs) > 0 {
			unknown = "; signatures from keys the policy does not know: " + tlogfmt.SignatureNames(n.UnverifiedSigs)
		}
		return nil, fmt.Errorf("%w: policy quorum %q, valid cosignatures from %s%s", ErrQuorum, p.Quorum(), cosignerList(c.Cosignatures), unknown)
	}
	c.Raw = bytes.Clone(signed)
	return c, nil
}

// wrongKey says which log key the policy expects for origin and which keys
// signed the checkpoint, each as "name+hash" (the start of its vkey).
func (p *Policy) wrongKey(origin string, sigs []note.Signature) string {
	var want []string
	for _, l := range p.logs {
		if l.Origin == origin {
			name, rest, _ := strings.Cut(l.VKey, "+")
			hash, _, _ := strings.Cut(rest, "+")
			want = append(want, name+"+"+hash)
		}
	}
	expected := "the policy has no log of this origin"
	if len(want) > 0 {
		expected = "the policy expects a signature by " + strings.Join(want, " or ")
	}
	var same []note.Signature
	for _, s := range sigs {
		if s.Name == origin {
			same = append(same, s)
		}
	}
	if len(same) > 0 {
		return expected + "; the checkpoint is signed by " + tlogfmt.SignatureNames(same)
	}
	return expected + "; the checkpoint is signed by no key of that name, only by " + tlogfmt.SignatureNames(sigs)
}

func unverifiedOrigin(text string) string {
	origin, _, _ := strings.Cut(text, "\n")
	return origin
}

func cosignerList(cs []Cosignature) string {
	if len(cs) == 0 {
		return "no witness"
	}
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Witness
	}
	return strings.Join(names, ", ")
}

// parseCheckpointText parses the text of a checkpoint note (everything before
// the blank line that starts the signatures, final newline included), and
// refuses a tree of size 0 whose root is not the empty tree's.
func parseCheckpointText(text string) (*Checkpoint, error) {
	t, ok := tlogfmt.ParseCheckpoint(text)
	if !ok || t.Size == 0 && !bytes.Equal(t.Hash[:], rfc6962.DefaultHasher.EmptyRoot()) {
		return nil, errMalformedCheckpoint
	}
	return &Checkpoint{Origin: t.Origin, Size: t.Size, Hash: t.Hash, Extensions: t.Extensions}, nil
}

// formatCheckpointText is the inverse of parseCheckpointText.
func formatCheckpointText(c *Checkpoint) string {
	return (&tlogfmt.Checkpoint{Origin: c.Origin, Size: c.Size, Hash: c.Hash, Extensions: c.Extensions}).String()
}
