package apertomemory

import (
	"crypto/ed25519"
	"errors"
	"math"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"
)

// Trust is the derived trust of an opened object (draft §6, Table 1).
type Trust string

const (
	TrustSelf       Trust = "self"
	TrustTrusted    Trust = "trusted"
	TrustUnverified Trust = "unverified"
)

// Authorship is the derived authorship of an opened object (draft §7).
type Authorship string

const (
	// AuthorshipSigned: the verified signer is the author.
	AuthorshipSigned Authorship = "signed"
	// AuthorshipAttested: the vault owner re-sealed the object and attests
	// an accepted author in an honoured custody record.
	AuthorshipAttested Authorship = "attested"
	// AuthorshipUnknown: no author can be reported.
	AuthorshipUnknown Authorship = "unknown"
)

// Schema violations reported on an object that still opens (strict on
// write, lenient on read, draft §3.2).
const (
	// ViolationConfidence: confidence is outside [0.0, 1.0], NaN,
	// infinite, absent or not a number; it is reported absent (vector 013).
	ViolationConfidence = "confidence out of range"
	// ViolationCustody: payload key 20 is not a well-formed custody
	// record (for example the empty map of vector 014); trust degrades to
	// unverified.
	ViolationCustody = "custody record malformed"
	// ViolationMemType: mem-type is absent or not an unsigned integer.
	ViolationMemType = "mem-type missing or not an unsigned integer"
	// ViolationEmptyContent: content is the empty string.
	ViolationEmptyContent = "content empty"
	// ViolationProvenance: the provenance map or its tool is missing or
	// mistyped, or a string in it is over Limits.MaxNameBytes.
	ViolationProvenance = "provenance malformed"
	// ViolationTags: tags is not an array of text strings within
	// Limits.MaxTags and Limits.MaxNameBytes; reported as no tags.
	ViolationTags = "tags malformed"
	// ViolationTimestamps: the timestamps map or its created time is
	// missing or not a bare unsigned integer.
	ViolationTimestamps = "timestamps malformed"
)

// Object is one opened memory object: what the envelope and the signed
// payload say, and what the reader derived from which key verified it.
//
// Trust, Authorship, Author, Signer and the honoured part of Custody are
// derived; nothing in the payload can set them. Content whose Trust is not
// TrustSelf is data from someone other than the owner and must never be
// given instruction-level privilege (draft §6, §15.2).
type Object struct {
	ID            ObjectID
	Scope         ScopeID
	FormatVersion uint64

	// Trust: self, trusted or unverified.
	Trust Trust
	// Authorship: signed, attested or unknown.
	Authorship Authorship
	// Author is the reported author: the verified signer (signed), the
	// proven author of an honoured custody record (attested), or nil
	// (unknown).
	Author *KeyID
	// Signer is the key that verified the signature; nil when none did
	// (an object read under AllowUnverified).
	Signer *KeyID
	// ClaimedAuthor is an unproven authorship claim, exposed separately
	// and never as Author: the original author_key_id of a custody record
	// that is not honoured, or the payload's author_key_id of an object
	// nothing verified. Nil otherwise.
	ClaimedAuthor *KeyID
	// Custody is the payload's well-formed custody record, nil when there
	// is none or it is malformed (then Violations has ViolationCustody).
	Custody *CustodyRecord

	Type MemType
	// Content is the memory text, verbatim.
	Content string
	// Confidence is nil when absent or out of range (see Violations).
	Confidence *float64
	Tags       []string
	Tool       string
	Session    string
	// Created and Updated are epoch seconds; zero when absent.
	Created uint64
	Updated uint64
	// DeclaredTrust is payload key 5 as written. Informational only: it is
	// never used to derive anything.
	DeclaredTrust uint64
	// Extra holds the payload keys this revision does not interpret
	// (including the reserved 8, 9 and 10), verbatim. expires_at (9) is
	// not enforced.
	Extra map[uint64]cbor.RawMessage
	// Payload is the signed memory-payload, byte for byte.
	Payload []byte
	// Violations lists the schema violations found (the Violation*
	// constants); the object is authentic and opened despite them.
	Violations []string
}

// SignatureVerified reports whether a key the reader accepts verified the
// object's signature.
func (o *Object) SignatureVerified() bool { return o.Signer != nil }

// CustodyPresent reports whether the object carries a well-formed custody
// record (the projection record's custody_present). An empty or malformed
// record is not "present": it proves nothing and the object is unverified.
func (o *Object) CustodyPresent() bool { return o.Custody != nil }

// OpenOptions tune [OpenObject] and [Container.Open]. The zero value is
// fail-closed with the default limits.
type OpenOptions struct {
	// AllowUnverified is the explicit opt-in of draft §6 and §12: objects
	// that cannot be authenticated — format_version 1 objects, and
	// format_version 2 objects whose author_key_id names no accepted key —
	// are opened with trust "unverified" and no author instead of being
	// refused. Forged, inconsistent, rebound or undecryptable objects are
	// refused regardless.
	AllowUnverified bool
	// Limits caps object sizes for OpenObject; nil means DefaultLimits.
	// (Container.Open uses the limits the container was parsed with.)
	Limits *Limits
	// Keyring, for Container.Open only, replaces the keyring derived from
	// the container's known_keys; its owner must be the container's. Nil
	// means the owner plus the container's known_keys.
	Keyring *Keyring
}

// OpenObject decrypts, authenticates and decodes one sealed object with its
// DEK, deriving trust from which key of the keyring verified it. A refused
// object returns an error wrapping one of the Err* refusals and no content.
func OpenObject(sealed, dek []byte, kr *Keyring, opts *OpenOptions) (*Object, error) {
	if opts == nil {
		opts = &OpenOptions{}
	}
	lim := opts.Limits.withDefaults()
	env, err := parseEnvelope(sealed, lim.MaxObjectBytes)
	if err != nil {
		return nil, err
	}
	return openEnvelope(env, dek, kr, opts, &lim)
}

func openEnvelope(env *envelope, dek []byte, kr *Keyring, opts *OpenOptions, lim *Limits) (*Object, error) {
	if kr == nil {
		return nil, errors.New("apertomemory: no keyring")
	}
	if env.version != 1 && env.version != 2 {
		return nil, refuse(ErrUnsupportedVersion, "format_version %d", env.version)
	}
	enc, err := parseEncrypt0(env.enc)
	if err != nil {
		return nil, err
	}
	aad := envelopeAAD(env.version, env.id, env.scope)
	signed, ok := enc.decrypt(dek, aad)
	if !ok {
		if env.version == 1 {
			// A format_version 2 object relabelled 1 authenticates only
			// under the version 2 envelope-aad: that is the downgrade.
			if _, ok := enc.decrypt(dek, envelopeAAD(2, env.id, env.scope)); ok {
				return nil, ErrVersionDowngrade
			}
		}
		return nil, ErrEnvelopeBinding
	}
	var msg cose.Sign1Message
	if err := msg.UnmarshalCBOR(signed); err != nil {
		return nil, refuse(ErrMalformedObject, "inner COSE_Sign1")
	}
	if alg, err := msg.Headers.Protected.Algorithm(); err != nil || alg != cose.AlgorithmEdDSA {
		return nil, refuse(ErrUnsupportedAlgorithm, "COSE_Sign1 alg is not EdDSA")
	}
	p, ok := decodeUintMap(objDecMode, msg.Payload)
	if !ok {
		return nil, refuse(ErrMalformedPayload, "not a map with unsigned integer keys")
	}
	content, ok := decodeText(objDecMode, p[2])
	if !ok {
		return nil, refuse(ErrMalformedPayload, "content (2) missing or not a text string")
	}
	o := &Object{ID: env.id, Scope: env.scope, FormatVersion: env.version, Content: content, Payload: msg.Payload}
	prov, provOK := decodeUintMap(objDecMode, p[4])
	var claimed *KeyID
	if provOK {
		if k, ok := kidOf(prov[2]); ok {
			claimed = &k
		}
	}

	// ---- authenticate --------------------------------------------------
	var signer *KeyID
	signerIsOwner := false
	if env.version == 1 {
		// No binding at all: the signature proves nothing about placement
		// or authorship, so it is not even checked (draft §12).
		if !opts.AllowUnverified {
			return nil, ErrLegacyUnverified
		}
	} else {
		if raw, present := msg.Headers.Protected[cose.HeaderLabelKeyID]; present {
			hk, ok := raw.([]byte)
			if !ok || claimed == nil || string(hk) != string(claimed[:]) {
				return nil, ErrInconsistentKid
			}
		}
		signer, signerIsOwner, err = authenticate(&msg, aad, claimed, kr)
		if err != nil {
			if !errors.Is(err, ErrNotAuthenticated) || !opts.AllowUnverified {
				return nil, err
			}
		}
	}

	// ---- derive ---------------------------------------------------------
	switch {
	case signer == nil:
		o.Trust, o.Authorship, o.ClaimedAuthor = TrustUnverified, AuthorshipUnknown, claimed
	case signerIsOwner:
		o.Trust, o.Authorship, o.Author, o.Signer = TrustSelf, AuthorshipSigned, signer, signer
	default:
		o.Trust, o.Authorship, o.Author, o.Signer = TrustTrusted, AuthorshipSigned, signer, signer
	}
	if raw, present := p[payloadKeyCustody]; present {
		// A custody record means the signature proves custody, not
		// authorship: never "self", whoever signed (draft §7).
		c, ok := parseCustody(raw)
		o.Author = nil
		o.Authorship = AuthorshipUnknown
		o.Trust = TrustUnverified
		o.ClaimedAuthor = nil
		if !ok {
			o.Violations = append(o.Violations, ViolationCustody)
		} else {
			o.Custody = c
			// Honoured only when the custodian is the vault owner and the
			// proven author is a key accepted now.
			if signer != nil && signerIsOwner && c.ProvenAuthor != nil && kr.isAccepted(*c.ProvenAuthor) {
				o.Trust, o.Authorship, o.Author = TrustTrusted, AuthorshipAttested, c.ProvenAuthor
			} else {
				c.ProvenAuthor = nil
				claim := c.ClaimedAuthor
				o.ClaimedAuthor = &claim
			}
		}
	}

	// ---- decode the rest, leniently -------------------------------------
	if content == "" {
		o.Violations = append(o.Violations, ViolationEmptyContent)
	}
	if t, ok := decodeUint(objDecMode, p[1]); ok {
		o.Type = MemType(t)
	} else {
		o.Violations = append(o.Violations, ViolationMemType)
	}
	o.Confidence = confidenceOf(p[3])
	if o.Confidence == nil {
		o.Violations = append(o.Violations, ViolationConfidence)
	}
	provGood := provOK
	if provOK {
		tool, ok := decodeText(objDecMode, prov[1])
		if ok && len(tool) <= lim.MaxNameBytes {
			o.Tool = tool
		} else {
			provGood = false
		}
		if raw, present := prov[3]; present {
			s, ok := decodeText(objDecMode, raw)
			if ok && len(s) <= lim.MaxNameBytes {
				o.Session = s
			} else {
				provGood = false
			}
		}
		if claimed == nil {
			provGood = false
		}
	}
	if !provGood {
		o.Violations = append(o.Violations, ViolationProvenance)
	}
	o.DeclaredTrust, _ = decodeUint(objDecMode, p[5])
	if raw, present := p[6]; present {
		if tags, ok := tagsOf(raw, lim); ok {
			o.Tags = tags
		} else {
			o.Violations = append(o.Violations, ViolationTags)
		}
	}
	if ts, ok := decodeUintMap(objDecMode, p[7]); ok {
		c, okc := decodeUint(objDecMode, ts[1])
		o.Created = c
		okU := true
		if raw, present := ts[2]; present {
			o.Updated, okU = decodeUint(objDecMode, raw)
		}
		if !okc || !okU {
			o.Violations = append(o.Violations, ViolationTimestamps)
		}
	} else {
		o.Violations = append(o.Violations, ViolationTimestamps)
	}
	for _, k := range sortedKeys(p) {
		if (k >= 1 && k <= 7) || k == payloadKeyCustody {
			continue
		}
		if o.Extra == nil {
			o.Extra = map[uint64]cbor.RawMessage{}
		}
		o.Extra[k] = p[k]
	}
	return o, nil
}

// authenticate finds the accepted key that verifies the signature. The
// author binding (draft §5.2) means only a key whose id equals the
// payload's author_key_id may verify; when none does, it tells a forgery
// (another accepted key verifies: ErrAuthorMismatch; the named key does
// not: ErrBadSignature) from an object nobody accepted signed
// (ErrNotAuthenticated).
func authenticate(msg *cose.Sign1Message, aad []byte, claimed *KeyID, kr *Keyring) (*KeyID, bool, error) {
	type cand struct {
		id    KeyID
		pub   ed25519.PublicKey
		owner bool
	}
	cands := []cand{{kr.ownerID, kr.owner, true}}
	for _, id := range kr.Accepted() {
		if id != kr.ownerID {
			cands = append(cands, cand{id, kr.accepted[id], false})
		}
	}
	verifies := func(pub ed25519.PublicKey) bool {
		v, err := cose.NewVerifier(cose.AlgorithmEdDSA, pub)
		return err == nil && msg.Verify(aad, v) == nil
	}
	named := false
	if claimed != nil {
		for _, c := range cands {
			if c.id != *claimed {
				continue
			}
			named = true
			if verifies(c.pub) {
				id := c.id
				return &id, c.owner, nil
			}
		}
	}
	for _, c := range cands {
		if claimed != nil && c.id == *claimed {
			continue
		}
		if verifies(c.pub) {
			return nil, false, refuse(ErrAuthorMismatch, "signed by %s, author_key_id names %s", c.id, claimedString(claimed))
		}
	}
	if named {
		return nil, false, refuse(ErrBadSignature, "author_key_id %s", claimed)
	}
	return nil, false, refuse(ErrNotAuthenticated, "author_key_id %s", claimedString(claimed))
}

func claimedString(k *KeyID) string {
	if k == nil {
		return "(none)"
	}
	return k.String()
}

// parseCustody reads a custody record; ok is false for anything but a map
// with field 1 (uint), 2 (8-byte string), 3 (uint) and optional 4 (8-byte
// string). Further keys are tolerated.
func parseCustody(raw cbor.RawMessage) (*CustodyRecord, bool) {
	m, ok := decodeUintMap(objDecMode, raw)
	if !ok {
		return nil, false
	}
	var c CustodyRecord
	var ok1, ok2, ok3 bool
	c.FromVersion, ok1 = decodeUint(objDecMode, m[1])
	c.ClaimedAuthor, ok2 = kidOf(m[2])
	c.ResealedAt, ok3 = decodeUint(objDecMode, m[3])
	if !ok1 || !ok2 || !ok3 {
		return nil, false
	}
	if raw4, present := m[4]; present {
		k, ok := kidOf(raw4)
		if !ok {
			return nil, false
		}
		c.ProvenAuthor = &k
	}
	return &c, true
}

// confidenceOf returns the confidence when it is a number in [0.0, 1.0].
func confidenceOf(raw cbor.RawMessage) *float64 {
	var f float64
	switch majorType(raw) {
	case 7:
		if raw[0] != 0xf9 && raw[0] != 0xfa && raw[0] != 0xfb {
			return nil // simple values (false, true, null) are not numbers
		}
		if err := objDecMode.Unmarshal(raw, &f); err != nil {
			return nil
		}
	case 0:
		u, ok := decodeUint(objDecMode, raw)
		if !ok {
			return nil
		}
		f = float64(u)
	default:
		return nil
	}
	if math.IsNaN(f) || f < 0 || f > 1 {
		return nil
	}
	return &f
}

func tagsOf(raw cbor.RawMessage, lim *Limits) ([]string, bool) {
	if majorType(raw) != 4 {
		return nil, false
	}
	var items []cbor.RawMessage
	if err := objDecMode.Unmarshal(raw, &items); err != nil || len(items) > lim.MaxTags {
		return nil, false
	}
	tags := make([]string, 0, len(items))
	for _, it := range items {
		s, ok := decodeText(objDecMode, it)
		if !ok || len(s) > lim.MaxNameBytes {
			return nil, false
		}
		tags = append(tags, s)
	}
	return tags, true
}
