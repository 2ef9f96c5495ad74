package receipts

import (
	"crypto/ed25519"
	"time"
)

// A Key is a compactor's or tombstone issuer's registered signing key, as
// the trust file lists it:
//
//	{"public_key_hex": "197f6b23…8d61", "valid_from": "2026-01-01T00:00:00Z",
//	 "valid_to": null, "revoked_at": null}
//
// An optional "name" member labels the key for humans. The key is referred
// to by its kid, "sha256:" + hex(SHA-256(raw public key)).
type Key struct {
	Name      string
	PublicKey ed25519.PublicKey
	KID       string
	ValidFrom time.Time
	ValidTo   *time.Time
	RevokedAt *time.Time
}

// A Keyring maps kids to keys.
type Keyring map[string]*Key

// CheckCurrent checks that the key was valid at t (valid_from ≤ t <
// valid_to) and is not revoked at now (CodeKeyExpired, CodeKeyRevoked).
func (k *Key) CheckCurrent(t, now time.Time) error {
	if k.RevokedAt != nil && !k.RevokedAt.After(now) {
		return refuse(CodeKeyRevoked, "signature.kid", "key %s was revoked at %s", k.KID, FormatTimestamp(*k.RevokedAt))
	}
	if t.Before(k.ValidFrom) {
		return refuse(CodeKeyExpired, "signature.kid", "key %s is valid only from %s", k.KID, FormatTimestamp(k.ValidFrom))
	}
	if k.ValidTo != nil && !t.Before(*k.ValidTo) {
		return refuse(CodeKeyExpired, "signature.kid", "key %s expired at %s", k.KID, FormatTimestamp(*k.ValidTo))
	}
	return nil
}

// Signature is the signature member of an ECCR or a tombstone.
type Signature struct {
	Alg    string
	KID    string
	Sig    []byte
	SigB64 string
}

var signatureMembers = []string{"alg", "kid", "sig"}

func decodeSignature(d *decoder, o *value) Signature {
	var s Signature
	so := d.object(d.member(o, "signature"), "signature", signatureMembers, nil)
	s.Alg = d.str(so, "signature", "alg")
	if d.err == nil && s.Alg != "Ed25519" {
		d.fail("signature.alg", "must be \"Ed25519\"")
	}
	s.KID = d.digest(so, "signature", "kid")
	s.SigB64 = d.str(so, "signature", "sig")
	if d.err == nil {
		sig, ok := DecodeB64u(s.SigB64)
		if !ok || len(sig) != ed25519.SignatureSize {
			d.fail("signature.sig", "must be the unpadded base64url of a 64-byte Ed25519 signature")
		}
		s.Sig = sig
	}
	return s
}

func (s *Signature) value() value {
	return vobj(m("alg", vstr("Ed25519")), m("kid", vstr(s.KID)), m("sig", vstr(s.SigB64)))
}

// verifyKID resolves kid in keys, checks the key is current, and verifies
// sig over signed.
func verifyKID(keys Keyring, s *Signature, signed []byte, t, now time.Time) error {
	k, ok := keys[s.KID]
	if !ok {
		return refuse(CodeKeyNotPinned, "signature.kid", "no registered key has kid %s", s.KID)
	}
	if err := k.CheckCurrent(t, now); err != nil {
		return err
	}
	if !VerifyEd25519(k.PublicKey, signed, s.Sig) {
		return refuse(CodeSignatureInvalid, "signature.sig", "Ed25519 signature does not verify under key %s", s.KID)
	}
	return nil
}

// VerifyEd25519 is the signature check behind every receipt kind: RFC 8032
// Ed25519 as crypto/ed25519 implements it (S must be below the group order;
// wrong lengths fail). Public keys reach it only through ParsePublicKey,
// CheckPublicKey or a pin, which refuse small-order and non-canonical
// points, so the cofactored and cofactorless checks cannot disagree.
func VerifyEd25519(pub ed25519.PublicKey, msg, sig []byte) bool {
	return len(pub) == ed25519.PublicKeySize && len(sig) == ed25519.SignatureSize && ed25519.Verify(pub, msg, sig)
}

// verifyWithKey verifies sig over signed under pub, checking that pub's
// kid is the one the signature names.
func verifyWithKey(pub ed25519.PublicKey, s *Signature, signed []byte) error {
	if KeyID(pub) != s.KID {
		return refuse(CodeKeyNotPinned, "signature.kid", "is %s, not the kid of the given key (%s)", s.KID, KeyID(pub))
	}
	if !VerifyEd25519(pub, signed, s.Sig) {
		return refuse(CodeSignatureInvalid, "signature.sig", "Ed25519 signature does not verify under key %s", s.KID)
	}
	return nil
}
