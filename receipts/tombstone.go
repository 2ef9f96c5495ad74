package receipts

import (
	"crypto/ed25519"
	"time"
)

// TombstoneVersion is the tombstone_version of purge tombstone v1.
const TombstoneVersion = "1.0"

// MaxTombstoneSize caps the input to ParseTombstone.
const MaxTombstoneSize = 16 << 10

// Tombstone reasons.
var TombstoneReasons = []string{"regulatory_erasure", "retention_expiry", "owner_request"}

// A Tombstone is a purge tombstone v1, this profile's record that a source
// item was purged:
//
//	{"tombstone_version": "1.0", "tombstone_id": "urn:uuid:…", "item_digest": "sha256:…",
//	 "purged_at": 1796083200, "reason": "regulatory_erasure",
//	 "signature": {"alg": "Ed25519", "kid": "sha256:…", "sig": "…"}}
//
// It is signed like an ECCR: Ed25519 over JCS(tombstone without signature),
// kid = "sha256:" + hex(SHA-256(raw public key)). The member set is closed;
// purged_at is Unix seconds in [1, 2^53−1]; tombstone_id is single-use.
type Tombstone struct {
	TombstoneID string
	ItemDigest  string
	PurgedAt    int64
	Reason      string
	Signature   Signature

	signed    []byte
	canonical []byte
}

var tombstoneMembers = []string{"tombstone_version", "tombstone_id", "item_digest", "purged_at", "reason", "signature"}

// ParseTombstone parses a purge tombstone strictly (CodeRecordInvalid).
func ParseTombstone(data []byte) (*Tombstone, error) {
	if len(data) > MaxTombstoneSize {
		return nil, refuse(CodeTooLarge, "", "tombstone is %d bytes, more than the %d allowed", len(data), MaxTombstoneSize)
	}
	doc, err := parseDocument(data, 64, receiptValues(64))
	if err != nil {
		return nil, &Error{Code: CodeRecordInvalid, Reason: "not strict I-JSON", Err: err}
	}
	return tombstoneFromTree(&doc.value, doc)
}

// tombstoneFromTree decodes tree; doc, if not nil, is the document tree
// was parsed from.
func tombstoneFromTree(tree *value, doc *document) (*Tombstone, error) {
	d := &decoder{code: CodeRecordInvalid}
	t := &Tombstone{}
	o := d.object(tree, "", tombstoneMembers, nil)
	d.constant(o, "", "tombstone_version", TombstoneVersion)
	t.TombstoneID = d.uri(o, "", "tombstone_id")
	t.ItemDigest = d.digest(o, "", "item_digest")
	t.PurgedAt = d.integer(o, "", "purged_at", 1, maxSafeInteger)
	t.Reason = d.str(o, "", "reason")
	if d.err == nil && !contains(TombstoneReasons, t.Reason) {
		d.fail("reason", "must be one of \"regulatory_erasure\", \"retention_expiry\", \"owner_request\"")
	}
	t.Signature = decodeSignature(d, o)
	if d.err != nil {
		return nil, d.err
	}
	t.canonical, t.signed = canonicalPair(doc, tree, "", "signature", 384)
	return t, nil
}

// PurgedTime returns purged_at as a time.
func (t *Tombstone) PurgedTime() time.Time { return time.Unix(t.PurgedAt, 0).UTC() }

// SignedBytes returns JCS(tombstone without signature).
func (t *Tombstone) SignedBytes() []byte { return t.signed }

// Canonical returns JCS(tombstone), the log leaf.
func (t *Tombstone) Canonical() []byte { return t.canonical }

// VerifySignature verifies the tombstone under the issuer key its kid names
// in keys: the key must have been valid at purged_at and not be revoked at
// now.
func (t *Tombstone) VerifySignature(keys Keyring, now time.Time) error {
	return verifyKID(keys, &t.Signature, t.signed, t.PurgedTime(), now)
}

// VerifySignatureWithKey verifies the tombstone under pub.
func (t *Tombstone) VerifySignatureWithKey(pub ed25519.PublicKey) error {
	return verifyWithKey(pub, &t.Signature, t.signed)
}

func (t *Tombstone) value(withSignature bool) value {
	members := []member{
		m("tombstone_version", vstr(TombstoneVersion)),
		m("tombstone_id", vstr(t.TombstoneID)),
		m("item_digest", vstr(t.ItemDigest)),
		m("purged_at", vint(t.PurgedAt)),
		m("reason", vstr(t.Reason)),
	}
	if withSignature {
		members = append(members, m("signature", t.Signature.value()))
	}
	return vobj(members...)
}

// SignTombstone signs t with priv and returns the parsed, canonical result.
func SignTombstone(t *Tombstone, priv ed25519.PrivateKey) (*Tombstone, error) {
	unsigned := t.value(false)
	signed := appendCanonical(nil, &unsigned)
	pub := priv.Public().(ed25519.PublicKey)
	sig := ed25519.Sign(priv, signed)
	t.Signature = Signature{Alg: "Ed25519", KID: KeyID(pub), Sig: sig, SigB64: EncodeB64u(sig)}
	full := t.value(true)
	return ParseTombstone(appendCanonical(nil, &full))
}
