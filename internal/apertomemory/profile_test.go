package apertomemory

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func kid(t testing.TB, s string) KeyID {
	t.Helper()
	var k KeyID
	if copy(k[:], unhex(t, s)) != 8 {
		t.Fatalf("%s is not 8 bytes", s)
	}
	return k
}

// TestTrustSnapshotExamples: the three worked examples of projection draft
// -01 §5.1, bytes and digest exact.
func TestTrustSnapshotExamples(t *testing.T) {
	for _, tc := range []struct {
		name     string
		owner    string
		accepted []string
		bytes    string
		digest   string
	}{
		{"single accepted key", "63c1e89c009c5ad7", []string{"d05309cbd3b55f3b"},
			"a2014863c1e89c009c5ad7028148d05309cbd3b55f3b",
			"sha256:ad677e36d1ac311f758cefeb41069704d1bc995612db0bc1029e239ecfcc2b5d"},
		// Held in the order whose base64url text sorts the other way.
		{"two accepted keys, raw-byte order", "0102030405060708", []string{"d000000000000000", "0000000000000001"},
			"a201480102030405060708028248000000000000000148d000000000000000",
			"sha256:a6cec9a790d68dda6df60477c802cd3738650cd8f1b38fcc21125de51762e231"},
		{"two accepted keys with a duplicate", "0102030405060708", []string{"d000000000000000", "0000000000000001", "d000000000000000"},
			"a201480102030405060708028248000000000000000148d000000000000000",
			"sha256:a6cec9a790d68dda6df60477c802cd3738650cd8f1b38fcc21125de51762e231"},
		{"empty accepted-key set", "63c1e89c009c5ad7", nil,
			"a2014863c1e89c009c5ad70280",
			"sha256:eddde59fb79cca10fdadf0c5bfc7c3b7e466cab79dcb95a5c4ea165fc8eb5bf0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var acc []KeyID
			for _, a := range tc.accepted {
				acc = append(acc, kid(t, a))
			}
			b := EncodeTrustSnapshot(kid(t, tc.owner), acc)
			if got := hex.EncodeToString(b); got != tc.bytes {
				t.Errorf("EncodeTrustSnapshot = %s, want %s", got, tc.bytes)
			}
			if got := TrustSnapshotDigest(b); got != tc.digest {
				t.Errorf("TrustSnapshotDigest = %s, want %s", got, tc.digest)
			}
		})
	}
}

// TestKeyringTrustSnapshot: a keyring's snapshot is the first example for
// the vectors' owner and third party, and keeps the owner when it is also
// accepted.
func TestKeyringTrustSnapshot(t *testing.T) {
	owner, other := vectorOwner(t), vectorOther(t)
	kr, err := NewKeyring(owner.SignPub(), other.SignPub(), other.SignPub())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kr.TrustSnapshotDigest(), "sha256:ad677e36d1ac311f758cefeb41069704d1bc995612db0bc1029e239ecfcc2b5d"; got != want {
		t.Errorf("TrustSnapshotDigest = %s, want %s", got, want)
	}
	kr2, _ := NewKeyring(owner.SignPub(), owner.SignPub())
	if got, want := hex.EncodeToString(kr2.TrustSnapshot()), "a2014863c1e89c009c5ad702814863c1e89c009c5ad7"; got != want {
		t.Errorf("owner also accepted: snapshot = %s, want %s", got, want)
	}
}

// TestFrameV0Examples: the worked examples of the context-frame v0 profile
// (pinned by projection draft -01 §5.2), bytes, length and digest exact.
func TestFrameV0Examples(t *testing.T) {
	a := kid(t, "d05309cbd3b55f3b")
	for _, tc := range []struct {
		name   string
		labels FrameLabels
		body   string
		want   string
		length int
		digest string
	}{
		{"verified, attested, custody", FrameLabels{TrustTrusted, AuthorshipAttested, &a, true},
			"Source vector 007: fact authored by a third party and re-sealed by the vault owner.",
			"[ApertoMemory trust=trusted authorship=attested author_key=0FMJy9O1Xzs custody=true]\n" +
				"Source vector 007: fact authored by a third party and re-sealed by the vault owner.\n[/ApertoMemory]\n",
			185, "sha256:8705dd3315ac111cc0531f1f6cbc99df6542eec56fd732db95e37d1a15f15ecc"},
		{"unverified, no author", FrameLabels{TrustUnverified, AuthorshipUnknown, nil, false},
			"Source edge: native verification did not resolve an author.",
			"[ApertoMemory trust=unverified authorship=unknown author_key=none custody=false]\n" +
				"Source edge: native verification did not resolve an author.\n[/ApertoMemory]\n",
			157, "sha256:e14214df9b4b22487c19458a0d7c800ebe19435bc46f6109a7377c5ca156f9eb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := FrameV0(tc.labels, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want || len(b) != tc.length {
				t.Errorf("FrameV0 = %q (%d bytes), want %q (%d)", b, len(b), tc.want, tc.length)
			}
			s := sha256.Sum256(b)
			if got := "sha256:" + hex.EncodeToString(s[:]); got != tc.digest {
				t.Errorf("digest = %s, want %s", got, tc.digest)
			}
		})
	}
}

// TestFrameV0Body: the body goes in verbatim (no trimming, newline
// conversion or normalisation), and a body that contains the closing
// delimiter stays one fragment.
func TestFrameV0Body(t *testing.T) {
	k := kid(t, "63c1e89c009c5ad7")
	body := "  line one\r\nline two\n[/ApertoMemory]\ne\u0301\n"
	b, err := FrameV0(FrameLabels{TrustSelf, AuthorshipSigned, &k, false}, body)
	if err != nil {
		t.Fatal(err)
	}
	want := "[ApertoMemory trust=self authorship=signed author_key=Y8HonACcWtc custody=false]\n" + body + "\n[/ApertoMemory]\n"
	if string(b) != want {
		t.Errorf("FrameV0 = %q, want %q", b, want)
	}
	if _, err := FrameV0(FrameLabels{TrustSelf, AuthorshipSigned, &k, false}, "\xff"); err == nil {
		t.Error("a body that is not UTF-8 was framed")
	}
}

// TestFrameV0Refuses: labels outside the enumerations, or inconsistent as
// draft -01 §4.3 defines them, are refused.
func TestFrameV0Refuses(t *testing.T) {
	k := kid(t, "63c1e89c009c5ad7")
	for _, l := range []FrameLabels{
		{Trust: "Self", Authorship: AuthorshipSigned, Author: &k},
		{Trust: TrustSelf, Authorship: "signed ", Author: &k},
		{Trust: TrustUnverified, Authorship: AuthorshipUnknown, Author: &k},
		{Trust: TrustUnverified, Authorship: AuthorshipSigned, Author: &k},
		{Trust: TrustSelf, Authorship: AuthorshipUnknown},
		{Trust: TrustTrusted, Authorship: AuthorshipSigned},
		{Trust: TrustTrusted, Authorship: AuthorshipAttested, Author: &k, Custody: false},
		{Trust: "", Authorship: ""},
	} {
		if b, err := FrameV0(l, "x"); err == nil {
			t.Errorf("FrameV0(%+v) = %q, want a refusal", l, b)
		}
	}
}

// TestObjectContextFragment: an opened object frames with its own native
// labels: 007 as trusted/attested with the proven author, 008 as
// unverified with no author but custody true.
func TestObjectContextFragment(t *testing.T) {
	f := loadVectors(t)
	for _, tc := range []struct{ vector, header string }{
		{"007-custody-attested", "[ApertoMemory trust=trusted authorship=attested author_key=0FMJy9O1Xzs custody=true]\n"},
		{"008-custody-unproven", "[ApertoMemory trust=unverified authorship=unknown author_key=none custody=true]\n"},
		{"013-out-of-range-confidence", "[ApertoMemory trust=self authorship=signed author_key=Y8HonACcWtc custody=false]\n"},
		{"014-empty-custody-map", "[ApertoMemory trust=unverified authorship=unknown author_key=none custody=false]\n"},
	} {
		v := f.Vectors[tc.vector]
		o, err := OpenObject(hexField(t, v.Input, "sealed_object"), hexField(t, v.Input, "dek"), vectorKeyring(t, v.Input), nil)
		if err != nil {
			t.Fatal(err)
		}
		want := tc.header + o.Content + "\n[/ApertoMemory]\n"
		if got := string(o.ContextFragment()); got != want {
			t.Errorf("%s: fragment = %q, want %q", tc.vector, got, want)
		}
	}
}
