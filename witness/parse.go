package witness

import (
	"bytes"
	"encoding/base64"
	"strconv"

	"github.com/memtrail/memtrail/internal/tlogfmt"
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

	hashSize = tlogfmt.HashSize
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
		h, ok := tlogfmt.ParseHash(string(line))
		if !ok {
			return nil, ErrMalformed
		}
		r.proof = append(r.proof, h[:])
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
	n, ok := tlogfmt.ParseDecimal(s)
	return n, ok && n <= maxTreeSize
}

// parseCheckpoint parses checkpoint text (see [tlogfmt.ParseCheckpoint]) of
// a tree of at most maxTreeSize leaves. The encoding is strict, so String
// gives back the text exactly.
func parseCheckpoint(text string) (*tlogfmt.Checkpoint, bool) {
	c, ok := tlogfmt.ParseCheckpoint(text)
	return c, ok && c.Size <= maxTreeSize
}
