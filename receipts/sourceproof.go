package receipts

import (
	"encoding/base64"
	"strconv"
)

// A SourceProof proves that one source item is in a compaction's source
// tree, with the tree size bound to source_item_count:
//
//	{"source_proof_version": "1.0",
//	 "compaction_event_id": "urn:uuid:…",
//	 "source_items_merkle_root": "sha256:…",
//	 "tree_size": 62,
//	 "index": 7,
//	 "item": {"item_digest": "sha256:…", "sensitivity": "INTERNAL", "expires_at": 1796083200},
//	 "path": ["<base64 hash>", …]}
//
// The leaf is JCS(item); path is the RFC 9162 inclusion path, each hash in
// standard base64 as in tlog-proof. tree_size must equal the compaction's
// source_item_count.
type SourceProof struct {
	CompactionEventID     string
	SourceItemsMerkleRoot string
	TreeSize              int64
	Index                 int64
	Item                  ManifestItem
	Path                  [][]byte
}

// SourceProofVersion is the source_proof_version of this profile.
const SourceProofVersion = "1.0"

var sourceProofMembers = []string{"source_proof_version", "compaction_event_id", "source_items_merkle_root", "tree_size", "index", "item", "path"}

// maxProofPath bounds an inclusion path (a tree of 2^63 leaves needs 63).
const maxProofPath = 63

// NewSourceProof returns the proof of item index of mf for compaction c.
func NewSourceProof(c *Compaction, mf *Manifest, index int) (*SourceProof, error) {
	path, err := mf.InclusionProof(index)
	if err != nil {
		return nil, err
	}
	return &SourceProof{
		CompactionEventID:     c.EventID,
		SourceItemsMerkleRoot: c.SourceItemsMerkleRoot,
		TreeSize:              int64(len(mf.Items)),
		Index:                 int64(index),
		Item:                  mf.Items[index],
		Path:                  path,
	}, nil
}

// ParseSourceProof parses a source proof strictly (CodeSourceProofInvalid).
func ParseSourceProof(data []byte) (*SourceProof, error) {
	if len(data) > 64<<10 {
		return nil, refuse(CodeTooLarge, "", "source proof is larger than 64 KiB")
	}
	tree, err := parseJSON(data, 256)
	if err != nil {
		return nil, &Error{Code: CodeSourceProofInvalid, Reason: "not strict I-JSON", Err: err}
	}
	d := &decoder{code: CodeSourceProofInvalid}
	o := d.object(&tree, "", sourceProofMembers, nil)
	d.constant(o, "", "source_proof_version", SourceProofVersion)
	sp := &SourceProof{}
	sp.CompactionEventID = d.uri(o, "", "compaction_event_id")
	sp.SourceItemsMerkleRoot = d.digest(o, "", "source_items_merkle_root")
	sp.TreeSize = d.integer(o, "", "tree_size", 1, maxSafeInteger)
	sp.Index = d.integer(o, "", "index", 0, maxSafeInteger)
	if d.err != nil {
		return nil, d.err
	}
	it := d.object(d.member(o, "item"), "item", manifestItemMembers, manifestItemOptional)
	sp.Item.ItemDigest = d.digest(it, "item", "item_digest")
	sp.Item.Sensitivity = d.str(it, "item", "sensitivity")
	if d.err == nil && !IsLabel(sp.Item.Sensitivity) {
		d.fail("item.sensitivity", "must match ^[A-Z][A-Z0-9_]*$")
	}
	if _, ok := it.get("expires_at"); ok && d.err == nil {
		sp.Item.ExpiresAt = d.integer(it, "item", "expires_at", 1, maxSafeInteger)
	}
	pv := d.member(o, "path")
	if d.err == nil && (pv.kind != kindArray || len(pv.elems) > maxProofPath) {
		d.fail("path", "must be an array of at most %d hashes", maxProofPath)
	}
	if d.err != nil {
		return nil, d.err
	}
	for i := range pv.elems {
		e := &pv.elems[i]
		h, err := base64.StdEncoding.Strict().DecodeString(e.str)
		if e.kind != kindString || err != nil || len(h) != 32 {
			return nil, refuse(CodeSourceProofInvalid, "path["+strconv.Itoa(i)+"]", "must be a standard base64 SHA-256 hash")
		}
		sp.Path = append(sp.Path, h)
	}
	if sp.Index >= sp.TreeSize {
		return nil, refuse(CodeSourceProofInvalid, "index", "must be below tree_size")
	}
	return sp, nil
}

// Marshal writes the proof as indented JSON.
func (sp *SourceProof) Marshal() []byte {
	path := make([]value, len(sp.Path))
	for i, h := range sp.Path {
		path[i] = vstr(base64.StdEncoding.EncodeToString(h))
	}
	v := vobj(
		m("source_proof_version", vstr(SourceProofVersion)),
		m("compaction_event_id", vstr(sp.CompactionEventID)),
		m("source_items_merkle_root", vstr(sp.SourceItemsMerkleRoot)),
		m("tree_size", vint(sp.TreeSize)),
		m("index", vint(sp.Index)),
		m("item", sp.Item.value()),
		m("path", varr(path)),
	)
	return appendIndented(nil, &v, "")
}

// Verify checks the proof against compaction c: it must name c, its root
// and its source_item_count as tree size, and the path must lead from
// JCS(item) to the root.
func (sp *SourceProof) Verify(c *Compaction) error {
	switch {
	case sp.CompactionEventID != c.EventID:
		return refuse(CodeSourceProofInvalid, "compaction_event_id", "proof is for %s, not %s", sp.CompactionEventID, c.EventID)
	case sp.SourceItemsMerkleRoot != c.SourceItemsMerkleRoot:
		return refuse(CodeSourceProofInvalid, "source_items_merkle_root", "proof is for root %s, not %s", sp.SourceItemsMerkleRoot, c.SourceItemsMerkleRoot)
	case sp.TreeSize != c.SourceItemCount:
		return refuse(CodeSourceProofInvalid, "tree_size", "is %d but source_item_count is %d; the tree size is bound to the count", sp.TreeSize, c.SourceItemCount)
	}
	return VerifySourceInclusion(c, sp.Item.Leaf(), uint64(sp.Index), sp.Path)
}
