package receipts

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
)

// Fuzz targets for every parser of outside bytes in this package. Each
// checks, beyond "no panic": canonical bytes are a fixed point (parse →
// canonical → parse gives the same canonical bytes), and no mutation of a
// signed vector is both accepted and different from the original.

func addJSONSeeds(f *testing.F) {
	for _, glob := range []string{"jcs-cyberphone/input/*.json", "trace-spec-jcs-ed25519/0*.json", "eccr-draft/*.json", "emilia-amem/*.json", "apertomemory/*.json", "agentrust-telemetry-evidence-chain/fixtures/*/*.json"} {
		files, _ := filepath.Glob(filepath.Join(vectorsDir, glob))
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil && len(b) < 64<<10 {
				f.Add(b)
			}
		}
	}
	for _, s := range []string{`{"a":1,"b":2}`, `{"b":1,"a":2}`, `{"a":"\u001f","b":"\u0020","c":"\/","d":"\u001F","e":"\n","f":"\u000a"}`, `{"a":{"y":1,"x":2}}`, `{"only":true}`, `{"a":1,"a":2}`, `{"a":"\ud800"}`, `[1e1000]`, `-0`, `{"a":9007199254740993}`, "\"\xff\"", `{"\u00e9":"\ud83d\ude00"}`} {
		f.Add([]byte(s))
	}
}

func FuzzCanonical(f *testing.F) {
	addJSONSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		v, err := parseJSON(in, 1<<12)
		if err != nil {
			return
		}
		got := appendCanonical(nil, &v)
		want, err := jcs.Transform(in)
		if err != nil {
			t.Fatalf("strict reader accepted %q but the reference JCS refused it: %v", in, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("canonical(%q) = %q, reference %q", in, got, want)
		}
		// The parser's claim that an input is already canonical must hold
		// exactly: then the input bytes serve as the canonical bytes.
		doc, err := parseDocument(in, 1<<12, 0)
		if err != nil {
			t.Fatalf("parseDocument refused what parseJSON accepted: %v", err)
		}
		if doc.canonical != bytes.Equal(in, got) {
			t.Fatalf("canonical = %v for %q (JCS %q)", doc.canonical, in, got)
		}
		if doc.canonical && doc.kind == kindObject {
			for _, omit := range doc.members {
				full, partial := canonicalPair(doc, &doc.value, "P", omit.name, 0)
				wantFull, wantPartial := appendCanonicalPair(nil, []byte("P"), doc.members, omit.name)
				if !bytes.Equal(full, wantFull) || !bytes.Equal(partial, wantPartial) {
					t.Fatalf("canonicalPair without %q = %q, %q; want %q, %q", omit.name, full, partial, wantFull, wantPartial)
				}
			}
		}
		v2, err := parseJSON(got, 1<<12)
		if err != nil {
			t.Fatalf("canonical output %q does not re-parse: %v", got, err)
		}
		if again := appendCanonical(nil, &v2); !bytes.Equal(again, got) {
			t.Fatalf("canonical form is not a fixed point: %q then %q", got, again)
		}
	})
}

func FuzzParseProjectionRecord(f *testing.F) {
	v := loadEmilia(f)
	f.Add([]byte(v.Projection.Record))
	orig, err := ParseProjectionRecord(v.Projection.Record)
	if err != nil {
		f.Fatal(err)
	}
	pins, _ := ParseAdapterPins(v.AdapterPin)
	now, _ := ParseTimestamp(v.VerificationPolicy.VerificationTime)
	f.Add(orig.Canonical())
	f.Add(bytes.Replace(orig.Canonical(), []byte(`"position":1`), []byte(`"position":0`), 1))
	// Draft -01 source results: every combination on the first entry (28
	// of the 36 refused by the parser), and keys of other lengths. They are
	// signed by another key, so that whatever the fuzzer makes of them
	// still needs the pinned key's signature to verify.
	_, other, _ := GenerateKey()
	for _, s := range allSourceResults() {
		f.Add(resignRecordWith(f, other, v.Projection.Record, func(m map[string]any) {
			setSourceResult(m["delivered"].([]any)[0].(map[string]any), s)
		}))
	}
	for _, key := range []string{"0FMJy9O1Xw", "0FMJy9O1XzsA", "AA"} {
		f.Add(resignRecordWith(f, other, v.Projection.Record, func(m map[string]any) {
			m["delivered"].([]any)[1].(map[string]any)["author_key_id_b64u"] = key
		}))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := ParseProjectionRecord(in)
		if err != nil {
			if ErrorCode(err) == "" {
				t.Fatalf("refusal without a code: %v", err)
			}
			return
		}
		// Whatever was accepted reports source results draft -01 allows.
		for i, e := range r.Delivered {
			s := sourceResult{e.DerivedTrust, e.Authorship, e.AuthorKeyIDB64u != nil, e.CustodyPresent}
			if !draft01Allows(s) {
				t.Fatalf("delivered[%d] %s accepted", i, s)
			}
			if k := e.AuthorKeyIDB64u; k != nil && r.SourceProfile == SourceProfileApertoMemory {
				if b, _ := DecodeB64u(*k); len(b) != 8 {
					t.Fatalf("delivered[%d]: an ApertoMemory author key of %d bytes accepted", i, len(b))
				}
			}
		}
		r2, err := ParseProjectionRecord(r.Canonical())
		if err != nil || !bytes.Equal(r2.Canonical(), r.Canonical()) {
			t.Fatalf("canonical record does not re-parse to itself: %v", err)
		}
		if VerifyProjectionSignature(r, pins, now) == nil && !bytes.Equal(r.Canonical(), orig.Canonical()) {
			t.Fatalf("mutated record verifies: %s", r.Canonical())
		}
	})
}

func FuzzParseCompaction(f *testing.F) {
	envBytes := draftEnvelope(f)
	f.Add(envBytes)
	orig, err := ParseCompaction(envBytes)
	if err != nil {
		f.Fatal(err)
	}
	seed, _ := hex.DecodeString("2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a2a")
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	f.Add(bytes.Replace(envBytes, []byte(`"source_item_count":62`), []byte(`"source_item_count":62.0`), 1))
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := ParseCompaction(in)
		if err != nil {
			if ErrorCode(err) == "" {
				t.Fatalf("refusal without a code: %v", err)
			}
			return
		}
		c2, err := ParseCompaction(c.Canonical())
		if err != nil || !bytes.Equal(c2.Canonical(), c.Canonical()) {
			t.Fatalf("canonical ECCR does not re-parse to itself: %v", err)
		}
		if c.VerifySignatureWithKey(pub) == nil && !bytes.Equal(c.Canonical(), orig.Canonical()) {
			t.Fatalf("mutated ECCR verifies: %s", c.Canonical())
		}
	})
}

func FuzzParseTombstone(f *testing.F) {
	seed := make([]byte, 32)
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	orig, err := SignTombstone(&Tombstone{TombstoneID: "urn:uuid:0", ItemDigest: Digest(nil), PurgedAt: 1, Reason: "owner_request"}, priv)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(orig.Canonical())
	f.Fuzz(func(t *testing.T, in []byte) {
		ts, err := ParseTombstone(in)
		if err != nil {
			return
		}
		ts2, err := ParseTombstone(ts.Canonical())
		if err != nil || !bytes.Equal(ts2.Canonical(), ts.Canonical()) {
			t.Fatalf("canonical tombstone does not re-parse to itself: %v", err)
		}
		if ts.VerifySignatureWithKey(pub) == nil && !bytes.Equal(ts.Canonical(), orig.Canonical()) {
			t.Fatalf("mutated tombstone verifies: %s", ts.Canonical())
		}
	})
}

func FuzzParseManifest(f *testing.F) {
	mf, _ := NewManifest([]ManifestItem{{ItemDigest: Digest([]byte("a")), Sensitivity: "PUBLIC", ExpiresAt: 5}, {ItemDigest: Digest([]byte("b")), Sensitivity: "INTERNAL"}})
	f.Add(mf.Canonical())
	f.Add([]byte(`{"manifest_version":"1.0","items":[]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := ParseManifest(in)
		if err != nil {
			return
		}
		m2, err := ParseManifest(m.Canonical())
		if err != nil || m2.Root() != m.Root() || !bytes.Equal(m2.Canonical(), m.Canonical()) {
			t.Fatalf("canonical manifest does not re-parse to itself: %v", err)
		}
		for i := range m.Items {
			p, err := m.InclusionProof(i)
			if err != nil {
				t.Fatal(err)
			}
			c := &Compaction{SourceItemsMerkleRoot: m.Root(), SourceItemCount: int64(len(m.Items))}
			if err := VerifySourceInclusion(c, m.Items[i].Leaf(), uint64(i), p); err != nil {
				t.Fatalf("item %d: %v", i, err)
			}
		}
	})
}

func FuzzParseSubmission(f *testing.F) {
	_, priv, _ := GenerateKey()
	mf, _ := NewManifest([]ManifestItem{{ItemDigest: Digest([]byte("a")), Sensitivity: "PUBLIC"}})
	c, _ := SignCompaction(&Compaction{EventID: "urn:uuid:1", SourceItemsMerkleRoot: mf.Root(), SourceItemCount: 1, CompactedOutputHash: Digest(nil), InheritedSensitivityCeiling: "PUBLIC", RetentionPurgeEpoch: 1, TombstoneBloomFilterB64: EmptyBloomFilter}, priv)
	f.Add([]byte(`{"eccr":` + string(c.Canonical()) + `,"manifest":` + string(mf.Canonical()) + `}`))
	f.Add([]byte(loadEmilia(f).Projection.Record))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := ParseSubmission(in)
		if err != nil {
			if ErrorCode(err) == "" {
				t.Fatalf("refusal without a code: %v", err)
			}
			return
		}
		if _, err := ParseReceipt(s.Receipt.Canonical()); err != nil {
			t.Fatalf("accepted receipt does not re-parse: %v", err)
		}
	})
}

func FuzzParseTrust(f *testing.F) {
	fx := loadEmilia(f)
	pins, _ := ParseAdapterPins(fx.AdapterPin)
	pub, _, _ := GenerateKey()
	tr := &Trust{Adapters: pins, Compactors: Keyring{KeyID(pub): {PublicKey: pub, KID: KeyID(pub), ValidFrom: time.Unix(1, 0)}}, Issuers: Keyring{}, Freshness: DefaultFreshness, Lattice: DefaultLattice}
	f.Add(MarshalTrust(tr))
	f.Add([]byte(fx.AdapterPin))
	f.Fuzz(func(t *testing.T, in []byte) {
		if tr, err := ParseTrust(in); err == nil {
			if _, err := ParseTrust(MarshalTrust(tr)); err != nil {
				t.Fatalf("marshalled trust file does not re-parse: %v", err)
			}
		}
		if pins, err := ParseAdapterPins(in); err == nil {
			for _, p := range pins {
				if _, err := ParseAdapterPins(MarshalAdapterPin(p)); err != nil {
					t.Fatalf("marshalled pin does not re-parse: %v", err)
				}
			}
		}
	})
}

func FuzzParseBloomFilter(f *testing.F) {
	f.Add(EmptyBloomFilter)
	g := NewBloomFilter(3, 0.01)
	g.Add(DigestBytes(Digest(nil)))
	f.Add(g.Encode())
	f.Add("base64url_bloom_8B_A8f3_91b0")
	f.Fuzz(func(t *testing.T, s string) {
		bf, err := ParseBloomFilter(s)
		if err != nil {
			return
		}
		if bf.Encode() != s {
			t.Fatalf("Encode(Parse(%q)) = %q", s, bf.Encode())
		}
		bf.Contains(DigestBytes(Digest([]byte(s))))
	})
}

func FuzzParseSourceProof(f *testing.F) {
	_, priv, _ := GenerateKey()
	items := make([]ManifestItem, 5)
	for i := range items {
		items[i] = ManifestItem{ItemDigest: Digest([]byte{byte(i)}), Sensitivity: "INTERNAL", ExpiresAt: int64(100 + i)}
	}
	mf, _ := NewManifest(items)
	c, _ := SignCompaction(&Compaction{EventID: "urn:uuid:1", SourceItemsMerkleRoot: mf.Root(), SourceItemCount: 5, CompactedOutputHash: Digest(nil), InheritedSensitivityCeiling: "INTERNAL", RetentionPurgeEpoch: 100, TombstoneBloomFilterB64: EmptyBloomFilter}, priv)
	for i := range items {
		sp, _ := NewSourceProof(c, mf, i)
		f.Add(sp.Marshal())
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		sp, err := ParseSourceProof(in)
		if err != nil {
			return
		}
		back, err := ParseSourceProof(sp.Marshal())
		if err != nil {
			t.Fatalf("marshalled proof does not re-parse: %v", err)
		}
		// A proof that verifies must be one of the genuine ones: the same
		// item at the same index.
		if back.Verify(c) == nil {
			if int(back.Index) >= len(items) || back.Item != items[back.Index] {
				t.Fatalf("forged source proof verifies: %+v", back)
			}
		}
	})
}
