package receipts

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/edwards25519"
)

// Keys. Every signer in this profile uses Ed25519 (RFC 8032).
//
// A public key is written either as 64 lowercase hex digits of its raw
// 32-byte encoding (the trust file's public_key_hex) or as the unpadded
// base64url of its DER SubjectPublicKeyInfo (the interop adapter pin's
// public_key_spki_b64u, "MCowBQYDK2VwAyEA" followed by the key). Private keys
// live in PEM files holding a PKCS#8 PrivateKeyInfo ("-----BEGIN PRIVATE
// KEY-----"), the form OpenSSL and most tooling read and write; the files are
// created with mode 0600 and refused when group or others can read them.
//
// A key is checked when it is loaded into a pin, a registry or a verifier:
// crypto/ed25519.Verify accepts some signatures under small-order and
// non-canonically encoded keys (see the C2SP CCTV Ed25519 vectors), and a kid
// computed over a non-canonical encoding would name one key two ways, so such
// keys are refused outright with CodeKeyInvalid.

// KeyID returns the ECCR-style key identifier of pub: "sha256:" followed by
// the lowercase hex SHA-256 of the raw 32-byte key.
func KeyID(pub ed25519.PublicKey) string {
	h := sha256.Sum256(pub)
	return "sha256:" + hex.EncodeToString(h[:])
}

// CheckPublicKey refuses a public key that is not 32 bytes, not a canonical
// encoding of a curve point, of small order, or not in the prime-order
// subgroup. Every key made by ed25519.GenerateKey passes.
func CheckPublicKey(pub []byte) error {
	if len(pub) != ed25519.PublicKeySize {
		return refuse(CodeKeyInvalid, "", "an Ed25519 public key is 32 bytes, not %d", len(pub))
	}
	p, err := new(edwards25519.Point).SetBytes(pub)
	if err != nil {
		return refuse(CodeKeyInvalid, "", "not the encoding of a point on the curve")
	}
	if !bytes.Equal(p.Bytes(), pub) {
		return refuse(CodeKeyInvalid, "", "non-canonical point encoding")
	}
	identity := edwards25519.NewIdentityPoint()
	if new(edwards25519.Point).MultByCofactor(p).Equal(identity) == 1 {
		return refuse(CodeKeyInvalid, "", "weak key: the point has small order")
	}
	// [L]P = O exactly when P has no small-order component. The scalar
	// L-1 is representable, so compute [L-1]P + P.
	minusOne := edwards25519.NewScalar().Subtract(edwards25519.NewScalar(), scalarOne)
	q := new(edwards25519.Point).ScalarMult(minusOne, p)
	if q.Add(q, p).Equal(identity) != 1 {
		return refuse(CodeKeyInvalid, "", "weak key: the point is not in the prime-order subgroup")
	}
	return nil
}

var scalarOne = func() *edwards25519.Scalar {
	var b [32]byte
	b[0] = 1
	s, err := edwards25519.NewScalar().SetCanonicalBytes(b[:])
	if err != nil {
		panic(err)
	}
	return s
}()

// spkiPrefix is the DER SubjectPublicKeyInfo header for an Ed25519 key
// (RFC 8410).
var spkiPrefix = []byte{0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00}

// ParsePublicKey reads a public key written as 64 hex digits or as unpadded
// base64url SPKI, and checks it with CheckPublicKey.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	var raw []byte
	switch {
	case len(s) == 64:
		b, err := hex.DecodeString(s)
		if err != nil || strings.ToLower(s) != s {
			return nil, refuse(CodeKeyInvalid, "", "a hex public key is 64 lowercase hex digits")
		}
		raw = b
	default:
		der, ok := DecodeB64u(s)
		if !ok || len(der) != len(spkiPrefix)+ed25519.PublicKeySize || !bytes.HasPrefix(der, spkiPrefix) {
			return nil, refuse(CodeKeyInvalid, "", "a public key is 64 hex digits or the unpadded base64url of an Ed25519 SubjectPublicKeyInfo")
		}
		raw = der[len(spkiPrefix):]
	}
	if err := CheckPublicKey(raw); err != nil {
		return nil, err
	}
	return ed25519.PublicKey(raw), nil
}

// PublicKeyHex writes pub as 64 lowercase hex digits.
func PublicKeyHex(pub ed25519.PublicKey) string { return hex.EncodeToString(pub) }

// PublicKeySPKI writes pub as the unpadded base64url of its DER
// SubjectPublicKeyInfo.
func PublicKeySPKI(pub ed25519.PublicKey) string {
	return EncodeB64u(append(append([]byte{}, spkiPrefix...), pub...))
}

// GenerateKey returns a new Ed25519 key pair from crypto/rand.
func GenerateKey() (ed25519.PublicKey, ed25519.PrivateKey, error) {
	return ed25519.GenerateKey(rand.Reader)
}

// ErrKeyFilePermissions is returned when a private key file is readable or
// writable by group or others.
var ErrKeyFilePermissions = errors.New("private key file is accessible to group or others (want mode 0600)")

// MarshalPrivateKey encodes priv as a PEM PKCS#8 block.
func MarshalPrivateKey(priv ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("couldn't encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParsePrivateKey decodes a PEM PKCS#8 Ed25519 private key.
func ParsePrivateKey(data []byte) (ed25519.PrivateKey, error) {
	block, rest := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" || len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New("not a PEM \"PRIVATE KEY\" file")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("couldn't parse PKCS#8 private key: %w", err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("private key is %T, not Ed25519", k)
	}
	return priv, nil
}

// WritePrivateKeyFile creates path with mode 0600 holding priv, refusing to
// overwrite an existing file, and syncs it to disk.
func WritePrivateKeyFile(path string, priv ed25519.PrivateKey) error {
	data, err := MarshalPrivateKey(priv)
	if err != nil {
		return err
	}
	return WriteSecretFile(path, data)
}

// WriteSecretFile creates path with mode 0600 holding data, refusing to
// overwrite an existing file, and syncs the file and its directory.
func WriteSecretFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("couldn't create key file: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("couldn't write key file: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("couldn't sync key file: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return fmt.Errorf("couldn't write key file: %w", err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// ReadSecretFile reads a file holding a secret, refusing it with
// ErrKeyFilePermissions when group or others have any access to it.
func ReadSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s has mode %04o: %w", path, fi.Mode().Perm(), ErrKeyFilePermissions)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", path, fs.ErrInvalid)
	}
	const maxKeyFile = 64 << 10
	buf := make([]byte, maxKeyFile+1)
	n, err := readFull(f, buf)
	if err != nil {
		return nil, err
	}
	if n > maxKeyFile {
		return nil, fmt.Errorf("%s is larger than a key file can be", path)
	}
	return buf[:n], nil
}

func readFull(f *os.File, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := f.Read(buf[n:])
		n += m
		if err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
	}
	return n, nil
}

// ReadPrivateKeyFile reads a PEM PKCS#8 Ed25519 private key file written by
// WritePrivateKeyFile, refusing it when group or others can access it.
func ReadPrivateKeyFile(path string) (ed25519.PrivateKey, error) {
	data, err := ReadSecretFile(path)
	if err != nil {
		return nil, err
	}
	priv, err := ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return priv, nil
}
