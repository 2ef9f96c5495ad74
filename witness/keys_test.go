package witness_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memtrail/memtrail/witness"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

func TestGenerateKey(t *testing.T) {
	skey, vkey, err := witness.GenerateKey("witness.example.com/w1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(skey, "PRIVATE+KEY+witness.example.com/w1+") || !strings.HasPrefix(vkey, "witness.example.com/w1+") {
		t.Fatalf("GenerateKey = %q, %q", skey, vkey)
	}
	// The key ID is the same in both, and the vkey has type 0x04.
	if strings.SplitN(skey, "+", 5)[3] != strings.SplitN(vkey, "+", 3)[1] {
		t.Fatalf("key IDs differ: %q, %q", skey, vkey)
	}
	if k, err := base64.StdEncoding.DecodeString(strings.SplitN(vkey, "+", 3)[2]); err != nil || len(k) != 33 || k[0] != 0x04 {
		t.Fatalf("vkey %q is not type 0x04 and a 32-byte key", vkey)
	}
	// The skey is refused by a plain note signer, so it can only cosign.
	if _, err := note.NewSigner(skey); err == nil {
		t.Fatal("note.NewSigner accepted a witness key")
	}
	signer, err := fnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := fnote.NewVerifierForCosignatureV1(vkey)
	if err != nil {
		t.Fatal(err)
	}
	if signer.KeyHash() != v.KeyHash() || signer.Name() != v.Name() {
		t.Fatalf("signer %s/%08x, verifier %s/%08x", signer.Name(), signer.KeyHash(), v.Name(), v.KeyHash())
	}
	signed, err := note.Sign(&note.Note{Text: "example.com/log\n1\n" + strings.Repeat("A", 43) + "=\n"}, signer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(signed, note.VerifierList(v)); err != nil {
		t.Fatalf("cosignature does not verify: %v", err)
	}
	// Two keys differ.
	skey2, _, _ := witness.GenerateKey("witness.example.com/w1")
	if skey2 == skey {
		t.Fatal("GenerateKey returned the same key twice")
	}
	for _, name := range []string{"", "a b", "a+b", "a\tb", "a\nb", "\xff", strings.Repeat("x", 256)} {
		if _, _, err := witness.GenerateKey(name); err == nil {
			t.Errorf("GenerateKey(%q) succeeded", name)
		}
	}
}

func TestNewKeys(t *testing.T) {
	ctx := context.Background()
	skey, vkey, _ := witness.GenerateKey("witness.example.com/w1")
	w, err := witness.New(ctx, witness.Config{Key: skey, Store: newMemStore(), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if w.VerifierKey() != vkey || w.Name() != "witness.example.com/w1" {
		t.Fatalf("VerifierKey, Name = %q, %q, want %q", w.VerifierKey(), w.Name(), vkey)
	}

	// A plain Ed25519 note key works too, and cosigns under the 0x04 vkey.
	plain, plainV, err := note.GenerateKey(rand.Reader, "witness.example.com/w2")
	if err != nil {
		t.Fatal(err)
	}
	l := newSimLog(t, testOrigin)
	l.GrowTo(5)
	w, err = witness.New(ctx, witness.Config{Key: plain, Store: newMemStore(), Logs: []witness.Log{l.WitnessLog()}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	want, err := fnote.VKeyToCosignatureV1(plainV)
	if err != nil {
		t.Fatal(err)
	}
	if w.VerifierKey() != want {
		t.Fatalf("VerifierKey of a plain key = %q, want %q", w.VerifierKey(), want)
	}
	line, err := w.AddCheckpoint(ctx, l.Request(0, 5))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := fnote.NewVerifierForCosignatureV1(want)
	checkCosignature(t, v, l.Checkpoint(5), line, time.Now())

	// Damaged keys are refused.
	parts := strings.SplitN(skey, "+", 5)
	badID := strings.Join([]string{parts[0], parts[1], parts[2], "00000000", parts[4]}, "+")
	for _, bad := range []string{
		"", skey + "x", strings.TrimPrefix(skey, "PRIVATE+"), badID,
		strings.Replace(skey, "witness.example.com/w1", "witness.example.com/w9", 1),
		"PRIVATE+KEY+x+00000000+" + strings.Repeat("A", 44),
	} {
		if _, err := witness.New(ctx, witness.Config{Key: bad, Store: newMemStore()}); err == nil {
			t.Errorf("New accepted key %q", bad)
		}
	}
	if _, err := witness.New(ctx, witness.Config{Key: skey}); err == nil {
		t.Error("New without a store succeeded")
	}
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	skey, _, _ := witness.GenerateKey("witness.example.com/w1")
	path := filepath.Join(dir, "witness.key")
	if err := witness.WriteKeyFile(path, skey); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode = %04o, want 0600", fi.Mode().Perm())
	}
	if err := witness.WriteKeyFile(path, skey); err == nil {
		t.Fatal("WriteKeyFile overwrote an existing key")
	}
	got, err := witness.ReadKeyFile(path)
	if err != nil || got != skey {
		t.Fatalf("ReadKeyFile = %q, %v", got, err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o644, 0o660, 0o602, 0o620, 0o610, 0o601} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := witness.ReadKeyFile(path); !errors.Is(err, witness.ErrKeyFilePermissions) {
			t.Errorf("ReadKeyFile of a %04o file = %v, want ErrKeyFilePermissions", mode, err)
		} else if strings.Contains(err.Error(), skey[20:]) {
			t.Errorf("error %q reveals the key", err)
		}
	}
	os.Chmod(path, 0o400)
	if _, err := witness.ReadKeyFile(path); err != nil {
		t.Errorf("ReadKeyFile of a 0400 file = %v", err)
	}
	if _, err := witness.ReadKeyFile(dir); err == nil {
		t.Error("ReadKeyFile of a directory succeeded")
	}
	if _, err := witness.ReadKeyFile(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadKeyFile of a missing file = %v, want ErrNotExist", err)
	}
	two := filepath.Join(dir, "two")
	os.WriteFile(two, []byte(skey+"\n"+skey+"\n"), 0o600)
	if _, err := witness.ReadKeyFile(two); err == nil {
		t.Error("ReadKeyFile of two lines succeeded")
	}
	big := filepath.Join(dir, "big")
	os.WriteFile(big, make([]byte, 5000), 0o600)
	if _, err := witness.ReadKeyFile(big); err == nil {
		t.Error("ReadKeyFile of a large file succeeded")
	}
}
