package projector

import (
	"github.com/memtrail/memtrail/internal/apertomemory"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
)

// NativeVerifier is the ApertoMemory source verifier of step 5 of the
// verifier algorithm, over an opened vault: it opens each source object of
// a record's material with the vault's keys, derives its trust,
// authorship, author and custody under the vault's keyring, and frames it
// with context-frame v0. Its trust snapshot is the vault's keyring, so a
// record whose trust was evaluated under another keyring (a key accepted
// or removed since, another vault) fails trust_snapshot_digest.
//
// Open the vault with [apertomemory.OpenOptions.AllowUnverified]: a record
// may deliver objects its policy opted in to reading as unverified, and
// the opt-in reports what such an object is (at most unverified) instead
// of refusing it; it changes no other outcome.
type NativeVerifier struct {
	Vault *apertomemory.Vault
	// Name says which vault it is, for the report (a file name).
	Name string
}

var _ verifier.SourceVerifier = (*NativeVerifier)(nil)

// SourceProfile is draft-ferro-apertomemory-02.
func (n *NativeVerifier) SourceProfile() string { return receipts.SourceProfileApertoMemory }

// Describe names the vault and its keyring.
func (n *NativeVerifier) Describe() string {
	return "objects opened and framed natively from vault " + n.Name + " (owner key " + n.Vault.Keyring.Owner().B64u() + ")"
}

// TrustSnapshot is the vault keyring's trust snapshot (-01 §5.1).
func (n *NativeVerifier) TrustSnapshot() []byte { return n.Vault.Keyring.TrustSnapshot() }

// VerifySource opens sealed with the vault's keys.
func (n *NativeVerifier) VerifySource(sealed []byte) verifier.SourceResult {
	o, err := n.Vault.OpenSealed(sealed)
	if err != nil {
		code := "refused"
		if r := apertomemory.RefusalOf(err); r != nil {
			code = r.Code
		}
		return verifier.SourceResult{
			NativeResult: verifier.NativeResult{Valid: false, SealedObjectDigest: apertomemory.SealedDigest(sealed)},
			Refusal:      code,
		}
	}
	return verifier.SourceResult{NativeResult: NativeResult(o, sealed), FrameProfile: receipts.ContextFrameApertoMemory, Fragment: o.ContextFragment()}
}
