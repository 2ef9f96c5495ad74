// Package tlogfmt holds the text formats of a transparency log that the log,
// the verifier and the witness all read or write, so that each is written
// once: the RFC 6962 leaf hash of an entry, the text of a [C2SP
// tlog-checkpoint] note, and the [C2SP tlog-proof] offline inclusion proof.
//
// Its parsers are strict, so that parsing and formatting give back the same
// bytes: sizes are decimal without sign or leading zeroes, hashes are the
// canonical padded standard base64 of 32 bytes, and every line ends in a
// newline with no carriage return. They say only whether the input parsed;
// each caller answers with its own uniform error. They check no signature:
// a checkpoint's note is opened (golang.org/x/mod/sumdb/note) before its
// text is parsed here.
//
// [C2SP tlog-checkpoint]: https://c2sp.org/tlog-checkpoint
// [C2SP tlog-proof]: https://c2sp.org/tlog-proof
package tlogfmt

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/transparency-dev/merkle/rfc6962"
)

// HashSize is the size of a tree hash.
const HashSize = sha256.Size

// MaxCheckpointSize bounds a signed checkpoint: the note text plus up to 100
// signature lines (the most note.Open reads), ML-DSA-44 cosignatures being
// the largest at about 3.3 kB each.
const MaxCheckpointSize = 512 << 10

// MaxInclusionPath is the most hashes an inclusion path in a tree of at most
// 2^64 leaves has.
const MaxInclusionPath = 64

// MaxProofSize bounds a tlog-proof: a checkpoint and 64 KiB for the rest.
const MaxProofSize = MaxCheckpointSize + 64<<10

// LeafHash returns the RFC 6962 hash of a log entry, SHA-256(0x00 || entry).
func LeafHash(entry []byte) [HashSize]byte {
	return [HashSize]byte(rfc6962.DefaultHasher.HashLeaf(entry))
}

// ParseDecimal parses an ASCII decimal with no sign and no leading zeroes
// (unless the value is 0) that fits in a uint64.
func ParseDecimal(s string) (uint64, bool) {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// ParseHash decodes the canonical padded standard base64 of a 32-byte hash,
// refusing every other encoding of it (unused low bits set, line breaks).
func ParseHash(s string) ([HashSize]byte, bool) {
	var h [HashSize]byte
	if len(s) != base64.StdEncoding.EncodedLen(HashSize) {
		return h, false
	}
	var buf [HashSize + 1]byte // DecodedLen of 44 characters
	n, err := base64.StdEncoding.Strict().Decode(buf[:], []byte(s))
	if err != nil || n != HashSize {
		return h, false
	}
	copy(h[:], buf[:n])
	// Strict decoding still skips CR and LF; re-encoding catches them.
	if base64.StdEncoding.EncodeToString(h[:]) != s {
		return h, false
	}
	return h, true
}

// Checkpoint is the text of a checkpoint note: what the log signs.
type Checkpoint struct {
	Origin string         // first line: the log's identity
	Size   uint64         // number of leaves in the tree
	Hash   [HashSize]byte // RFC 6962 root hash of the tree at Size

	// Extensions are the note text lines after the root hash, without their
	// newlines, or nil.
	Extensions []string
}

// ParseCheckpoint parses the text of a checkpoint note (everything before
// the blank line that starts the signatures, final newline included):
//
//	example.com/memtrail
//	8
//	OPYi+o2V1pmTMUgSCBndmtuDacXwq1W2LY5Tp9Mtlfw=
//
// a non-empty origin line, the tree size, the root hash, then optional
// non-empty extension lines, each line ending in a newline. It does not
// check that a tree of size 0 has the empty tree's root: callers answer that
// differently. For any text it accepts, [Checkpoint.String] gives it back.
func ParseCheckpoint(text string) (*Checkpoint, bool) {
	if len(text) > MaxCheckpointSize {
		return nil, false
	}
	rest, ok := strings.CutSuffix(text, "\n")
	if !ok {
		return nil, false
	}
	lines := strings.Split(rest, "\n")
	if len(lines) < 3 {
		return nil, false
	}
	for _, l := range lines {
		if l == "" {
			return nil, false
		}
	}
	c := &Checkpoint{Origin: lines[0]}
	if c.Size, ok = ParseDecimal(lines[1]); !ok {
		return nil, false
	}
	if c.Hash, ok = ParseHash(lines[2]); !ok {
		return nil, false
	}
	if len(lines) > 3 {
		c.Extensions = lines[3:]
	}
	return c, true
}

// String returns the checkpoint text: the inverse of [ParseCheckpoint].
func (c *Checkpoint) String() string {
	var b strings.Builder
	b.WriteString(c.Origin)
	b.WriteByte('\n')
	b.WriteString(strconv.FormatUint(c.Size, 10))
	b.WriteByte('\n')
	b.WriteString(base64.StdEncoding.EncodeToString(c.Hash[:]))
	b.WriteByte('\n')
	for _, e := range c.Extensions {
		b.WriteString(e)
		b.WriteByte('\n')
	}
	return b.String()
}

const proofHeader = "c2sp.org/tlog-proof@v1"

// Proof is a tlog-proof: an offline proof that the leaf at Index is in the
// tree of a signed checkpoint.
//
// The encoded form is a header line, an optional extra line, the index line,
// the inclusion path one base64 hash per line from the leaf's sibling up, an
// empty line, and the signed checkpoint verbatim:
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
type Proof struct {
	// Extra is the optional opaque extra data. Nil means the proof has no
	// extra line; an empty non-nil slice means an extra line with no data.
	Extra []byte

	// Index is the zero-based index of the leaf in the log.
	Index uint64

	// Path is the RFC 6962 inclusion path, 32-byte hashes from the leaf's
	// sibling up to the root's child.
	Path [][]byte

	// Checkpoint is the signed checkpoint, verbatim.
	Checkpoint []byte
}

// ParseProof parses a tlog-proof of at most [MaxProofSize] bytes, strictly:
// every line ends with a newline (no carriage returns); base64 is canonical
// standard base64 with padding; the index is a decimal as [ParseDecimal]
// reads it; there are at most 64 path hashes, each 32 bytes; the checkpoint
// is non-empty and ends with a newline, and is not otherwise looked at. For
// any input it accepts, [Proof.Format] gives it back.
func ParseProof(b []byte) (*Proof, bool) {
	if len(b) > MaxProofSize {
		return nil, false
	}
	line := func() (string, bool) {
		l, rest, ok := bytes.Cut(b, []byte("\n"))
		if !ok || bytes.IndexByte(l, '\r') >= 0 {
			return "", false
		}
		b = rest
		return string(l), true
	}
	if l, ok := line(); !ok || l != proofHeader {
		return nil, false
	}
	p := &Proof{}
	l, ok := line()
	if !ok {
		return nil, false
	}
	if e, found := strings.CutPrefix(l, "extra "); found {
		extra, err := base64.StdEncoding.Strict().DecodeString(e)
		if err != nil || base64.StdEncoding.EncodeToString(extra) != e {
			return nil, false
		}
		p.Extra = extra
		if p.Extra == nil {
			p.Extra = []byte{}
		}
		if l, ok = line(); !ok {
			return nil, false
		}
	}
	idx, found := strings.CutPrefix(l, "index ")
	if !found {
		return nil, false
	}
	if p.Index, ok = ParseDecimal(idx); !ok {
		return nil, false
	}
	for {
		l, ok := line()
		if !ok {
			return nil, false
		}
		if l == "" {
			break
		}
		if len(p.Path) == MaxInclusionPath {
			return nil, false
		}
		h, ok := ParseHash(l)
		if !ok {
			return nil, false
		}
		p.Path = append(p.Path, h[:])
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, false
	}
	p.Checkpoint = bytes.Clone(b)
	return p, true
}

// FormatProof encodes a tlog-proof without extra data: the leaf index, its
// RFC 6962 inclusion path and the signed checkpoint the path leads to, which
// is copied verbatim. It does not check its inputs: a path hash that is not
// 32 bytes or a checkpoint that does not end in a newline yields bytes that
// [ParseProof] refuses.
func FormatProof(index uint64, path [][]byte, checkpoint []byte) []byte {
	return (&Proof{Index: index, Path: path, Checkpoint: checkpoint}).Format()
}

// Format encodes p as a tlog-proof: the inverse of [ParseProof].
func (p *Proof) Format() []byte {
	n := len(proofHeader) + 1 + len("index ") + 21 + len(p.Path)*45 + 1 + len(p.Checkpoint)
	if p.Extra != nil {
		n += len("extra ") + base64.StdEncoding.EncodedLen(len(p.Extra)) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, proofHeader+"\n"...)
	if p.Extra != nil {
		b = append(b, "extra "...)
		b = base64.StdEncoding.AppendEncode(b, p.Extra)
		b = append(b, '\n')
	}
	b = append(b, "index "...)
	b = strconv.AppendUint(b, p.Index, 10)
	b = append(b, '\n')
	for _, h := range p.Path {
		b = base64.StdEncoding.AppendEncode(b, h)
		b = append(b, '\n')
	}
	b = append(b, '\n')
	return append(b, p.Checkpoint...)
}
