package receipts

import (
	"crypto/ed25519"
	"testing"
)

// Benchmarks of the ingest and audit hot path. Compare ParseAndVerify with
// BareEd25519Verify (the floor) from the same run.

func BenchmarkParseProjectionRecord(b *testing.B) {
	v := loadEmilia(b)
	in := []byte(v.Projection.Record)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseProjectionRecord(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseAndVerifyProjection(b *testing.B) {
	v := loadEmilia(b)
	r, _ := ParseProjectionRecord(v.Projection.Record)
	in := r.Canonical()
	pins, _ := ParseAdapterPins(v.AdapterPin)
	now, _ := ParseTimestamp(v.VerificationPolicy.VerificationTime)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := ParseProjectionRecord(in)
		if err != nil {
			b.Fatal(err)
		}
		if err := VerifyProjectionSignature(r, pins, now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBareEd25519Verify(b *testing.B) {
	v := loadEmilia(b)
	r, _ := ParseProjectionRecord(v.Projection.Record)
	pins, _ := ParseAdapterPins(v.AdapterPin)
	for b.Loop() {
		if !ed25519.Verify(pins[0].PublicKey, r.SignedBytes(), r.Proof.Signature) {
			b.Fatal("verify")
		}
	}
}

func BenchmarkParseCompaction(b *testing.B) {
	var vec eccrVector
	vec.Envelope = readVector(b, "eccr-draft/eccr-v1-draft-vector.json")
	full, _ := parseJSON(vec.Envelope, 100)
	env, _ := full.get("envelope")
	in := appendCanonical(nil, env)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseCompaction(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseLeaf parses a canonical record, as an audit reads leaves.
func BenchmarkParseLeaf(b *testing.B) {
	v := loadEmilia(b)
	r, _ := ParseProjectionRecord(v.Projection.Record)
	in := r.Canonical()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseReceipt(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBareEd25519VerifyParallel is the bare verification rate on every
// core: the floor for a verifying log or audit on this machine.
func BenchmarkBareEd25519VerifyParallel(b *testing.B) {
	v := loadEmilia(b)
	r, _ := ParseProjectionRecord(v.Projection.Record)
	pins, _ := ParseAdapterPins(v.AdapterPin)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !ed25519.Verify(pins[0].PublicKey, r.SignedBytes(), r.Proof.Signature) {
				b.Error("verify")
			}
		}
	})
}
