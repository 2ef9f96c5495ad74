package receipts

import (
	"crypto/sha256"
	"encoding/hex"
)

// A Kind names a receipt type.
type Kind string

// The receipt kinds.
const (
	KindProjection Kind = "projection"
	KindCompaction Kind = "compaction"
	KindTombstone  Kind = "tombstone"
)

// A Receipt is any of the three signed receipts. Its leaf in the log is
// Canonical(), the JCS bytes of the full signed receipt.
type Receipt interface {
	Kind() Kind
	// ID returns the single-use identifier: projection_id,
	// compaction_event_id or tombstone_id.
	ID() string
	Canonical() []byte
}

func (r *ProjectionRecord) Kind() Kind { return KindProjection }
func (r *ProjectionRecord) ID() string { return r.ProjectionID }
func (c *Compaction) Kind() Kind       { return KindCompaction }
func (c *Compaction) ID() string       { return c.EventID }
func (t *Tombstone) Kind() Kind        { return KindTombstone }
func (t *Tombstone) ID() string        { return t.TombstoneID }

// MaxLeafSize is the largest log entry tlog-tiles allows.
const MaxLeafSize = 65535

// ParseReceipt parses any receipt, telling the kind from its version
// member: "@version" (projection record), "eccr_version" (compaction) or
// "tombstone_version" (tombstone).
func ParseReceipt(data []byte) (Receipt, error) {
	if len(data) > MaxProjectionRecordSize {
		return nil, refuse(CodeTooLarge, "", "receipt is %d bytes, more than the %d allowed", len(data), MaxProjectionRecordSize)
	}
	doc, err := parseDocument(data, MaxDelivered, receiptValues(MaxDelivered))
	if err != nil {
		return nil, &Error{Code: CodeRecordInvalid, Reason: "not strict I-JSON", Err: err}
	}
	return receiptFromTree(&doc.value, doc, len(data))
}

func receiptFromTree(tree *value, doc *document, size int) (Receipt, error) {
	if tree.kind != kindObject {
		return nil, refuse(CodeRecordInvalid, "", "a receipt is a JSON object")
	}
	switch {
	case has(tree, "@version"):
		return projectionFromTree(tree, doc, size)
	case has(tree, "eccr_version"):
		if size > MaxCompactionSize {
			return nil, refuse(CodeTooLarge, "", "ECCR is %d bytes, more than the %d allowed", size, MaxCompactionSize)
		}
		return compactionFromTree(tree, doc)
	case has(tree, "tombstone_version"):
		if size > MaxTombstoneSize {
			return nil, refuse(CodeTooLarge, "", "tombstone is %d bytes, more than the %d allowed", size, MaxTombstoneSize)
		}
		return tombstoneFromTree(tree, doc)
	}
	return nil, refuse(CodeRecordInvalid, "", "not a receipt: no \"@version\", \"eccr_version\" or \"tombstone_version\" member")
}

func has(v *value, name string) bool {
	_, ok := v.get(name)
	return ok
}

// A Submission is what a producer sends to the log: a receipt, and for a
// compaction its source manifest.
type Submission struct {
	Receipt  Receipt
	Manifest *Manifest // compactions only
}

// MaxSubmissionSize caps one submission (a compaction with the largest
// manifest).
const MaxSubmissionSize = MaxManifestSize + MaxCompactionSize

// ParseSubmission parses one submission: a projection record, a tombstone,
// or {"eccr": {…}, "manifest": {…}} for a compaction. A bare ECCR is
// refused: the log accepts no compaction without its manifest.
func ParseSubmission(data []byte) (*Submission, error) {
	if len(data) > MaxSubmissionSize {
		return nil, refuse(CodeTooLarge, "", "submission is %d bytes, more than the %d allowed", len(data), MaxSubmissionSize)
	}
	doc, err := parseDocument(data, MaxManifestItems, receiptValues(MaxManifestItems))
	if err != nil {
		return nil, &Error{Code: CodeRecordInvalid, Reason: "not strict I-JSON", Err: err}
	}
	tree := &doc.value
	if tree.kind == kindObject && has(tree, "eccr") {
		d := &decoder{code: CodeRecordInvalid}
		top := d.object(tree, "", []string{"eccr", "manifest"}, nil)
		if d.err != nil {
			return nil, d.err
		}
		c, err := compactionFromTree(d.member(top, "eccr"), nil)
		if err != nil {
			e := err.(*Error)
			e.Member = MemberPath("eccr", e.Member)
			return nil, e
		}
		if len(c.canonical) > MaxCompactionSize {
			return nil, refuse(CodeTooLarge, "eccr", "ECCR is larger than %d bytes", MaxCompactionSize)
		}
		mf, err := manifestFromTree(d.member(top, "manifest"), "manifest")
		if err != nil {
			return nil, err
		}
		return &Submission{Receipt: c, Manifest: mf}, nil
	}
	if tree.kind == kindObject && has(tree, "eccr_version") {
		return nil, refuse(CodeRecordInvalid, "", "a compaction is submitted as {\"eccr\": …, \"manifest\": …}")
	}
	if len(data) > MaxProjectionRecordSize {
		return nil, refuse(CodeTooLarge, "", "receipt is %d bytes, more than the %d allowed", len(data), MaxProjectionRecordSize)
	}
	r, err := receiptFromTree(&doc.value, doc, len(data))
	if err != nil {
		return nil, err
	}
	return &Submission{Receipt: r}, nil
}

// Digest returns "sha256:" followed by the lowercase hex SHA-256 of b.
func Digest(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}
