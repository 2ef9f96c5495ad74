package log

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
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
