package receipts

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

type eccrVector struct {
	Seed     string          `json:"signing_key_seed_hex"`
	Pub      string          `json:"public_key_hex"`
	KID      string          `json:"kid"`
	Envelope json.RawMessage `json:"envelope"`
	Expect   struct {
		Len         int    `json:"jcs_full_envelope_length"`
		SHA         string `json:"jcs_full_envelope_sha256"`
		SignedLen   int    `json:"signed_bytes_length"`
		SignedSHA   string `json:"signed_bytes_sha256"`
		SignatureOK bool   `json:"signature_valid"`
	} `json:"expect"`
}

func loadECCRVector(t *testing.T) eccrVector {
	var v eccrVector
	if err := json.Unmarshal(readVector(t, "eccr-draft/eccr-v1-draft-vector.json"), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCompactionDraftVector(t *testing.T) {
	v := loadECCRVector(t)
	c, err := ParseCompaction(v.Envelope)
	if err != nil {
		t.Fatalf("ParseCompaction: %v", err)
	}
	full := sha256.Sum256(c.Canonical())
	if len(c.Canonical()) != v.Expect.Len || hex.EncodeToString(full[:]) != v.Expect.SHA {
		t.Errorf("JCS(envelope) = %d bytes sha256 %x, want %d bytes %s", len(c.Canonical()), full, v.Expect.Len, v.Expect.SHA)
	}
	signed := sha256.Sum256(c.SignedBytes())
	if len(c.SignedBytes()) != v.Expect.SignedLen || hex.EncodeToString(signed[:]) != v.Expect.SignedSHA {
		t.Errorf("signed bytes = %d bytes sha256 %x, want %d bytes %s", len(c.SignedBytes()), signed, v.Expect.SignedLen, v.Expect.SignedSHA)
	}
	seed, _ := hex.DecodeString(v.Seed)
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	if hex.EncodeToString(pub) != v.Pub || KeyID(pub) != v.KID {
		t.Errorf("key = %x kid %s, want %s %s", pub, KeyID(pub), v.Pub, v.KID)
	}
	if err := c.VerifySignatureWithKey(pub); err != nil {
		t.Errorf("draft vector signature: %v", err)
	}
	keys := Keyring{v.KID: &Key{PublicKey: pub, KID: v.KID, ValidFrom: time.Unix(0, 0)}}
	if err := c.VerifySignature(keys, time.Now()); err != nil {
		t.Errorf("VerifySignature under a keyring: %v", err)
	}
	// Re-signing the parsed envelope reproduces it exactly (Ed25519 is
	// deterministic).
	again, err := SignCompaction(c, priv)
	if err != nil || !bytes.Equal(again.Canonical(), c.Canonical()) {
		t.Errorf("SignCompaction = %v, %s", err, again.Canonical())
	}
	// The placeholder Bloom value is opaque at receipt level but refused
	// by the strict profile format.
	if _, err := ParseBloomFilter(c.TombstoneBloomFilterB64); ErrorCode(err) != CodeBloomFilterInvalid {
		t.Errorf("placeholder bloom filter: %v, want bloom_filter_invalid", err)
	}
}

// TestCompactionParserInvariants checks the draft's five invariants and the
// closed member set, one refusal per row.
func TestCompactionParserInvariants(t *testing.T) {
	v := loadECCRVector(t)
	env := string(v.Envelope)
	replace := func(old, new string) string {
		if !strings.Contains(env, old) {
			t.Fatalf("vector lacks %q", old)
		}
		return strings.Replace(env, old, new, 1)
	}
	cases := []struct{ name, in, member string }{
		{"duplicate ceiling", replace(`"retention_purge_epoch"`, `"inherited_sensitivity_ceiling": "PUBLIC", "retention_purge_epoch"`), ""},
		{"duplicate epoch", replace(`"tombstone_bloom_filter_b64"`, `"retention_purge_epoch": 1, "tombstone_bloom_filter_b64"`), ""},
		{"count bool", replace(`"source_item_count": 62`, `"source_item_count": true`), "source_item_count"},
		{"count float", replace(`"source_item_count": 62`, `"source_item_count": 62.0`), ""},
		{"count exponent", replace(`"source_item_count": 62`, `"source_item_count": 6.2e1`), ""},
		{"count zero", replace(`"source_item_count": 62`, `"source_item_count": 0`), "source_item_count"},
		{"count negative", replace(`"source_item_count": 62`, `"source_item_count": -62`), "source_item_count"},
		{"count 2^53", replace(`"source_item_count": 62`, `"source_item_count": 9007199254740992`), ""},
		{"count string", replace(`"source_item_count": 62`, `"source_item_count": "62"`), "source_item_count"},
		{"epoch NaN", replace(`1796083200`, `NaN`), ""},
		{"epoch 1e1000", replace(`1796083200`, `1e1000`), ""},
		{"epoch fractional", replace(`1796083200`, `1796083200.5`), ""},
		{"epoch negative", replace(`1796083200`, `-1`), "retention_purge_epoch"},
		{"epoch null", replace(`1796083200`, `null`), "retention_purge_epoch"},
		{"label lowercase", replace(`"CONFIDENTIAL_RESTRICTED"`, `"confidential_restricted"`), "inherited_sensitivity_ceiling"},
		{"label whitespace", replace(`"CONFIDENTIAL_RESTRICTED"`, `" CONFIDENTIAL_RESTRICTED"`), "inherited_sensitivity_ceiling"},
		{"label trailing newline", replace(`"CONFIDENTIAL_RESTRICTED"`, `"CONFIDENTIAL_RESTRICTED\n"`), "inherited_sensitivity_ceiling"},
		{"label leading digit", replace(`"CONFIDENTIAL_RESTRICTED"`, `"1SECRET"`), "inherited_sensitivity_ceiling"},
		{"label empty", replace(`"CONFIDENTIAL_RESTRICTED"`, `""`), "inherited_sensitivity_ceiling"},
		{"root uppercase", replace(`sha256:1b4f0e98`, `sha256:1B4F0E98`), "source_items_merkle_root"},
		{"root short", replace(`sha256:1b4f0e98`, `sha256:1b4f0e9`), "source_items_merkle_root"},
		{"output hash prefix", replace(`"sha256:7d865e95`, `"SHA256:7d865e95`), "compacted_output_hash"},
		{"unknown member", replace(`"eccr_version"`, `"note": "x", "eccr_version"`), "note"},
		{"missing member", strings.Replace(env, `"compacted_output_hash"`, `"compacted_output_hash_x"`, 1), "compacted_output_hash"},
		{"version 2", replace(`"1.0"`, `"2.0"`), "eccr_version"},
		{"sig alg", replace(`"alg": "Ed25519"`, `"alg": "ed25519"`), "signature.alg"},
		{"kid hex only", replace(`"kid": "sha256:`, `"kid": "`), "signature.kid"},
		{"sig short", replace(`"sig": "1T9G`, `"sig": "`), "signature.sig"},
		{"bloom not base64url", replace(`"base64url_bloom_8B_A8f3_91b0"`, `"not base64!"`), "tombstone_bloom_filter_b64"},
		{"bloom empty", replace(`"base64url_bloom_8B_A8f3_91b0"`, `""`), "tombstone_bloom_filter_b64"},
		{"supersedes itself", replace(`"eccr_version"`, `"supersedes": "urn:uuid:11a92c44-88b1-42c0-991a-77651234abcd", "eccr_version"`), "supersedes"},
		{"supersedes not a URI", replace(`"eccr_version"`, `"supersedes": "previous one", "eccr_version"`), "supersedes"},
		{"signature extra member", replace(`"alg": "Ed25519"`, `"alg": "Ed25519", "x5c": []`), "signature.x5c"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCompaction([]byte(tc.in))
			e, ok := err.(*Error)
			if !ok || e.Code != CodeRecordInvalid || e.Member != tc.member {
				t.Errorf("ParseCompaction = %v, want record_invalid at %q", err, tc.member)
			}
		})
	}
	t.Run("signature over mutation", func(t *testing.T) {
		c, err := ParseCompaction([]byte(replace(`"CONFIDENTIAL_RESTRICTED"`, `"PUBLIC"`)))
		if err != nil {
			t.Fatal(err)
		}
		seed, _ := hex.DecodeString(v.Seed)
		pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
		if ErrorCode(c.VerifySignatureWithKey(pub)) != CodeSignatureInvalid {
			t.Errorf("lowered ceiling still verifies")
		}
	})
}

func testManifest(t *testing.T, n int, label func(i int) string, expires func(i int) int64) *Manifest {
	items := make([]ManifestItem, n)
	for i := range items {
		items[i] = ManifestItem{ItemDigest: Digest([]byte(fmt.Sprint("item", i))), Sensitivity: label(i), ExpiresAt: expires(i)}
	}
	mf, err := NewManifest(items)
	if err != nil {
		t.Fatal(err)
	}
	return mf
}

func signedCompactionFor(t *testing.T, mf *Manifest, priv ed25519.PrivateKey, ceiling string, epoch int64) *Compaction {
	c, err := SignCompaction(&Compaction{
		EventID:                     "urn:uuid:" + fmt.Sprint(time.Now().UnixNano()),
		SourceItemsMerkleRoot:       mf.Root(),
		SourceItemCount:             int64(len(mf.Items)),
		CompactedOutputHash:         Digest([]byte("summary")),
		InheritedSensitivityCeiling: ceiling,
		RetentionPurgeEpoch:         epoch,
		TombstoneBloomFilterB64:     EmptyBloomFilter,
	}, priv)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestManifestRules(t *testing.T) {
	_, priv, _ := GenerateKey()
	labels := []string{"PUBLIC", "CONFIDENTIAL", "INTERNAL"}
	mf := testManifest(t, 7, func(i int) string { return labels[i%3] }, func(i int) int64 {
		if i == 4 {
			return 1796083200
		}
		if i%2 == 0 {
			return 1900000000
		}
		return 0
	})
	ok := signedCompactionFor(t, mf, priv, "CONFIDENTIAL", 1796083200)
	if err := mf.CheckAgainst(ok, DefaultLattice); err != nil {
		t.Fatalf("valid compaction: %v", err)
	}
	// Round trip of the manifest through its canonical bytes.
	again, err := ParseManifest(mf.Canonical())
	if err != nil || again.Root() != mf.Root() {
		t.Fatalf("ParseManifest(Canonical()) = %v root %v", err, again)
	}
	cases := []struct {
		name string
		c    *Compaction
		l    *Lattice
		want Code
	}{
		{"ceiling too low", signedCompactionFor(t, mf, priv, "INTERNAL", 1796083200), DefaultLattice, CodeSensitivityCeilingMismatch},
		{"ceiling too high", signedCompactionFor(t, mf, priv, "HIGHLY_CONFIDENTIAL", 1796083200), DefaultLattice, CodeSensitivityCeilingMismatch},
		{"ceiling unknown", signedCompactionFor(t, mf, priv, "TOP_SECRET", 1796083200), DefaultLattice, CodeSensitivityCeilingMismatch},
		{"retention beyond", signedCompactionFor(t, mf, priv, "CONFIDENTIAL", 1796083201), DefaultLattice, CodeRetentionCeilingExceeded},
		{"lattice puts INTERNAL on top", ok, mustLattice([]string{"PUBLIC", "CONFIDENTIAL", "INTERNAL"}), CodeSensitivityCeilingMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ErrorCode(mf.CheckAgainst(tc.c, tc.l)); got != tc.want {
				t.Errorf("CheckAgainst = %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("retention error names the times", func(t *testing.T) {
		err := mf.CheckAgainst(signedCompactionFor(t, mf, priv, "CONFIDENTIAL", 1796083201), DefaultLattice)
		for _, want := range []string{"1796083201 (2026-12-01T00:00:01Z)", "1796083200 (2026-12-01T00:00:00Z)", "item sha256:"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("CheckAgainst = %v, want it to name %q", err, want)
			}
		}
	})
	t.Run("unknown item label fails closed", func(t *testing.T) {
		mf2 := testManifest(t, 3, func(i int) string { return []string{"PUBLIC", "MYSTERY", "INTERNAL"}[i] }, func(int) int64 { return 0 })
		if err := mf2.CheckAgainst(signedCompactionFor(t, mf2, priv, "INTERNAL", 5), DefaultLattice); ErrorCode(err) != CodeSensitivityCeilingMismatch {
			t.Errorf("unknown label with INTERNAL ceiling: %v", err)
		}
		if err := mf2.CheckAgainst(signedCompactionFor(t, mf2, priv, "HIGHLY_CONFIDENTIAL", 5), DefaultLattice); err != nil {
			t.Errorf("unknown label with top ceiling: %v", err)
		}
	})
	t.Run("count and root", func(t *testing.T) {
		other := testManifest(t, 6, func(int) string { return "PUBLIC" }, func(int) int64 { return 0 })
		if got := ErrorCode(other.CheckAgainst(ok, DefaultLattice)); got != CodeSourceCountMismatch {
			t.Errorf("other count: %q", got)
		}
		items := append([]ManifestItem(nil), mf.Items...)
		items[0], items[1] = items[1], items[0]
		swapped, _ := NewManifest(items)
		if got := ErrorCode(swapped.CheckAgainst(ok, DefaultLattice)); got != CodeMerkleRootMismatch {
			t.Errorf("reordered manifest: %q", got)
		}
	})
}

func TestManifestRefusals(t *testing.T) {
	d := Digest([]byte("a"))
	cases := map[string]string{
		"empty items":     `{"manifest_version":"1.0","items":[]}`,
		"version":         `{"manifest_version":"2.0","items":[{"item_digest":"` + d + `","sensitivity":"PUBLIC"}]}`,
		"duplicate items": `{"manifest_version":"1.0","items":[{"item_digest":"` + d + `","sensitivity":"PUBLIC"},{"item_digest":"` + d + `","sensitivity":"INTERNAL"}]}`,
		"expires zero":    `{"manifest_version":"1.0","items":[{"item_digest":"` + d + `","sensitivity":"PUBLIC","expires_at":0}]}`,
		"expires null":    `{"manifest_version":"1.0","items":[{"item_digest":"` + d + `","sensitivity":"PUBLIC","expires_at":null}]}`,
		"label lower":     `{"manifest_version":"1.0","items":[{"item_digest":"` + d + `","sensitivity":"public"}]}`,
		"unknown member":  `{"manifest_version":"1.0","items":[{"item_digest":"` + d + `","sensitivity":"PUBLIC","note":1}]}`,
		"bad digest":      `{"manifest_version":"1.0","items":[{"item_digest":"sha256:00","sensitivity":"PUBLIC"}]}`,
		"items object":    `{"manifest_version":"1.0","items":{}}`,
		"extra top":       `{"manifest_version":"1.0","items":[{"item_digest":"` + d + `","sensitivity":"PUBLIC"}],"x":1}`,
	}
	for name, in := range cases {
		if _, err := ParseManifest([]byte(in)); ErrorCode(err) != CodeManifestInvalid {
			t.Errorf("%s: ParseManifest = %v, want manifest_invalid", name, err)
		}
	}
}

func TestSourceInclusionProofs(t *testing.T) {
	_, priv, _ := GenerateKey()
	for _, n := range []int{1, 2, 3, 5, 8, 13, 64, 100} {
		mf := testManifest(t, n, func(int) string { return "PUBLIC" }, func(int) int64 { return 0 })
		c := signedCompactionFor(t, mf, priv, "PUBLIC", 1)
		for i := 0; i < n; i++ {
			path, err := mf.InclusionProof(i)
			if err != nil {
				t.Fatalf("n=%d i=%d: %v", n, i, err)
			}
			leaf := mf.Items[i].Leaf()
			if err := VerifySourceInclusion(c, leaf, uint64(i), path); err != nil {
				t.Errorf("n=%d i=%d: %v", n, i, err)
			}
			if n > 1 {
				other := mf.Items[(i+1)%n].Leaf()
				if VerifySourceInclusion(c, other, uint64(i), path) == nil {
					t.Errorf("n=%d i=%d: proof verifies for another leaf", n, i)
				}
			}
		}
		// Tree size is bound to source_item_count: a proof of the same
		// leaf in a tree of another size does not verify.
		bigger := *c
		bigger.SourceItemCount = int64(n + 1)
		path, _ := mf.InclusionProof(n - 1)
		if err := VerifySourceInclusion(&bigger, mf.Items[n-1].Leaf(), uint64(n-1), path); err == nil && n&(n-1) != 0 {
			t.Errorf("n=%d: proof verifies under source_item_count %d", n, n+1)
		}
		if err := VerifySourceInclusion(c, mf.Items[0].Leaf(), uint64(n), nil); ErrorCode(err) != CodeSourceProofInvalid {
			t.Errorf("index = count accepted: %v", err)
		}
	}
}

func TestBloomFilter(t *testing.T) {
	if f, err := ParseBloomFilter(EmptyBloomFilter); err != nil || f.K != 0 || f.M != 0 {
		t.Fatalf("empty filter: %v %+v", err, f)
	}
	if (&BloomFilter{}).Encode() != EmptyBloomFilter {
		t.Errorf("empty encode = %s", (&BloomFilter{}).Encode())
	}
	f := NewBloomFilter(50, 1e-6)
	var in, out [][32]byte
	for i := 0; i < 50; i++ {
		in = append(in, DigestBytes(Digest([]byte(fmt.Sprint("in", i)))))
		out = append(out, DigestBytes(Digest([]byte(fmt.Sprint("out", i)))))
	}
	for _, d := range in {
		f.Add(d)
	}
	g, err := ParseBloomFilter(f.Encode())
	if err != nil {
		t.Fatalf("round trip: %v", err)
	}
	for _, d := range in {
		if !g.Contains(d) {
			t.Fatalf("added digest missing")
		}
	}
	fp := 0
	for _, d := range out {
		if g.Contains(d) {
			fp++
		}
	}
	if fp > 1 {
		t.Errorf("%d false positives of 50 at target 1e-6", fp)
	}
	// Hand-checkable bit rule: k=1, m=8.
	h := sha256.Sum256(append([]byte("eccr-bloom-v1\x00"), in[0][:]...))
	var p uint64
	for _, b := range h[:8] {
		p = p<<8 | uint64(b)
	}
	one := &BloomFilter{K: 1, M: 8, Bits: make([]byte, 1)}
	one.Add(in[0])
	if one.Bits[0] != 1<<(p%8) {
		t.Errorf("bit layout: byte = %08b, want bit %d", one.Bits[0], p%8)
	}
	bad := map[string][]byte{
		"version 2":        {2, 0, 0, 0, 0, 0},
		"short":            {1, 0, 0},
		"k without m":      {1, 1, 0, 0, 0, 0},
		"m not multiple 8": {1, 1, 0, 0, 0, 7, 0},
		"k 33":             {1, 33, 0, 0, 0, 8, 0},
		"bitset long":      {1, 1, 0, 0, 0, 8, 0, 0},
		"bitset short":     {1, 1, 0, 0, 0, 16, 0},
		"empty with bits":  {1, 0, 0, 0, 0, 0, 0},
		"m too big":        {1, 1, 2, 0, 0, 8},
	}
	for name, raw := range bad {
		if _, err := ParseBloomFilter(EncodeB64u(raw)); ErrorCode(err) != CodeBloomFilterInvalid {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ParseBloomFilter(EmptyBloomFilter + "=="); err == nil {
		t.Errorf("padded filter accepted")
	}
}

func TestTombstone(t *testing.T) {
	pub, priv, _ := GenerateKey()
	ts, err := SignTombstone(&Tombstone{TombstoneID: "urn:uuid:1", ItemDigest: Digest([]byte("x")), PurgedAt: 1796083200, Reason: "regulatory_erasure"}, priv)
	if err != nil {
		t.Fatal(err)
	}
	keys := Keyring{KeyID(pub): {PublicKey: pub, KID: KeyID(pub), ValidFrom: time.Unix(0, 0)}}
	if err := ts.VerifySignature(keys, time.Now()); err != nil {
		t.Fatalf("VerifySignature: %v", err)
	}
	r, err := ParseReceipt(ts.Canonical())
	if err != nil || r.Kind() != KindTombstone || r.ID() != "urn:uuid:1" {
		t.Fatalf("ParseReceipt = %v, %v", r, err)
	}
	// Key windows use purged_at; revocation uses now.
	late := time.Unix(1796083201, 0)
	keys[KeyID(pub)].ValidFrom = late
	if got := ErrorCode(ts.VerifySignature(keys, time.Now())); got != CodeKeyExpired {
		t.Errorf("key valid after purged_at: %q", got)
	}
	keys[KeyID(pub)].ValidFrom = time.Unix(0, 0)
	rev := time.Now().Add(-time.Minute)
	keys[KeyID(pub)].RevokedAt = &rev
	if got := ErrorCode(ts.VerifySignature(keys, time.Now())); got != CodeKeyRevoked {
		t.Errorf("revoked key: %q", got)
	}
	if got := ErrorCode(ts.VerifySignature(Keyring{}, time.Now())); got != CodeKeyNotPinned {
		t.Errorf("unknown key: %q", got)
	}
	c := string(ts.Canonical())
	for name, in := range map[string]string{
		"bad reason":  strings.Replace(c, "regulatory_erasure", "because", 1),
		"purged zero": strings.Replace(c, "1796083200", "0", 1),
		"extra":       strings.Replace(c, `"reason"`, `"x":1,"reason"`, 1),
		"version":     strings.Replace(c, `"tombstone_version":"1.0"`, `"tombstone_version":"1"`, 1),
	} {
		if _, err := ParseTombstone([]byte(in)); ErrorCode(err) != CodeRecordInvalid {
			t.Errorf("%s: %v", name, err)
		}
	}
	mutated := strings.Replace(c, Digest([]byte("x")), Digest([]byte("y")), 1)
	tm, _ := ParseTombstone([]byte(mutated))
	if ErrorCode(tm.VerifySignatureWithKey(pub)) != CodeSignatureInvalid {
		t.Errorf("mutated item digest verifies")
	}
}

func TestParseSubmission(t *testing.T) {
	_, priv, _ := GenerateKey()
	mf := testManifest(t, 3, func(int) string { return "INTERNAL" }, func(int) int64 { return 0 })
	c := signedCompactionFor(t, mf, priv, "INTERNAL", 10)
	sub := fmt.Sprintf(`{"eccr": %s, "manifest": %s}`, c.Canonical(), mf.Canonical())
	s, err := ParseSubmission([]byte(sub))
	if err != nil || s.Manifest == nil || s.Receipt.Kind() != KindCompaction {
		t.Fatalf("ParseSubmission = %+v, %v", s, err)
	}
	if _, err := ParseSubmission(c.Canonical()); ErrorCode(err) != CodeRecordInvalid {
		t.Errorf("bare ECCR accepted as a submission: %v", err)
	}
	if _, err := ParseSubmission([]byte(fmt.Sprintf(`{"eccr": %s}`, c.Canonical()))); ErrorCode(err) != CodeRecordInvalid {
		t.Errorf("ECCR without manifest accepted: %v", err)
	}
	bad := strings.Replace(sub, `"source_item_count":3`, `"source_item_count":3.5`, 1)
	if _, err := ParseSubmission([]byte(bad)); ErrorCode(err) != CodeRecordInvalid {
		t.Errorf("fractional count: %v", err)
	}
	if _, err := ParseSubmission([]byte(`{"what": 1}`)); ErrorCode(err) != CodeRecordInvalid {
		t.Errorf("unknown kind: %v", err)
	}
}

func TestSourceProofDocument(t *testing.T) {
	_, priv, _ := GenerateKey()
	mf := testManifest(t, 9, func(int) string { return "INTERNAL" }, func(i int) int64 { return int64(1000 + i) })
	c := signedCompactionFor(t, mf, priv, "INTERNAL", 1000)
	for i := range mf.Items {
		sp, err := NewSourceProof(c, mf, i)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseSourceProof(sp.Marshal())
		if err != nil {
			t.Fatalf("ParseSourceProof(Marshal()) = %v\n%s", err, sp.Marshal())
		}
		if err := back.Verify(c); err != nil {
			t.Errorf("item %d: %v", i, err)
		}
	}
	sp, _ := NewSourceProof(c, mf, 3)
	bad := *sp
	bad.TreeSize = 10
	if ErrorCode(bad.Verify(c)) != CodeSourceProofInvalid {
		t.Errorf("tree size other than source_item_count accepted")
	}
	bad = *sp
	bad.Item.Sensitivity = "PUBLIC"
	if ErrorCode(bad.Verify(c)) != CodeSourceProofInvalid {
		t.Errorf("relabelled item accepted")
	}
	bad = *sp
	bad.Index = 4
	if ErrorCode(bad.Verify(c)) != CodeSourceProofInvalid {
		t.Errorf("moved item accepted")
	}
}
