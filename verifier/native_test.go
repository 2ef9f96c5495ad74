package verifier_test

import (
	"context"
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
)

// fakeSource is a SourceVerifier whose answers the test sets.
type fakeSource struct {
	snapshot []byte
	results  map[string]verifier.SourceResult // by sealed bytes
}

func (f *fakeSource) SourceProfile() string { return receipts.SourceProfileApertoMemory }
func (f *fakeSource) Describe() string      { return "a fake" }
func (f *fakeSource) TrustSnapshot() []byte { return f.snapshot }
func (f *fakeSource) VerifySource(sealed []byte) verifier.SourceResult {
	if r, ok := f.results[string(sealed)]; ok {
		return r
	}
	return verifier.SourceResult{Refusal: "dek_missing"}
}

// TestSourceVerifier runs step 5 through a SourceVerifier: its results,
// its fragments and its trust snapshot are what the record is checked
// against, whatever the material says.
func TestSourceVerifier(t *testing.T) {
	key := ed25519.NewKeyFromSeed(make([]byte, 32))
	end := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	pins := []*receipts.AdapterPin{{AdapterID: "urn:a:1", KeyID: "k", PublicKey: key.Public().(ed25519.PublicKey), Status: "active", ValidFrom: time.Unix(0, 0), ValidTo: &end}}
	author := "AAECAwQFBgc"
	sealed, frag := []byte("sealed object"), []byte("[ApertoMemory trust=self authorship=signed author_key=AAECAwQFBgc custody=false]\nx\n[/ApertoMemory]\n")
	snapshot := []byte("snapshot")
	now := time.Now().UTC()
	r, proj, err := receipts.NewProjection(&receipts.ProjectionInput{SourceProfile: receipts.SourceProfileApertoMemory, ProjectionID: "urn:p:1",
		CreatedAt: now, AdapterID: "urn:a:1", KeyID: "k", RecallRequestDigest: receipts.Digest(nil), SelectionPolicyDigest: receipts.Digest(nil),
		TrustSnapshotDigest: receipts.Digest(snapshot), TrustEvaluatedAt: now, ContextFrameProfile: receipts.ContextFrameApertoMemory,
		Fragments: []receipts.Fragment{{FormatVersion: 2, SealedObjectDigest: receipts.Digest(sealed), Bytes: frag, DerivedTrust: "self",
			Authorship: "signed", AuthorKeyIDB64u: &author}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	good := verifier.SourceResult{NativeResult: verifier.NativeResult{Valid: true, FormatVersion: 2, SealedObjectDigest: receipts.Digest(sealed),
		DerivedTrust: "self", Authorship: "signed", AuthorKeyIDB64u: &author}, FrameProfile: receipts.ContextFrameApertoMemory, Fragment: frag}
	material := func() *verifier.Material {
		return &verifier.Material{RecallRequest: []byte{}, SelectionPolicy: []byte{}, TrustSnapshot: snapshot, SourceObjects: [][]byte{sealed},
			Fragments: [][]byte{frag}, Projection: proj,
			// Native results that would pass without the source
			// verifier, and are ignored with it.
			NativeResults: []verifier.NativeResult{good.NativeResult}}
	}
	trusted := good
	trusted.DerivedTrust = "trusted"
	otherFrame := good
	otherFrame.Fragment = []byte("another frame")
	for _, tc := range []struct {
		name   string
		src    *fakeSource
		m      func(*verifier.Material)
		result string
		check  string
		detail string
	}{
		{"natively", &fakeSource{snapshot, map[string]verifier.SourceResult{string(sealed): good}}, nil, verifier.Valid, verifier.CheckNativeResults, "re-derived natively"},
		{"without fragments in the material", &fakeSource{snapshot, map[string]verifier.SourceResult{string(sealed): good}},
			func(m *verifier.Material) { m.Fragments = nil }, verifier.Valid, verifier.CheckFragments, "native verifier frames"},
		{"refused", &fakeSource{snapshot, nil}, nil, string(receipts.CodeNativeSourceResultMismatch), verifier.CheckNativeResults, "dek_missing"},
		{"another result", &fakeSource{snapshot, map[string]verifier.SourceResult{string(sealed): trusted}}, nil,
			string(receipts.CodeNativeSourceResultMismatch), verifier.CheckNativeResults, `says "trusted"`},
		{"another fragment", &fakeSource{snapshot, map[string]verifier.SourceResult{string(sealed): otherFrame}}, nil,
			string(receipts.CodeFragmentDigestMismatch), verifier.CheckFragments, "native verifier frames"},
		{"another keyring", &fakeSource{[]byte("other"), map[string]verifier.SourceResult{string(sealed): good}}, nil,
			string(receipts.CodeTrustSnapshotDigestMismatch), verifier.CheckTrustSnapshot, "another keyring"},
		{"material snapshot not the verifier's", &fakeSource{snapshot, map[string]verifier.SourceResult{string(sealed): good}},
			func(m *verifier.Material) { m.TrustSnapshot = []byte("x") }, string(receipts.CodeTrustSnapshotDigestMismatch), verifier.CheckTrustSnapshot, "material's trust-snapshot"},
		{"no source objects", &fakeSource{snapshot, nil}, func(m *verifier.Material) { m.SourceObjects = nil }, verifier.Valid, verifier.CheckNativeResults, "no source objects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := material()
			if tc.m != nil {
				tc.m(m)
			}
			rep, err := verifier.VerifyProjection(context.Background(), r.Canonical(), verifier.ProjectionOptions{Pins: pins, Material: m, Time: now, Source: tc.src})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Result != tc.result || rep.NativeSource != receipts.SourceProfileApertoMemory+": a fake" {
				t.Errorf("result %s, native %q, want %s\n%s", rep.Result, rep.NativeSource, tc.result, rep.Summary())
			}
			for _, c := range rep.Checks {
				if c.Check == tc.check && !strings.Contains(c.Detail, tc.detail) {
					t.Errorf("check %s: %q does not say %q", c.Check, c.Detail, tc.detail)
				}
			}
			if tc.name == "no source objects" && rep.VerificationScope != verifier.ScopePartial {
				t.Errorf("scope %s", rep.VerificationScope)
			}
		})
	}
}
