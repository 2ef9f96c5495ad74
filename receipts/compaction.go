package receipts

import (
	"crypto/ed25519"
	"time"
)

// CompactionVersion is the eccr_version of ECCR v1.
const CompactionVersion = "1.0"

// MaxCompactionSize caps the input to ParseCompaction.
const MaxCompactionSize = 64 << 10

// A Compaction is a parsed Ephemeral Context Compaction Receipt v1
// (draft-durga-agent-ephemeral-lineage-00) with this profile's optional
// supersedes member.
type Compaction struct {
	EventID                     string
	SourceItemsMerkleRoot       string
	SourceItemCount             int64
	CompactedOutputHash         string
	InheritedSensitivityCeiling string
	RetentionPurgeEpoch         int64
	TombstoneBloomFilterB64     string
	Supersedes                  string // "" when absent
	Signature                   Signature

	signed    []byte // JCS(envelope without signature)
	canonical []byte // JCS(envelope), the log leaf
}

var (
	compactionMembers  = []string{"eccr_version", "compaction_event_id", "source_items_merkle_root", "source_item_count", "compacted_output_hash", "inherited_sensitivity_ceiling", "retention_purge_epoch", "tombstone_bloom_filter_b64", "signature"}
	compactionOptional = []string{"supersedes"}
)

// ParseCompaction parses an ECCR envelope and enforces the draft's five
// parser invariants (section 5) and the closed member set:
//
//  1. duplicate keys are refused at parse time;
//  2. source_item_count and retention_purge_epoch are exact integers in
//     [1, 2^53−1] (no boolean, fraction, exponent, negative or non-finite);
//  3. inherited_sensitivity_ceiling matches ^[A-Z][A-Z0-9_]*$ (its rank in
//     a lattice, unknown labels ranking top, is checked against a manifest);
//  4. source_items_merkle_root and compacted_output_hash match
//     ^sha256:[0-9a-f]{64}$ (inclusion proofs bind tree size to
//     source_item_count: see VerifySourceInclusion);
//  5. rules read the values from these digest-verified bytes only.
//
// At this level tombstone_bloom_filter_b64 is opaque unpadded base64url;
// ParseBloomFilter applies the profile's strict format. Failures are
// CodeRecordInvalid.
func ParseCompaction(data []byte) (*Compaction, error) {
	if len(data) > MaxCompactionSize {
		return nil, refuse(CodeTooLarge, "", "ECCR is %d bytes, more than the %d allowed", len(data), MaxCompactionSize)
	}
	doc, err := parseDocument(data, 64, receiptValues(64))
	if err != nil {
		return nil, &Error{Code: CodeRecordInvalid, Reason: "not strict I-JSON", Err: err}
	}
	return compactionFromTree(&doc.value, doc)
}

// compactionFromTree decodes tree; doc, if not nil, is the document tree
// was parsed from.
func compactionFromTree(tree *value, doc *document) (*Compaction, error) {
	d := &decoder{code: CodeRecordInvalid}
	c := &Compaction{}
	o := d.object(tree, "", compactionMembers, compactionOptional)
	d.constant(o, "", "eccr_version", CompactionVersion)
	c.EventID = d.uri(o, "", "compaction_event_id")
	c.SourceItemsMerkleRoot = d.digest(o, "", "source_items_merkle_root")
	c.SourceItemCount = d.integer(o, "", "source_item_count", 1, maxSafeInteger)
	c.CompactedOutputHash = d.digest(o, "", "compacted_output_hash")
	c.InheritedSensitivityCeiling = d.str(o, "", "inherited_sensitivity_ceiling")
	if d.err == nil && !IsLabel(c.InheritedSensitivityCeiling) {
		d.fail("inherited_sensitivity_ceiling", "must match ^[A-Z][A-Z0-9_]*$")
	}
	c.RetentionPurgeEpoch = d.integer(o, "", "retention_purge_epoch", 1, maxSafeInteger)
	c.TombstoneBloomFilterB64 = d.str(o, "", "tombstone_bloom_filter_b64")
	if d.err == nil && !isB64u(c.TombstoneBloomFilterB64) {
		d.fail("tombstone_bloom_filter_b64", "must be non-empty unpadded base64url")
	}
	if d.err == nil {
		if _, ok := o.get("supersedes"); ok {
			c.Supersedes = d.uri(o, "", "supersedes")
			if d.err == nil && c.Supersedes == c.EventID {
				d.fail("supersedes", "a compaction cannot supersede itself")
			}
		}
	}
	c.Signature = decodeSignature(d, o)
	if d.err != nil {
		return nil, d.err
	}
	c.canonical, c.signed = canonicalPair(doc, tree, "", "signature", 768)
	return c, nil
}

// SignedBytes returns JCS(envelope without signature), the signed bytes.
func (c *Compaction) SignedBytes() []byte { return c.signed }

// Canonical returns JCS(envelope), the log leaf.
func (c *Compaction) Canonical() []byte { return c.canonical }

// VerifySignature verifies the ECCR under the key its kid names in keys,
// which must be current at now (an ECCR carries no time of its own).
func (c *Compaction) VerifySignature(keys Keyring, now time.Time) error {
	return verifyKID(keys, &c.Signature, c.signed, now, now)
}

// VerifySignatureWithKey verifies the ECCR under pub, whose kid must be the
// one the signature names.
func (c *Compaction) VerifySignatureWithKey(pub ed25519.PublicKey) error {
	return verifyWithKey(pub, &c.Signature, c.signed)
}

func (c *Compaction) value(withSignature bool) value {
	members := []member{
		m("eccr_version", vstr(CompactionVersion)),
		m("compaction_event_id", vstr(c.EventID)),
		m("source_items_merkle_root", vstr(c.SourceItemsMerkleRoot)),
		m("source_item_count", vint(c.SourceItemCount)),
		m("compacted_output_hash", vstr(c.CompactedOutputHash)),
		m("inherited_sensitivity_ceiling", vstr(c.InheritedSensitivityCeiling)),
		m("retention_purge_epoch", vint(c.RetentionPurgeEpoch)),
		m("tombstone_bloom_filter_b64", vstr(c.TombstoneBloomFilterB64)),
	}
	if c.Supersedes != "" {
		members = append(members, m("supersedes", vstr(c.Supersedes)))
	}
	if withSignature {
		members = append(members, m("signature", c.Signature.value()))
	}
	return vobj(members...)
}

// SignCompaction signs c with priv, filling in c.Signature, and returns the
// parsed, canonical result (which re-checks every parser invariant).
func SignCompaction(c *Compaction, priv ed25519.PrivateKey) (*Compaction, error) {
	unsigned := c.value(false)
	signed := appendCanonical(nil, &unsigned)
	pub := priv.Public().(ed25519.PublicKey)
	sig := ed25519.Sign(priv, signed)
	c.Signature = Signature{Alg: "Ed25519", KID: KeyID(pub), Sig: sig, SigB64: EncodeB64u(sig)}
	full := c.value(true)
	return ParseCompaction(appendCanonical(nil, &full))
}
