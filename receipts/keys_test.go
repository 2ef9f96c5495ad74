package receipts

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestPublicKeyForms(t *testing.T) {
	pub, _, _ := GenerateKey()
	for _, s := range []string{PublicKeyHex(pub), PublicKeySPKI(pub)} {
		got, err := ParsePublicKey(s)
		if err != nil || !got.Equal(pub) {
			t.Errorf("ParsePublicKey(%s) = %x, %v", s, got, err)
		}
	}
	upper := []byte(PublicKeyHex(pub))
	for i, c := range upper {
		if c >= 'a' && c <= 'f' {
			upper[i] = c - 32
			break
		}
	}
	for _, s := range []string{string(upper), "", "zz", PublicKeySPKI(pub) + "A", PublicKeyHex(pub)[:62]} {
		if _, err := ParsePublicKey(s); ErrorCode(err) != CodeKeyInvalid {
			t.Errorf("ParsePublicKey(%q) = %v, want key_invalid", s, err)
		}
	}
}

func TestPrivateKeyFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "k.pem")
	_, priv, _ := GenerateKey()
	if err := WritePrivateKeyFile(path, priv); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %04o, want 0600", fi.Mode().Perm())
	}
	got, err := ReadPrivateKeyFile(path)
	if err != nil || !got.Equal(priv) {
		t.Fatalf("ReadPrivateKeyFile = %v", err)
	}
	if err := WritePrivateKeyFile(path, priv); err == nil {
		t.Errorf("existing key file overwritten")
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o660, 0o644} {
		os.Chmod(path, mode)
		if _, err := ReadPrivateKeyFile(path); !errors.Is(err, ErrKeyFilePermissions) {
			t.Errorf("mode %04o: %v, want ErrKeyFilePermissions", mode, err)
		}
	}
	os.Chmod(path, 0o600)
	os.WriteFile(filepath.Join(dir, "bad.pem"), []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o600)
	if _, err := ReadPrivateKeyFile(filepath.Join(dir, "bad.pem")); err == nil {
		t.Errorf("garbage key accepted")
	}
}

func TestTrustFile(t *testing.T) {
	fx := loadFixture(t)
	cpub, _, _ := GenerateKey()
	ipub, _, _ := GenerateKey()
	tr := &Trust{
		Adapters:   fx.pins,
		Compactors: Keyring{KeyID(cpub): {Name: "compactor", PublicKey: cpub, KID: KeyID(cpub), ValidFrom: fx.now}},
		Issuers:    Keyring{KeyID(ipub): {PublicKey: ipub, KID: KeyID(ipub), ValidFrom: fx.now}},
		Freshness:  Freshness{MaxProjectionAge: 120e9, MaxTrustAge: 60e9, MaxClockSkew: 5e9},
		Lattice:    DefaultLattice,
	}
	data := MarshalTrust(tr)
	got, err := ParseTrust(data)
	if err != nil {
		t.Fatalf("ParseTrust(MarshalTrust) = %v\n%s", err, data)
	}
	if len(got.Adapters) != 1 || len(got.Compactors) != 1 || got.Compactors[KeyID(cpub)].Name != "compactor" || got.Freshness != tr.Freshness {
		t.Errorf("round trip = %+v", got)
	}
	min, err := ParseTrust([]byte(`{"adapters":[],"compactors":[],"issuers":[]}`))
	if err != nil || min.Freshness != DefaultFreshness || min.Lattice.Top() != "HIGHLY_CONFIDENTIAL" {
		t.Errorf("minimal trust file = %+v, %v", min, err)
	}
	bad := map[string]string{
		"unknown member":  `{"adapters":[],"compactors":[],"issuers":[],"admins":[]}`,
		"missing issuers": `{"adapters":[],"compactors":[]}`,
		"weak key":        `{"adapters":[],"compactors":[{"public_key_hex":"0000000000000000000000000000000000000000000000000000000000000000","valid_from":"2026-01-01T00:00:00Z","valid_to":null,"revoked_at":null}],"issuers":[]}`,
		"dup lattice":     `{"adapters":[],"compactors":[],"issuers":[],"sensitivity_lattice":["A","A"]}`,
		"bad lattice":     `{"adapters":[],"compactors":[],"issuers":[],"sensitivity_lattice":["low"]}`,
		"negative age":    `{"adapters":[],"compactors":[],"issuers":[],"freshness":{"max_trust_age_sec":-1}}`,
		"unknown fresh":   `{"adapters":[],"compactors":[],"issuers":[],"freshness":{"max_age":1}}`,
	}
	for name, in := range bad {
		if _, err := ParseTrust([]byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
