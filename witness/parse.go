package witness

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"strings"
)

const (
	// MaxRequestSize caps the body of an add-checkpoint request. A request
	// carries at most 63 proof lines of 45 bytes and a checkpoint with its
	// signatures (note verification stops at 100 signatures, the largest of
	// which, ML-DSA-44, take about 3.3 kB each).
	MaxRequestSize = 1 << 20

	// MaxProofLines is the most consistency proof lines a request may carry,
	// per c2sp.org/tlog-witness. A consistency proof between trees of at most
	// 2^63 leaves never needs more.
	MaxProofLines = 63

	hashSize = 32
)

// maxTreeSize is the largest tree size accepted: sizes are stored and
// compared as unsigned 64-bit integers, and staying below 2^63 keeps them
// representable as signed integers by any store or client.
const maxTreeSize = 1<<63 - 1

// addCheckpointRequest is a parsed add-checkpoint request body.
type addCheckpointRequest struct {
	oldSize uint64
	proof   [][]byte
	note    []byte // the signed checkpoint, not yet verified
}

// parseAddCheckpoint parses an add-checkpoint request body:
//
//	old <decimal size>
//	<base64 hash>        (0 to 63 lines)
//	<empty line>
//	<signed checkpoint note>
//
// Every line ends in a newline. Sizes are canonical decimals and hashes are
// canonical base64 of 32 bytes: any other encoding of the same value is
// refused, so that one request has exactly one reading. It returns
// ErrMalformed on any deviation and ErrTooLarge for a body over
// MaxRequestSize.
func parseAddCheckpoint(body []byte) (*addCheckpointRequest, error) {
	if len(body) > MaxRequestSize {
		return nil, ErrTooLarge
	}
	line, rest, ok := bytes.Cut(body, []byte("\n"))
	if !ok {
		return nil, ErrMalformed
	}
	sizeText, ok := bytes.CutPrefix(line, []byte("old "))
	if !ok {
		return nil, ErrMalformed
	}
	old, ok := parseSize(string(sizeText))
	if !ok {
		return nil, ErrMalformed
	}
	r := &addCheckpointRequest{oldSize: old}
	for {
		line, rest, ok = bytes.Cut(rest, []byte("\n"))
		if !ok {
			return nil, ErrMalformed
		}
		if len(line) == 0 {
			break
		}
		if len(r.proof) == MaxProofLines {
			return nil, ErrMalformed
		}
		h, ok := parseHash(string(line))
		if !ok {
			return nil, ErrMalformed
		}
		r.proof = append(r.proof, h)
	}
	if len(rest) == 0 {
		return nil, ErrMalformed
	}
	r.note = rest
	return r, nil
}

// formatAddCheckpoint is the inverse of parseAddCheckpoint.
func formatAddCheckpoint(r *addCheckpointRequest) []byte {
	var b bytes.Buffer
	b.WriteString("old ")
	b.WriteString(strconv.FormatUint(r.oldSize, 10))
	b.WriteByte('\n')
	for _, h := range r.proof {
		b.WriteString(base64.StdEncoding.EncodeToString(h))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.Write(r.note)
	return b.Bytes()
}

// parseSize parses a tree size: ASCII decimal, no sign, no leading zeroes
// (the size zero is "0"), at most maxTreeSize.
func parseSize(s string) (uint64, bool) {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 63)
	if err != nil {
		return 0, false
	}
	return n, true
}

// parseHash parses the standard, padded base64 encoding of a 32-byte hash,
// refusing non-canonical encodings (which differ only in the unused low
// bits of the last character).
func parseHash(s string) ([]byte, bool) {
	if len(s) != base64.StdEncoding.EncodedLen(hashSize) {
		return nil, false
	}
	h, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || len(h) != hashSize {
		return nil, false
	}
	return h, true
}

// A checkpoint is the text of a c2sp.org/tlog-checkpoint note.
type checkpoint struct {
	origin string
	size   uint64
	hash   [hashSize]byte
	// extension holds the extension lines, each with its newline, or is
	// empty. They are opaque and cosigned as they are.
	extension string
}

// parseCheckpoint parses checkpoint text: the origin line, the tree size,
// the root hash and optional extension lines, each non-empty and ending in
// a newline. The encoding is strict, so checkpoint.String gives back text
// exactly.
func parseCheckpoint(text string) (checkpoint, bool) {
	var c checkpoint
	origin, rest, ok := strings.Cut(text, "\n")
	if !ok || origin == "" {
		return c, false
	}
	sizeText, rest, ok := strings.Cut(rest, "\n")
	if !ok {
		return c, false
	}
	hashText, rest, ok := strings.Cut(rest, "\n")
	if !ok {
		return c, false
	}
	size, ok := parseSize(sizeText)
	if !ok {
		return c, false
	}
	h, ok := parseHash(hashText)
	if !ok {
		return c, false
	}
	if rest != "" && (!strings.HasSuffix(rest, "\n") || strings.HasPrefix(rest, "\n") || strings.Contains(rest, "\n\n")) {
		return c, false
	}
	c.origin, c.size, c.extension = origin, size, rest
	copy(c.hash[:], h)
	return c, true
}

func (c checkpoint) String() string {
	return c.origin + "\n" + strconv.FormatUint(c.size, 10) + "\n" +
		base64.StdEncoding.EncodeToString(c.hash[:]) + "\n" + c.extension
}
