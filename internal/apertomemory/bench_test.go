package apertomemory

import (
	"testing"
)

// BenchmarkOpenObject opens vector 003 (257 bytes) with its DEK: AEAD,
// COSE parsing, one Ed25519 verification, payload decoding. No Argon2id:
// that runs once per vault.
func BenchmarkOpenObject(b *testing.B) {
	v := loadVectors(b).Vectors["003-sealed-object-v2"]
	sealed := hexField(b, v.Expect, "sealed_object")
	dek := hexField(b, v.Input, "dek")
	kr, _ := NewKeyring(vectorOwner(b).SignPub())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := OpenObject(sealed, dek, kr, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVault10k parses a container of 10,000 objects, opens it
// (scope KEKs, then each object's DEK unwrap, AEAD, signature and payload)
// and iterates the results. "identity" starts from an identity already
// derived; "passphrase" includes the one Argon2id run of Container.Open.
func BenchmarkVault10k(b *testing.B) {
	w := NewWriterWithIdentity(vectorOwner(b), ownerSalt)
	for _, s := range []string{"personal", "work"} {
		w.AddScope(s)
	}
	for i := range 10_000 {
		m := mem("a memory of ordinary length, about as long as a preference or a fact tends to be")
		m.Tags = []string{"bench"}
		scope := "work"
		if i%2 == 0 {
			scope = "personal"
		}
		if _, err := w.Seal(scope, m); err != nil {
			b.Fatal(err)
		}
	}
	data := w.Bytes()
	b.Logf("container: %d bytes", len(data))
	run := func(b *testing.B, open func(*Container) (*Vault, error)) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			c, err := ParseContainer(data)
			if err != nil {
				b.Fatal(err)
			}
			v, err := open(c)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for _, o := range v.Opened() {
				if o.Trust == TrustSelf {
					n++
				}
			}
			if n != 10_000 {
				b.Fatalf("%d self objects", n)
			}
		}
	}
	b.Run("identity", func(b *testing.B) {
		run(b, func(c *Container) (*Vault, error) { return c.OpenWithIdentity(w.Identity(), nil) })
	})
	b.Run("passphrase", func(b *testing.B) {
		run(b, func(c *Container) (*Vault, error) { return c.Open([]byte(ownerPass), nil) })
	})
}

// BenchmarkDeriveIdentity is the once-per-vault cost: Argon2id (64 MiB,
// t=3, p=4) and the two HKDF derivations.
func BenchmarkDeriveIdentity(b *testing.B) {
	for b.Loop() {
		if _, err := DeriveIdentity([]byte(ownerPass), ownerSalt[:]); err != nil {
			b.Fatal(err)
		}
	}
}
