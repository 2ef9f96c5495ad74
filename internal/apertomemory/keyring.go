package apertomemory

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
)

// Keyring is the read-time trust state: the vault owner's signing key
// (trust "self") and the accepted third-party author keys (trust
// "trusted"). Trust is derived against the Keyring at read time and never
// frozen into an object: removing a key downgrades everything it signed.
type Keyring struct {
	owner    ed25519.PublicKey
	ownerID  KeyID
	accepted map[KeyID]ed25519.PublicKey
}

// NewKeyring builds a keyring from the owner's public key and the accepted
// author public keys. Each key's id is computed from the key itself;
// duplicates collapse. The owner may also appear among the accepted keys
// (it is kept, as draft -01 §5.1 requires of the snapshot; it never changes
// a trust outcome, since the owner's key already yields "self").
func NewKeyring(owner ed25519.PublicKey, accepted ...ed25519.PublicKey) (*Keyring, error) {
	if len(owner) != ed25519.PublicKeySize {
		return nil, errors.New("apertomemory: owner key is not a 32-byte Ed25519 public key")
	}
	k := &Keyring{owner: slices.Clone(owner), ownerID: KeyIDOf(owner), accepted: map[KeyID]ed25519.PublicKey{}}
	for _, p := range accepted {
		if len(p) != ed25519.PublicKeySize {
			return nil, errors.New("apertomemory: accepted key is not a 32-byte Ed25519 public key")
		}
		k.accepted[KeyIDOf(p)] = slices.Clone(p)
	}
	return k, nil
}

// Owner is the owner's key id.
func (k *Keyring) Owner() KeyID { return k.ownerID }

// OwnerKey is the owner's public key.
func (k *Keyring) OwnerKey() ed25519.PublicKey { return k.owner }

// Accepted lists the accepted key ids in ascending raw-byte order.
func (k *Keyring) Accepted() []KeyID {
	ids := make([]KeyID, 0, len(k.accepted))
	for id := range k.accepted {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b KeyID) int { return bytes.Compare(a[:], b[:]) })
	return ids
}

// AcceptedKey returns the public key of an accepted key id.
func (k *Keyring) AcceptedKey(id KeyID) (ed25519.PublicKey, bool) {
	p, ok := k.accepted[id]
	return p, ok
}

// isAccepted is the custody rule's accepted set: the keyring plus the owner.
func (k *Keyring) isAccepted(id KeyID) bool {
	_, ok := k.accepted[id]
	return ok || id == k.ownerID
}

// TrustSnapshot is the keyring's trust snapshot (projection draft -01
// §5.1, urn:apertomemory:trust-snapshot:v0).
func (k *Keyring) TrustSnapshot() []byte {
	return EncodeTrustSnapshot(k.ownerID, k.Accepted())
}

// TrustSnapshotDigest is "sha256:" and the lowercase hex SHA-256 of
// [Keyring.TrustSnapshot], the record's trust_snapshot_digest.
func (k *Keyring) TrustSnapshotDigest() string {
	return TrustSnapshotDigest(k.TrustSnapshot())
}

// EncodeTrustSnapshot encodes the ApertoMemory trust snapshot of draft -01
// §5.1: the deterministic-CBOR two-member map
//
//	{1: h'<owner key id>', 2: [h'<accepted key id>', ...]}
//
// where the accepted ids are de-duplicated and sorted by their raw bytes
// (never by a text form), key 2 is present even when empty, and an owner id
// that is also accepted stays in the array. For owner 63c1e89c009c5ad7 and
// one accepted key d05309cbd3b55f3b the bytes are
//
//	a2 01 48 63c1e89c009c5ad7 02 81 48 d05309cbd3b55f3b
func EncodeTrustSnapshot(owner KeyID, accepted []KeyID) []byte {
	ids := slices.Clone(accepted)
	slices.SortFunc(ids, func(a, b KeyID) int { return bytes.Compare(a[:], b[:]) })
	ids = slices.Compact(ids)
	arr := make([][]byte, len(ids))
	for i := range ids {
		arr[i] = ids[i][:]
	}
	return marshal(map[uint64]any{1: owner[:], 2: arr})
}

// TrustSnapshotDigest is "sha256:" and the lowercase hex SHA-256 of the
// exact snapshot bytes.
func TrustSnapshotDigest(snapshot []byte) string {
	s := sha256.Sum256(snapshot)
	return "sha256:" + hex.EncodeToString(s[:])
}
