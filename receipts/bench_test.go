package receipts

import (
	"bytes"
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
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
	in := draftEnvelope(b)
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

// BenchmarkVerifyProjectionVsBare measures, in one run and interleaved so
// that both see the same machine, receipt-level verification of the
// interop record (strict parse of its canonical bytes, pin lookup, window
// and revocation checks, Ed25519) and a bare ed25519.Verify over the same
// signed bytes. It reports both costs and their ratio (x-bare); the target
// is at most 1.5.
func BenchmarkVerifyProjectionVsBare(b *testing.B) {
	v := loadEmilia(b)
	r0, _ := ParseProjectionRecord(v.Projection.Record)
	in := r0.Canonical()
	pins, _ := ParseAdapterPins(v.AdapterPin)
	now, _ := ParseTimestamp(v.VerificationPolicy.VerificationTime)
	signed, sig := r0.SignedBytes(), r0.Proof.Signature
	var full, bare time.Duration
	for b.Loop() {
		t0 := time.Now()
		r, err := ParseProjectionRecord(in)
		if err != nil {
			b.Fatal(err)
		}
		if err := VerifyProjectionSignature(r, pins, now); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if !ed25519.Verify(pins[0].PublicKey, signed, sig) {
			b.Fatal("verify")
		}
		full += t1.Sub(t0)
		bare += time.Since(t1)
	}
	b.ReportMetric(float64(full.Nanoseconds())/float64(b.N), "receipt-ns/op")
	b.ReportMetric(float64(bare.Nanoseconds())/float64(b.N), "bare-ns/op")
	b.ReportMetric(float64(full)/float64(bare), "x-bare")
}

// BenchmarkCanonicalize compares the strict reader and canonical encoder
// of the hot path with the reference JCS library, both from the raw text of
// the interop record to its canonical bytes.
func BenchmarkCanonicalize(b *testing.B) {
	v := loadEmilia(b)
	b.Run("memtrail", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Canonicalize(v.Projection.Record); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gowebpki-jcs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jcs.Transform(v.Projection.Record); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkVerifyCompaction(b *testing.B) {
	in := draftEnvelope(b)
	pub := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x2a}, 32)).Public().(ed25519.PublicKey)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		c, err := ParseCompaction(in)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.VerifySignatureWithKey(pub); err != nil {
			b.Fatal(err)
		}
	}
}

func benchTombstone(b *testing.B) ([]byte, ed25519.PublicKey) {
	pub, priv, _ := GenerateKey()
	ts, err := SignTombstone(&Tombstone{TombstoneID: "urn:t:bench", ItemDigest: "sha256:" + strings.Repeat("ab", 32), PurgedAt: 1796083200, Reason: "regulatory_erasure"}, priv)
	if err != nil {
		b.Fatal(err)
	}
	return ts.Canonical(), pub
}

func BenchmarkParseTombstone(b *testing.B) {
	in, _ := benchTombstone(b)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseTombstone(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyTombstone(b *testing.B) {
	in, pub := benchTombstone(b)
	b.ReportAllocs()
	for b.Loop() {
		ts, err := ParseTombstone(in)
		if err != nil {
			b.Fatal(err)
		}
		if err := ts.VerifySignatureWithKey(pub); err != nil {
			b.Fatal(err)
		}
	}
}
