package apertomemory

import (
	"crypto/aes"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"

	josecipher "github.com/go-jose/go-jose/v4/cipher"
	"golang.org/x/crypto/argon2"
)

// Argon2id parameters of draft §9: fixed, never weakened (§15.8).
const (
	Argon2Time    = 3
	Argon2MemKiB  = 64 * 1024
	Argon2Threads = 4
	SaltSize      = 16
)

// HKDF info strings of draft §9. They keep the "v1" label: it names the key
// hierarchy, which format_version 2 did not change.
const (
	infoSign    = "apertomemory/v1/sign"
	infoKA      = "apertomemory/v1/ka"
	infoKEKWrap = "apertomemory/v1/kek-wrap"
)

// KeyID is an author key identifier: the first 8 bytes of SHA-256 over a
// raw Ed25519 public key.
type KeyID [8]byte

// KeyIDOf computes the key identifier of an Ed25519 public key.
func KeyIDOf(pub ed25519.PublicKey) KeyID {
	s := sha256.Sum256(pub)
	var k KeyID
	copy(k[:], s[:8])
	return k
}

// String is the lowercase hexadecimal form ApertoMemory uses in
// human-facing contexts and in known_keys.
func (k KeyID) String() string { return hex.EncodeToString(k[:]) }

// B64u is the unpadded base64url form the projection record and the
// context frame use (author_key_id_b64u).
func (k KeyID) B64u() string { return base64.RawURLEncoding.EncodeToString(k[:]) }

// ObjectID is a sealed object's 128-bit random id.
type ObjectID [16]byte

func (o ObjectID) String() string { return hex.EncodeToString(o[:]) }

// ScopeID is a scope's opaque 128-bit identifier.
type ScopeID [16]byte

func (s ScopeID) String() string { return hex.EncodeToString(s[:]) }

// testingOnlyArgon2Calls counts master-secret derivations, so tests can
// check that a vault costs one Argon2id run and not one per object.
var testingOnlyArgon2Calls atomic.Int64

// DeriveMaster derives the 32-byte master secret from a passphrase and a
// 16-byte salt with Argon2id (memory 64 MiB, 3 iterations, parallelism 4).
// It is the expensive step: run it once per vault.
func DeriveMaster(passphrase, salt []byte) ([]byte, error) {
	if len(salt) != SaltSize {
		return nil, fmt.Errorf("apertomemory: salt is %d bytes, want %d", len(salt), SaltSize)
	}
	testingOnlyArgon2Calls.Add(1)
	return argon2.IDKey(passphrase, salt, Argon2Time, Argon2MemKiB, Argon2Threads, 32), nil
}

// Identity is the owner's long-term key pair set, derived from the master
// secret. It holds private keys: never log or serialise it.
type Identity struct {
	sign   ed25519.PrivateKey
	ka     *ecdh.PrivateKey
	kaPub  [32]byte
	signID KeyID
}

// NewIdentity derives the signing (Ed25519) and key-agreement (X25519)
// keys from a 32-byte master secret with HKDF-SHA256.
func NewIdentity(master []byte) (*Identity, error) {
	if len(master) != 32 {
		return nil, fmt.Errorf("apertomemory: master secret is %d bytes, want 32", len(master))
	}
	ss, err := hkdf.Key(sha256.New, master, nil, infoSign, 32)
	if err != nil {
		return nil, err
	}
	ks, err := hkdf.Key(sha256.New, master, nil, infoKA, 32)
	if err != nil {
		return nil, err
	}
	ka, err := ecdh.X25519().NewPrivateKey(ks)
	if err != nil {
		return nil, err
	}
	id := &Identity{sign: ed25519.NewKeyFromSeed(ss), ka: ka}
	copy(id.kaPub[:], ka.PublicKey().Bytes())
	id.signID = KeyIDOf(id.SignPub())
	return id, nil
}

// DeriveIdentity runs [DeriveMaster] then [NewIdentity].
func DeriveIdentity(passphrase, salt []byte) (*Identity, error) {
	m, err := DeriveMaster(passphrase, salt)
	if err != nil {
		return nil, err
	}
	return NewIdentity(m)
}

// SignPub is the owner's Ed25519 public key (the container's sign_pub).
func (id *Identity) SignPub() ed25519.PublicKey {
	return id.sign.Public().(ed25519.PublicKey)
}

// KAPub is the owner's X25519 public key (the container's ka_pub).
func (id *Identity) KAPub() [32]byte { return id.kaPub }

// KeyID is the owner's author key identifier.
func (id *Identity) KeyID() KeyID { return id.signID }

// SigningKey is the owner's Ed25519 private key, for sealing.
func (id *Identity) SigningKey() ed25519.PrivateKey { return id.sign }

var errKeyWrap = errors.New("key unwrap failed")

// WrapKEK wraps a 32-byte scope KEK towards the owner's X25519 key: an
// ephemeral X25519 key agreement, HKDF-SHA256 with info
// "apertomemory/v1/kek-wrap" || scope_id, then AES-256 key wrap (RFC 3394).
// ephSeed is the ephemeral private key (32 random bytes; fixed only in test
// vectors). It returns the 40-byte wrap and the ephemeral public key.
func WrapKEK(kek []byte, kaPub [32]byte, scope ScopeID, ephSeed []byte) (wrapped []byte, ephPub [32]byte, err error) {
	if len(kek) != 32 {
		return nil, ephPub, fmt.Errorf("apertomemory: KEK is %d bytes, want 32", len(kek))
	}
	eph, err := ecdh.X25519().NewPrivateKey(ephSeed)
	if err != nil {
		return nil, ephPub, err
	}
	peer, err := ecdh.X25519().NewPublicKey(kaPub[:])
	if err != nil {
		return nil, ephPub, err
	}
	shared, err := eph.ECDH(peer)
	if err != nil {
		return nil, ephPub, err
	}
	wk, err := hkdf.Key(sha256.New, shared, nil, infoKEKWrap+string(scope[:]), 32)
	if err != nil {
		return nil, ephPub, err
	}
	wrapped, err = aesWrap(wk, kek)
	copy(ephPub[:], eph.PublicKey().Bytes())
	return wrapped, ephPub, err
}

// UnwrapKEK reverses [WrapKEK] with the owner's identity. It fails when the
// wrap, the ephemeral key or the scope_id was altered: the scope_id is in
// the HKDF info, so a wrapped KEK cannot be moved to another scope.
func (id *Identity) UnwrapKEK(wrapped []byte, ephPub [32]byte, scope ScopeID) ([]byte, error) {
	peer, err := ecdh.X25519().NewPublicKey(ephPub[:])
	if err != nil {
		return nil, err
	}
	shared, err := id.ka.ECDH(peer)
	if err != nil {
		return nil, err
	}
	wk, err := hkdf.Key(sha256.New, shared, nil, infoKEKWrap+string(scope[:]), 32)
	if err != nil {
		return nil, err
	}
	kek, err := aesUnwrap(wk, wrapped)
	if err != nil || len(kek) != 32 {
		return nil, errKeyWrap
	}
	return kek, nil
}

// WrapDEK wraps a 32-byte object DEK under a scope KEK (AES-256 key wrap).
func WrapDEK(dek, kek []byte) ([]byte, error) {
	if len(dek) != 32 || len(kek) != 32 {
		return nil, errors.New("apertomemory: DEK and KEK must be 32 bytes")
	}
	return aesWrap(kek, dek)
}

// UnwrapDEK reverses [WrapDEK]; it fails unless the wrap was made under
// this KEK and unaltered.
func UnwrapDEK(wrapped, kek []byte) ([]byte, error) {
	if len(kek) != 32 {
		return nil, errKeyWrap
	}
	dek, err := aesUnwrap(kek, wrapped)
	if err != nil || len(dek) != 32 {
		return nil, errKeyWrap
	}
	return dek, nil
}

// aesWrap and aesUnwrap are RFC 3394 key wrap with the default IV, from
// go-jose's cipher package (a maintained implementation, also used for
// JWE's A256KW).
func aesWrap(kek, key []byte) ([]byte, error) {
	b, err := aes.NewCipher(kek)
	if err != nil {
		return nil, err
	}
	return josecipher.KeyWrap(b, key)
}

func aesUnwrap(kek, wrapped []byte) ([]byte, error) {
	if len(wrapped) != 40 {
		return nil, errKeyWrap
	}
	b, err := aes.NewCipher(kek)
	if err != nil {
		return nil, err
	}
	out, err := josecipher.KeyUnwrap(b, wrapped)
	if err != nil {
		return nil, errKeyWrap
	}
	return out, nil
}
