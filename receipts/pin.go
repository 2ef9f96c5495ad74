package receipts

import (
	"crypto/ed25519"
	"strconv"
	"time"
)

// An AdapterPin is a relying party's pin of one adapter signing key, in the
// interop "adapter_pin" shape:
//
//	{"adapter_id": "urn:apertomemory:adapter:reference-01",
//	 "key_id": "apertomemory-adapter-key-2026-07",
//	 "alg": "Ed25519",
//	 "public_key_spki_b64u": "MCowBQYDK2VwAyEA08THovDNs4pMv1ARMiWEVyplc8KPSoa1ORtO4VksAAc",
//	 "status": "active",
//	 "valid_from": "2026-07-29T00:00:00.000Z",
//	 "valid_to": "2027-07-29T00:00:00.000Z",
//	 "revoked_at": null}
//
// status is "active" or "revoked"; valid_to and revoked_at may be null. A
// record's key must be valid at the record's created_at (valid_from ≤
// created_at < valid_to) and must not be revoked at the verification time: a
// revoked key is assumed compromised, and a compromised key can sign with
// any created_at. A "revoked" status without revoked_at revokes the key for
// every time.
type AdapterPin struct {
	AdapterID string
	KeyID     string
	PublicKey ed25519.PublicKey
	Status    string
	ValidFrom time.Time
	ValidTo   *time.Time
	RevokedAt *time.Time
}

var adapterPinMembers = []string{"adapter_id", "key_id", "alg", "public_key_spki_b64u", "status", "valid_from", "valid_to", "revoked_at"}

// maxPinFile caps pin and trust inputs.
const maxPinFile = 4 << 20

// ParseAdapterPins parses one adapter pin object or an array of them.
func ParseAdapterPins(data []byte) ([]*AdapterPin, error) {
	if len(data) > maxPinFile {
		return nil, refuse(CodeTooLarge, "", "pin file is larger than %d bytes", maxPinFile)
	}
	tree, err := parseJSON(data, 1<<16)
	if err != nil {
		return nil, &Error{Code: CodeRecordInvalid, Reason: "pins are not strict I-JSON", Err: err}
	}
	if tree.kind == kindObject {
		p, err := adapterPinFromTree(&tree, "")
		if err != nil {
			return nil, err
		}
		return []*AdapterPin{p}, nil
	}
	if tree.kind != kindArray {
		return nil, refuse(CodeRecordInvalid, "", "pins must be an object or an array of objects")
	}
	pins := make([]*AdapterPin, 0, len(tree.elems))
	for i := range tree.elems {
		p, err := adapterPinFromTree(&tree.elems[i], "["+strconv.Itoa(i)+"]")
		if err != nil {
			return nil, err
		}
		pins = append(pins, p)
	}
	return pins, nil
}

func adapterPinFromTree(v *value, path string) (*AdapterPin, error) {
	d := &decoder{code: CodeRecordInvalid}
	o := d.object(v, path, adapterPinMembers, nil)
	p := &AdapterPin{}
	p.AdapterID = d.uri(o, path, "adapter_id")
	p.KeyID = d.boundedString(o, path, "key_id", maxShortString)
	d.constant(o, path, "alg", "Ed25519")
	spki := d.str(o, path, "public_key_spki_b64u")
	p.Status = d.str(o, path, "status")
	if d.err == nil && p.Status != "active" && p.Status != "revoked" {
		d.fail(join(path, "status"), "must be \"active\" or \"revoked\"")
	}
	p.ValidFrom, _ = d.timestamp(o, path, "valid_from")
	p.ValidTo = d.optionalTimestamp(o, path, "valid_to")
	p.RevokedAt = d.optionalTimestamp(o, path, "revoked_at")
	if d.err != nil {
		return nil, d.err
	}
	pub, err := ParsePublicKey(spki)
	if err != nil {
		e := err.(*Error)
		e.Member = join(path, "public_key_spki_b64u")
		return nil, e
	}
	p.PublicKey = pub
	if p.ValidTo != nil && !p.ValidTo.After(p.ValidFrom) {
		return nil, refuse(CodeRecordInvalid, join(path, "valid_to"), "must be later than valid_from")
	}
	return p, nil
}

// optionalTimestamp reads a member that is null or an RFC 3339 UTC
// timestamp.
func (d *decoder) optionalTimestamp(o *value, parent, name string) *time.Time {
	v := d.member(o, name)
	if d.err != nil || v.kind == kindNull {
		return nil
	}
	t, _ := d.timestamp(o, parent, name)
	if d.err != nil {
		return nil
	}
	return &t
}

// FindAdapterPin returns the pin for the record's adapter id and key id, or
// an adapter_key_not_pinned refusal.
func FindAdapterPin(pins []*AdapterPin, adapterID, keyID string) (*AdapterPin, error) {
	for _, p := range pins {
		if p.AdapterID == adapterID && p.KeyID == keyID {
			return p, nil
		}
	}
	return nil, refuse(CodeAdapterKeyNotPinned, "adapter", "no pinned key %q for adapter %q", keyID, adapterID)
}

// CheckCurrent checks that the key was valid at createdAt and is not
// revoked at now.
func (p *AdapterPin) CheckCurrent(createdAt, now time.Time) error {
	if p.Status == "revoked" && p.RevokedAt == nil {
		return refuse(CodeAdapterKeyRevoked, "adapter.key_id", "key %q is revoked", p.KeyID)
	}
	if p.RevokedAt != nil && !p.RevokedAt.After(now) {
		return refuse(CodeAdapterKeyRevoked, "adapter.key_id", "key %q was revoked at %s", p.KeyID, FormatTimestamp(*p.RevokedAt))
	}
	if createdAt.Before(p.ValidFrom) {
		return refuse(CodeAdapterKeyExpired, "adapter.key_id", "key %q is valid only from %s, after created_at", p.KeyID, FormatTimestamp(p.ValidFrom))
	}
	if p.ValidTo != nil && !createdAt.Before(*p.ValidTo) {
		return refuse(CodeAdapterKeyExpired, "adapter.key_id", "key %q expired at %s, before created_at", p.KeyID, FormatTimestamp(*p.ValidTo))
	}
	return nil
}

// VerifyProjectionSignature resolves the record's adapter key among pins,
// checks that it is current (valid at created_at, not revoked at now), and
// verifies the Ed25519 signature over the domain-separated canonical bytes.
func VerifyProjectionSignature(r *ProjectionRecord, pins []*AdapterPin, now time.Time) error {
	pin, err := FindAdapterPin(pins, r.Adapter.ID, r.Adapter.KeyID)
	if err != nil {
		return err
	}
	if err := pin.CheckCurrent(r.CreatedAt, now); err != nil {
		return err
	}
	if !VerifyEd25519(pin.PublicKey, r.signed, r.Proof.Signature) {
		return refuse(CodeSignatureInvalid, "proof.signature_b64u", "Ed25519 signature does not verify under the pinned key %q", pin.KeyID)
	}
	return nil
}
