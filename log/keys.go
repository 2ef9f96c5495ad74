package log

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// GenerateLogKey returns a new Ed25519 signed-note key pair for a log whose
// origin is origin: the private key in note's "PRIVATE+KEY+…" form and the
// verifier key "origin+hash+base64".
func GenerateLogKey(origin string) (skey, vkey string, err error) {
	if !validOrigin(origin) {
		return "", "", fmt.Errorf("log: origin %q must be non-empty and contain no whitespace or '+'", origin)
	}
	skey, vkey, err = note.GenerateKey(rand.Reader, origin)
	if err != nil {
		return "", "", fmt.Errorf("log: couldn't generate key: %w", err)
	}
	return skey, vkey, nil
}

func validOrigin(origin string) bool {
	return origin != "" && !strings.ContainsAny(origin, " \t\n\r+")
}

// VerifierKey returns the verifier key of the signed-note private key skey.
func VerifierKey(skey string) (string, error) {
	// PRIVATE+KEY+<name>+<hash>+<base64(0x01 || seed)>
	parts := strings.SplitN(skey, "+", 5)
	if len(parts) != 5 || parts[0] != "PRIVATE" || parts[1] != "KEY" {
		return "", errors.New("log: malformed signing key")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != 1 {
		return "", errors.New("log: malformed signing key (want an Ed25519 signed-note key)")
	}
	pub := ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey)
	vkey, err := note.NewEd25519VerifierKey(parts[2], pub)
	if err != nil {
		return "", fmt.Errorf("log: %w", err)
	}
	return vkey, nil
}

// GenerateLogKeyFor returns a new log key pair whose origin is derived from
// host and from the key itself, so that no two logs share an origin:
//
//	<host>/memtrail/<first 16 hex digits of SHA-256(public key)>
//
// host is lowercased and kept to letters, digits, '.', '-' and '_' (other
// bytes are dropped); an empty result is "localhost". A witness knows a log
// by its origin, so two logs with one default origin would look to it like
// one log signing with a wrong key.
func GenerateLogKeyFor(host string) (skey, vkey, origin string, err error) {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return "", "", "", fmt.Errorf("log: couldn't generate key: %w", err)
	}
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	sum := sha256.Sum256(pub)
	origin = defaultHost(host) + "/memtrail/" + hex.EncodeToString(sum[:8])
	vkey, err = note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		return "", "", "", fmt.Errorf("log: %w", err)
	}
	// vkey is origin+hash+base64(0x01 || pub); the private key carries
	// the same name and hash.
	hash := strings.SplitN(vkey[len(origin)+1:], "+", 2)[0]
	skey = "PRIVATE+KEY+" + origin + "+" + hash + "+" + base64.StdEncoding.EncodeToString(append([]byte{1}, seed...))
	if _, err := note.NewSigner(skey); err != nil {
		return "", "", "", fmt.Errorf("log: generated key does not parse: %w", err)
	}
	return skey, vkey, origin, nil
}

func defaultHost(host string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(host) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_' {
			b.WriteRune(c)
		}
	}
	if b.Len() == 0 {
		return "localhost"
	}
	return b.String()
}
