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
//
// Several pins may name the same adapter_id and key_id (a relying party's
// pin file and a trust file, say). They must pin the same public key:
// [CheckAdapterPins] refuses pins that disagree, and [FindAdapterPin]
// finds no usable pin among them. Among pins of the same key the most
// restrictive one wins, member by member: the key is revoked if any pin
// revokes it, from the earliest revoked_at (or for every time, if a
// "revoked" pin has no revoked_at), and it is valid only where every pin's
// window holds (the latest valid_from, the earliest valid_to). Adding a pin
// never widens what the others allow.
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

// ParseAdapterPins parses one adapter pin object or an array of them. An
// array may pin one adapter key several times, but not two public keys
// under one adapter_id and key_id (see [AdapterPin]).
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
	if err := CheckAdapterPins(pins); err != nil {
		return nil, err
	}
	return pins, nil
}

// CheckAdapterPins refuses pins of which two name the same adapter_id and
// key_id but different public keys: which key the relying party meant is
// then unknown. Pins of the same key may repeat; see [AdapterPin] for how
// they combine.
func CheckAdapterPins(pins []*AdapterPin) error {
	type name struct{ adapter, key string }
	first := make(map[name]int, len(pins))
	for i, p := range pins {
		n := name{p.AdapterID, p.KeyID}
		j, seen := first[n]
		if !seen {
			first[n] = i
			continue
		}
		if !pins[j].PublicKey.Equal(p.PublicKey) {
			return refuse(CodeRecordInvalid, "["+strconv.Itoa(i)+"].public_key_spki_b64u",
				"pins key %q of adapter %q to another public key than pin %d does", p.KeyID, p.AdapterID, j)
		}
	}
	return nil
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
		d.fail(MemberPath(path, "status"), "must be \"active\" or \"revoked\"")
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
		e.Member = MemberPath(path, "public_key_spki_b64u")
		return nil, e
	}
	p.PublicKey = pub
	if p.ValidTo != nil && !p.ValidTo.After(p.ValidFrom) {
		return nil, refuse(CodeRecordInvalid, MemberPath(path, "valid_to"), "must be later than valid_from")
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
// an adapter_key_not_pinned refusal. When several pins match, they must pin
// the same public key (else the refusal says they are ambiguous), and the
// result is a new pin combining them, the most restrictive member by
// member (see [AdapterPin]); the pins given are not changed.
func FindAdapterPin(pins []*AdapterPin, adapterID, keyID string) (*AdapterPin, error) {
	var found *AdapterPin
	merged := false
	for _, p := range pins {
		if p.AdapterID != adapterID || p.KeyID != keyID {
			continue
		}
		switch {
		case found == nil:
			found = p
		case !found.PublicKey.Equal(p.PublicKey):
			return nil, refuse(CodeAdapterKeyNotPinned, "adapter", "the pins of key %q for adapter %q disagree on its public key, so none is used", keyID, adapterID)
		default:
			if !merged {
				c := *found
				found, merged = &c, true
			}
			found.restrict(p)
		}
	}
	if found == nil {
		return nil, refuse(CodeAdapterKeyNotPinned, "adapter", "no pinned key %q for adapter %q", keyID, adapterID)
	}
	return found, nil
}

// restrict narrows p to what both p and q allow.
func (p *AdapterPin) restrict(q *AdapterPin) {
	always := func(x *AdapterPin) bool { return x.Status == "revoked" && x.RevokedAt == nil }
	switch {
	case always(p):
	case always(q):
		p.RevokedAt = nil
	case q.RevokedAt != nil && (p.RevokedAt == nil || q.RevokedAt.Before(*p.RevokedAt)):
		p.RevokedAt = q.RevokedAt
	}
	if q.Status == "revoked" {
		p.Status = "revoked"
	}
	if q.ValidFrom.After(p.ValidFrom) {
		p.ValidFrom = q.ValidFrom
	}
	if q.ValidTo != nil && (p.ValidTo == nil || q.ValidTo.Before(*p.ValidTo)) {
		p.ValidTo = q.ValidTo
	}
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
	return VerifyProjectionWithPin(r, pin, now)
}

// VerifyProjectionWithPin is VerifyProjectionSignature under a pin already
// found (FindAdapterPin) for the record's adapter and key.
func VerifyProjectionWithPin(r *ProjectionRecord, pin *AdapterPin, now time.Time) error {
	if err := pin.CheckCurrent(r.CreatedAt, now); err != nil {
		return err
	}
	if !VerifyEd25519(pin.PublicKey, r.signed, r.Proof.Signature) {
		return refuse(CodeSignatureInvalid, "proof.signature_b64u", "Ed25519 signature does not verify under the pinned key %q", pin.KeyID)
	}
	return nil
}
