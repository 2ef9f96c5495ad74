package verifier_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
)

// draftVector is the ECCR draft's own signed envelope (seed 0x2a×32).
func draftVector(t *testing.T) ([]byte, ed25519.PublicKey) {
	t.Helper()
	raw, err := os.ReadFile("../conformance/vectors/eccr-draft/eccr-v1-draft-vector.json")
	if err != nil {
		t.Fatalf("shared vectors are missing: %v", err)
	}
	var v struct {
		Pub      string          `json:"public_key_hex"`
		Envelope json.RawMessage `json:"envelope"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	pub, _ := hex.DecodeString(v.Pub)
	return v.Envelope, pub
}

func compactionChecks(rep *verifier.CompactionReport) map[string]verifier.Check {
	out := map[string]verifier.Check{}
	for _, c := range rep.Checks {
		out[c.Check] = c
	}
	return out
}

func TestCompactionDraftVector(t *testing.T) {
	env, pub := draftVector(t)
	rep := verifier.VerifyCompaction(env, verifier.CompactionOptions{RawKeys: []ed25519.PublicKey{pub}})
	if !rep.Valid() {
		t.Fatalf("draft vector: %s", rep.Summary())
	}
	c := compactionChecks(rep)
	if c[verifier.CheckBloomFilter].Outcome != verifier.Skipped || c[verifier.CheckManifest].Outcome != verifier.Skipped {
		t.Errorf("without a manifest the profile rules must be skipped: %s", rep.Summary())
	}
	// Under a trust file, the key's window is judged at the given time.
	kid := receipts.KeyID(pub)
	keys := receipts.Keyring{kid: {PublicKey: pub, KID: kid, ValidFrom: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
	if rep := verifier.VerifyCompaction(env, verifier.CompactionOptions{Keys: keys, Time: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}); !rep.Valid() {
		t.Errorf("with a trust keyring: %s", rep.Summary())
	}
	if rep := verifier.VerifyCompaction(env, verifier.CompactionOptions{Keys: keys, Time: time.Date(2025, 11, 30, 0, 0, 0, 0, time.UTC)}); rep.Result != "key_expired" {
		t.Errorf("before the key's window: %s", rep.Result)
	}
	rev := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	keys[kid].RevokedAt = &rev
	if rep := verifier.VerifyCompaction(env, verifier.CompactionOptions{Keys: keys, Time: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}); rep.Result != "key_revoked" {
		t.Errorf("revoked key: %s", rep.Result)
	}
	other, _, _ := ed25519.GenerateKey(nil)
	if rep := verifier.VerifyCompaction(env, verifier.CompactionOptions{RawKeys: []ed25519.PublicKey{other}}); rep.Result != "key_not_pinned" {
		t.Errorf("other key: %s", rep.Result)
	}
	// A manifest makes the placeholder Bloom filter (and the unknown
	// root) fail.
	mf, _ := receipts.NewManifest(gen.Items("d", 62))
	rep = verifier.VerifyCompaction(env, verifier.CompactionOptions{RawKeys: []ed25519.PublicKey{pub}, Manifest: mf.Canonical()})
	c = compactionChecks(rep)
	if rep.Result != "merkle_root_mismatch" || c[verifier.CheckSourceCount].Outcome != verifier.Passed || c[verifier.CheckBloomFilter].Code != "bloom_filter_invalid" {
		t.Errorf("draft vector with a foreign manifest: %s", rep.Summary())
	}
}

func TestCompactionProfileRules(t *testing.T) {
	s := gen.Deterministic(5)
	pub := s.Compactor.Public().(ed25519.PublicKey)
	items := gen.Items("p", 9)
	items[2].Sensitivity = "HIGHLY_CONFIDENTIAL"
	items[4].ExpiresAt = 1900000000
	good, mf, err := s.Compaction("urn:c:good", items, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(f func(c *receipts.Compaction)) []byte {
		c := &receipts.Compaction{EventID: "urn:c:x", SourceItemsMerkleRoot: mf.Root(), SourceItemCount: 9, CompactedOutputHash: receipts.Digest([]byte("o")),
			InheritedSensitivityCeiling: "HIGHLY_CONFIDENTIAL", RetentionPurgeEpoch: 1900000000, TombstoneBloomFilterB64: receipts.EmptyBloomFilter}
		f(c)
		sc, err := receipts.SignCompaction(c, s.Compactor)
		if err != nil {
			t.Fatal(err)
		}
		return sc.Canonical()
	}
	keys := []ed25519.PublicKey{pub}
	proof := func(i int) []byte {
		sp, err := receipts.NewSourceProof(good, mf, i)
		if err != nil {
			t.Fatal(err)
		}
		return sp.Marshal()
	}
	answer := func(i int, eccr []byte) []byte {
		b, _ := json.Marshal(map[string]any{"source_proof": json.RawMessage(proof(i)), "compaction_index": 12, "eccr": json.RawMessage(eccr)})
		return b
	}
	otherLattice, _ := receipts.NewLattice([]string{"PUBLIC", "INTERNAL", "CONFIDENTIAL"})
	cases := []struct {
		name string
		eccr []byte
		opts verifier.CompactionOptions
		want string
	}{
		{"valid", good.Canonical(), verifier.CompactionOptions{Manifest: mf.Canonical()}, verifier.Valid},
		{"count", sign(func(c *receipts.Compaction) { c.SourceItemCount = 8 }), verifier.CompactionOptions{Manifest: mf.Canonical()}, "source_count_mismatch"},
		{"root", sign(func(c *receipts.Compaction) { c.SourceItemsMerkleRoot = receipts.Digest([]byte("r")) }), verifier.CompactionOptions{Manifest: mf.Canonical()}, "merkle_root_mismatch"},
		{"ceiling too low", sign(func(c *receipts.Compaction) { c.InheritedSensitivityCeiling = "CONFIDENTIAL" }), verifier.CompactionOptions{Manifest: mf.Canonical()}, "sensitivity_ceiling_mismatch"},
		{"ceiling unknown label", sign(func(c *receipts.Compaction) { c.InheritedSensitivityCeiling = "TOP_SECRET" }), verifier.CompactionOptions{Manifest: mf.Canonical()}, "sensitivity_ceiling_mismatch"},
		{"label unknown to the lattice ranks top", good.Canonical(), verifier.CompactionOptions{Manifest: mf.Canonical(), Lattice: otherLattice}, "sensitivity_ceiling_mismatch"},
		{"retention", sign(func(c *receipts.Compaction) { c.RetentionPurgeEpoch = 1900000001 }), verifier.CompactionOptions{Manifest: mf.Canonical()}, "retention_ceiling_exceeded"},
		{"bloom format", sign(func(c *receipts.Compaction) { c.TombstoneBloomFilterB64 = "AQEAAAAI" }), verifier.CompactionOptions{Manifest: mf.Canonical()}, "bloom_filter_invalid"},
		{"manifest malformed", good.Canonical(), verifier.CompactionOptions{Manifest: []byte(`{"manifest_version":"1.0","items":[]}`)}, "manifest_invalid"},
		{"source proof", good.Canonical(), verifier.CompactionOptions{SourceProofs: []verifier.SourceProofInput{{Item: items[5].ItemDigest, Document: proof(5)}}}, verifier.Valid},
		{"source proof answer", good.Canonical(), verifier.CompactionOptions{SourceProofs: []verifier.SourceProofInput{{Item: items[0].ItemDigest, Document: answer(0, good.Canonical())}}}, verifier.Valid},
		{"source proof answer for another ECCR", good.Canonical(), verifier.CompactionOptions{SourceProofs: []verifier.SourceProofInput{{Item: items[0].ItemDigest,
			Document: answer(0, sign(func(c *receipts.Compaction) {}))}}}, "source_proof_invalid"},
		{"source proof of another item", good.Canonical(), verifier.CompactionOptions{SourceProofs: []verifier.SourceProofInput{{Item: items[1].ItemDigest, Document: proof(5)}}}, "source_proof_invalid"},
		{"source proof with the tree size unbound", good.Canonical(), verifier.CompactionOptions{SourceProofs: []verifier.SourceProofInput{{Item: items[5].ItemDigest,
			Document: []byte(strings.Replace(string(proof(5)), `"tree_size": 9`, `"tree_size": 10`, 1))}}}, "source_proof_invalid"},
		{"source proof path altered", good.Canonical(), verifier.CompactionOptions{SourceProofs: []verifier.SourceProofInput{{Item: items[5].ItemDigest,
			Document: []byte(strings.Replace(string(proof(5)), `"index": 5`, `"index": 4`, 1))}}}, "source_proof_invalid"},
		{"source proof not JSON", good.Canonical(), verifier.CompactionOptions{SourceProofs: []verifier.SourceProofInput{{Item: items[5].ItemDigest, Document: []byte("{")}}}, "source_proof_invalid"},
		{"unknown member", []byte(strings.Replace(string(good.Canonical()), `{`, `{"x":1,`, 1)), verifier.CompactionOptions{}, "record_invalid"},
		{"signature altered", []byte(strings.Replace(string(good.Canonical()), "urn:c:good", "urn:c:evil", 1)), verifier.CompactionOptions{}, "signature_invalid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opts.RawKeys = keys
			rep := verifier.VerifyCompaction(c.eccr, c.opts)
			if rep.Result != c.want {
				t.Errorf("result = %s, want %s\n%s", rep.Result, c.want, rep.Summary())
			}
		})
	}
}

func TestSplitCompactionSubmission(t *testing.T) {
	for _, c := range []struct {
		in             string
		eccr, manifest string
		ok             bool
	}{
		{`{"eccr": {"a":1}, "manifest": {"b":2}}`, `{"a":1}`, `{"b":2}`, true},
		{`{"eccr":{"a":1}}`, `{"a":1}`, ``, true},
		{`{"eccr":{"a":1},"manifest":{},"x":1}`, ``, ``, false},
		{`{"eccr_version":"1"}`, ``, ``, false},
		{`{"eccr":"x"}`, ``, ``, false},
		{`[1]`, ``, ``, false},
		{`{"eccr":{"a":1},"eccr":{}}`, ``, ``, false},
	} {
		e, m, ok := verifier.SplitCompactionSubmission([]byte(c.in))
		if ok != c.ok || string(e) != c.eccr || string(m) != c.manifest {
			t.Errorf("%s: %q %q %v", c.in, e, m, ok)
		}
	}
}
