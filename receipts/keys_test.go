package receipts

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestCCTVKeys: keys flagged low order, non-canonical or with a low-order
// component are refused when loaded; all others load.
func TestCCTVKeys(t *testing.T) {
	var vectors []struct {
		Number int      `json:"number"`
		Key    string   `json:"key"`
		Sig    string   `json:"sig"`
		Msg    string   `json:"msg"`
		Flags  []string `json:"flags"`
	}
	if err := json.Unmarshal(readVector(t, "cctv-ed25519/ed25519vectors.json"), &vectors); err != nil {
		t.Fatal(err)
	}
	refused, loaded, sigsAccepted := 0, 0, 0
	for _, v := range vectors {
		key, _ := hex.DecodeString(v.Key)
		weak := slices.Contains(v.Flags, "low_order_A") || slices.Contains(v.Flags, "non_canonical_A") || slices.Contains(v.Flags, "low_order_component_A")
		err := CheckPublicKey(key)
		if weak != (err != nil) {
			t.Errorf("vector %d flags %v: CheckPublicKey = %v", v.Number, v.Flags, err)
		}
		if _, perr := ParsePublicKey(v.Key); (perr != nil) != (err != nil) {
			t.Errorf("vector %d: ParsePublicKey and CheckPublicKey disagree", v.Number)
		}
		if err != nil {
			refused++
			continue
		}
		loaded++
		sig, _ := hex.DecodeString(v.Sig)
		if ed25519.Verify(key, []byte(v.Msg), sig) {
			sigsAccepted++
			if slices.Contains(v.Flags, "non_canonical_R") {
				t.Errorf("vector %d: non-canonical R accepted", v.Number)
			}
		}
	}
	if refused == 0 || loaded == 0 {
		t.Errorf("refused %d, loaded %d: the vectors should exercise both", refused, loaded)
	}
	t.Logf("CCTV: %d keys refused, %d loaded, %d signatures accepted under loaded keys", refused, loaded, sigsAccepted)
}

// TestWycheproof: our verification path gives every expected result, and
// every key in the file is a well-formed key.
func TestWycheproof(t *testing.T) {
	var file struct {
		TestGroups []struct {
			PublicKey struct{ Pk string } `json:"publicKey"`
			Tests     []struct {
				TcID   int    `json:"tcId"`
				Msg    string `json:"msg"`
				Sig    string `json:"sig"`
				Result string `json:"result"`
			} `json:"tests"`
		} `json:"testGroups"`
	}
	if err := json.Unmarshal(readVector(t, "wycheproof/ed25519_test.json"), &file); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range file.TestGroups {
		pub, err := ParsePublicKey(g.PublicKey.Pk)
		if err != nil {
			t.Errorf("key %s refused: %v", g.PublicKey.Pk, err)
			continue
		}
		for _, tc := range g.Tests {
			n++
			msg, _ := hex.DecodeString(tc.Msg)
			sig, _ := hex.DecodeString(tc.Sig)
			s := &Signature{KID: KeyID(pub), Sig: sig}
			err := verifyWithKey(pub, s, msg)
			if (tc.Result == "valid") != (err == nil) {
				t.Errorf("tcId %d: result %s, verify = %v", tc.TcID, tc.Result, err)
			}
		}
	}
	if n != 151 {
		t.Errorf("ran %d Wycheproof tests, want 151", n)
	}
}

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
