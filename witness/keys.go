package witness

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Signature type bytes of the signed-note key encodings.
const (
	algEd25519     = 0x01 // plain Ed25519 note signatures
	algCosignature = 0x04 // Ed25519 cosignature/v1 (c2sp.org/tlog-cosignature)
)

// maxKeyFileSize bounds what ReadKeyFile reads: a key is one short line.
const maxKeyFileSize = 4 << 10

// GenerateKey returns a new Ed25519 witness key named name.
//
// skey is the private key, to be kept secret, in the signed-note encoding
// with signature type 0x04:
//
//	PRIVATE+KEY+<name>+<key ID>+base64(0x04 || 32-byte Ed25519 seed)
//
// The 0x04 type byte keeps the key from being loaded by a plain signed-note
// signer (which accepts only 0x01), so it can only ever produce
// cosignatures. vkey is the matching cosignature/v1 verifier key,
//
//	<name>+<key ID>+base64(0x04 || 32-byte Ed25519 public key)
//
// where the key ID is the hex of SHA-256(<name> || "\n" || 0x04 || public
// key)[:4]. The name should be a schema-less URL that identifies the
// witness, such as "witness.example.com/w1"; it must be non-empty valid
// UTF-8 with no spaces and no '+', at most 255 bytes.
func GenerateKey(name string) (skey, vkey string, err error) {
	if !validKeyName(name) {
		return "", "", fmt.Errorf("witness: invalid key name %q: it must be non-empty UTF-8 without spaces or '+', at most 255 bytes", name)
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("witness: couldn't generate key: %w", err)
	}
	id := keyID(name, algCosignature, pub)
	skey = fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", name, id,
		base64.StdEncoding.EncodeToString(append([]byte{algCosignature}, priv.Seed()...)))
	return skey, formatVerifierKey(name, pub), nil
}

func formatVerifierKey(name string, pub ed25519.PublicKey) string {
	return fmt.Sprintf("%s+%08x+%s", name, keyID(name, algCosignature, pub),
		base64.StdEncoding.EncodeToString(append([]byte{algCosignature}, pub...)))
}

// keyID is the signed-note key ID: the first four bytes, big-endian, of
// SHA-256(name || "\n" || alg || public key).
func keyID(name string, alg byte, pub ed25519.PublicKey) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{'\n', alg})
	h.Write(pub)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

func validKeyName(name string) bool {
	return name != "" && len(name) <= 255 && utf8.ValidString(name) &&
		!strings.ContainsRune(name, '+') && strings.IndexFunc(name, unicode.IsSpace) < 0
}

var errMalformedKey = errors.New("witness: malformed private key")

// parseKey decodes a witness private key, checking every field including
// the key ID, so that a damaged key file is refused rather than producing
// signatures under an identity nobody expects. Both the 0x04 encoding made
// by GenerateKey and a plain 0x01 Ed25519 note key are accepted.
func parseKey(skey string) (name string, priv ed25519.PrivateKey, err error) {
	rest, ok := strings.CutPrefix(skey, "PRIVATE+KEY+")
	if !ok {
		return "", nil, errMalformedKey
	}
	name, rest, _ = strings.Cut(rest, "+")
	id16, key64, _ := strings.Cut(rest, "+")
	id, err1 := strconv.ParseUint(id16, 16, 32)
	key, err2 := base64.StdEncoding.DecodeString(key64)
	if !validKeyName(name) || len(id16) != 8 || err1 != nil || err2 != nil ||
		len(key) != 1+ed25519.SeedSize || (key[0] != algEd25519 && key[0] != algCosignature) {
		return "", nil, errMalformedKey
	}
	priv = ed25519.NewKeyFromSeed(key[1:])
	if keyID(name, key[0], priv.Public().(ed25519.PublicKey)) != uint32(id) {
		return "", nil, fmt.Errorf("witness: private key %q has a key ID that does not match its key", name)
	}
	return name, priv, nil
}

// WriteKeyFile writes skey to a new file at path, readable and writable by
// its owner only (mode 0600). It fails if the file exists.
func WriteKeyFile(path, skey string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("witness: couldn't create key file: %w", err)
	}
	if _, err := io.WriteString(f, skey+"\n"); err != nil {
		f.Close()
		return fmt.Errorf("witness: couldn't write key file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("witness: couldn't write key file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("witness: couldn't write key file %s: %w", path, err)
	}
	// Make the new directory entry durable too: a witness that lost its key
	// in a power cut would come back with a new identity.
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("witness: couldn't sync the directory of %s: %w", path, err)
		}
	}
	return nil
}

// ErrKeyFilePermissions is returned by [ReadKeyFile] for a key file that
// users other than its owner can access.
var ErrKeyFilePermissions = errors.New("witness: key file is accessible by group or others")

// ReadKeyFile reads a private key written by [WriteKeyFile]. It refuses,
// with [ErrKeyFilePermissions], a file whose mode grants any permission to
// group or others, and anything that is not a regular file.
func ReadKeyFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("witness: couldn't open key file: %w", err)
	}
	defer f.Close()
	// Check the file that was opened, not the path, which could be
	// replaced in between.
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("witness: couldn't stat key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("witness: key file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("%w: %s has mode %04o, want 0600", ErrKeyFilePermissions, path, perm)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	if err != nil {
		return "", fmt.Errorf("witness: couldn't read key file: %w", err)
	}
	if len(b) > maxKeyFileSize {
		return "", fmt.Errorf("witness: key file %s is too large to be a key", path)
	}
	b = bytes.TrimSpace(b)
	if bytes.ContainsAny(b, "\r\n") {
		return "", fmt.Errorf("witness: key file %s holds more than one line", path)
	}
	return string(b), nil
}
