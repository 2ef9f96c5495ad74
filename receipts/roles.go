package receipts

import "time"

// The roles a trust file gives keys.
const (
	RoleAdapter   = "adapter"
	RoleCompactor = "compactor"
	RoleIssuer    = "issuer"
)

// RolesOf returns the roles t gives the key whose kid is kid, in the order
// adapter, compactor, issuer (an adapter pin's kid is that of its raw
// public key, as for the others).
func (t *Trust) RolesOf(kid string) []string {
	var roles []string
	for _, p := range t.Adapters {
		if KeyID(p.PublicKey) == kid {
			roles = append(roles, RoleAdapter)
			break
		}
	}
	if _, ok := t.Compactors[kid]; ok {
		roles = append(roles, RoleCompactor)
	}
	if _, ok := t.Issuers[kid]; ok {
		roles = append(roles, RoleIssuer)
	}
	return roles
}

// NotPinnedError is the refusal of a signature whose kid no key of role
// has (CodeKeyNotPinned). When t registers that key in another role, the
// reason says so: the key is known, but may not sign this kind of receipt.
func (t *Trust) NotPinnedError(role, kid string) error {
	if roles := t.RolesOf(kid); len(roles) > 0 {
		return refuse(CodeKeyNotPinned, "signature.kid", "%s is the kid of %s %s key, not of %s %s key: a %s must be signed with %s %s key",
			kid, article(roles[0]), roles[0], article(role), role, receiptOfRole(role), article(role), role)
	}
	return refuse(CodeKeyNotPinned, "signature.kid", "no %s key of the trust file has kid %s", role, kid)
}

// VerifyCompaction verifies c's signature under t's compactor keys, current
// at now ([Compaction.VerifySignature]); a kid of another role's key is
// refused as such.
func (t *Trust) VerifyCompaction(c *Compaction, now time.Time) error {
	if _, ok := t.Compactors[c.Signature.KID]; !ok {
		return t.NotPinnedError(RoleCompactor, c.Signature.KID)
	}
	return c.VerifySignature(t.Compactors, now)
}

// VerifyTombstone verifies ts's signature under t's issuer keys
// ([Tombstone.VerifySignature]); a kid of another role's key is refused as
// such.
func (t *Trust) VerifyTombstone(ts *Tombstone, now time.Time) error {
	if _, ok := t.Issuers[ts.Signature.KID]; !ok {
		return t.NotPinnedError(RoleIssuer, ts.Signature.KID)
	}
	return ts.VerifySignature(t.Issuers, now)
}

func receiptOfRole(role string) string {
	switch role {
	case RoleCompactor:
		return "compaction"
	case RoleIssuer:
		return "tombstone"
	}
	return "projection record"
}

func article(role string) string {
	if role == RoleAdapter || role == RoleIssuer {
		return "an"
	}
	return "a"
}
