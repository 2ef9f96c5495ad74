// Package witnesstest holds what the witness tests and the load comparison
// share: simulated transparency logs, and running the memtrail binary.
package witnesstest

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/memtrail/memtrail/witness"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"
)

// A Log is a simulated transparency log: a real RFC 6962 Merkle tree and
// an Ed25519 signed-note key. A Log is not safe for concurrent use while it
// grows; reading sizes it already has is.
type Log struct {
	Origin string
	VKey   string
	Signer note.Signer
	tree   *testonly.Tree
	tag    string // makes this log's leaves differ from a fork's
}

// NewLog returns an empty log with a new key.
func NewLog(origin string) (*Log, error) {
	skey, vkey, err := note.GenerateKey(rand.Reader, KeyName(origin))
	if err != nil {
		return nil, err
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		return nil, err
	}
	return &Log{Origin: origin, VKey: vkey, Signer: signer, tree: testonly.New(rfc6962.DefaultHasher), tag: "main"}, nil
}

// KeyName makes a valid key name from an origin, which may contain spaces
// or '+'.
func KeyName(origin string) string {
	return strings.NewReplacer(" ", "_", "+", "_", "\t", "_").Replace(origin)
}

// Fork returns a log with the same origin and key whose tree has the first
// shared leaves of l and then leaves of its own, marked by tag.
func (l *Log) Fork(shared uint64, tag string) *Log {
	f := &Log{Origin: l.Origin, VKey: l.VKey, Signer: l.Signer, tree: testonly.New(rfc6962.DefaultHasher), tag: tag}
	for i := range shared {
		f.tree.Append(l.tree.LeafHash(i))
	}
	return f
}

// Tag names the history of l: "main", or the tag given to Fork.
func (l *Log) Tag() string { return l.tag }

// WitnessLog is l as a known log of a witness.
func (l *Log) WitnessLog() witness.Log { return witness.Log{Origin: l.Origin, VKey: l.VKey} }

// GrowTo appends leaves until the tree has size leaves.
func (l *Log) GrowTo(size uint64) {
	for l.tree.Size() < size {
		l.tree.AppendData([]byte(fmt.Sprintf("%s %s leaf %d", l.Origin, l.tag, l.tree.Size())))
	}
}

// Root is the root hash of the tree at size.
func (l *Log) Root(size uint64) []byte { return l.tree.HashAt(size) }

// Text is the checkpoint text at size.
func (l *Log) Text(size uint64) string {
	return fmt.Sprintf("%s\n%d\n%s\n", l.Origin, size, base64.StdEncoding.EncodeToString(l.Root(size)))
}

// Checkpoint is the checkpoint at size, signed by the log.
func (l *Log) Checkpoint(size uint64) []byte { return SignText(l.Text(size), l.Signer) }

// SignText signs a note text.
func SignText(text string, signers ...note.Signer) []byte {
	b, err := note.Sign(&note.Note{Text: text}, signers...)
	if err != nil {
		panic(fmt.Sprintf("witnesstest: signing %q: %v", text, err))
	}
	return b
}

// Proof is the consistency proof from old to size, empty if old is 0 or
// size.
func (l *Log) Proof(old, size uint64) [][]byte {
	if old == 0 || old == size {
		return nil
	}
	p, err := l.tree.ConsistencyProof(old, size)
	if err != nil {
		panic(fmt.Sprintf("witnesstest: proof from %d to %d: %v", old, size, err))
	}
	return p
}

// Request is the add-checkpoint body for the checkpoint at size with the
// proof from old.
func (l *Log) Request(old, size uint64) []byte {
	return RequestBody(old, l.Proof(old, size), l.Checkpoint(size))
}

// RequestBody is an add-checkpoint body.
func RequestBody(old uint64, proof [][]byte, checkpoint []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", old)
	for _, h := range proof {
		b.WriteString(base64.StdEncoding.EncodeToString(h) + "\n")
	}
	b.WriteString("\n")
	b.Write(checkpoint)
	return b.Bytes()
}
