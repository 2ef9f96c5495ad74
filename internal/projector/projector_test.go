package projector

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/apertomemory"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
)

const refPass = "memtrail reference vault"

const (
	policyVerified = `{"selection_policy":"urn:memtrail:selection-policy:v1","eligible_trust":["self","trusted"],"max_bytes":100000}`
	policyAll      = `{"selection_policy":"urn:memtrail:selection-policy:v1","eligible_trust":["self","trusted","unverified"],"max_bytes":100000}`
)

var testKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))

func testPins() []*receipts.AdapterPin {
	end := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	return []*receipts.AdapterPin{{AdapterID: "urn:memtrail:adapter:test", KeyID: "test-key", PublicKey: testKey.Public().(ed25519.PublicKey),
		Status: "active", ValidFrom: time.Unix(0, 0).UTC(), ValidTo: &end}}
}

func readReference(t *testing.T, name string) (*apertomemory.Container, *apertomemory.Identity) {
	t.Helper()
	c, err := apertomemory.ReadContainerFile("../apertomemory/testdata/reference/" + name + ".amem")
	if err != nil {
		t.Fatal(err)
	}
	id, err := apertomemory.DeriveIdentity([]byte(refPass), c.Salt[:])
	if err != nil {
		t.Fatal(err)
	}
	return c, id
}

func project(t *testing.T, c *apertomemory.Container, id *apertomemory.Identity, policy string) *Result {
	t.Helper()
	res, err := Project(&Input{Container: c, Identity: id, Request: []byte(`{"query":"test"}`), Policy: []byte(policy),
		AdapterID: "urn:memtrail:adapter:test", KeyID: "test-key", Key: testKey, ProjectionID: "urn:uuid:" + fmt.Sprint(time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// nativeVerify verifies res's record with its material under the native
// verifier of the vault c opened for verification.
func nativeVerify(t *testing.T, c *apertomemory.Container, id *apertomemory.Identity, record []byte, m *verifier.Material) *verifier.ProjectionReport {
	t.Helper()
	v, err := c.OpenWithIdentity(id, &apertomemory.OpenOptions{AllowUnverified: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := verifier.VerifyProjection(context.Background(), record, verifier.ProjectionOptions{Pins: testPins(), Material: m,
		Time: time.Now(), Source: &NativeVerifier{Vault: v, Name: "test.amem"}})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestProjectReferenceVaults projects from the containers the reference
// implementation wrote (self, attested, unverified, forged and
// format_version 1 objects) under a policy of verified objects and under
// the opt-in to unverified ones: the right objects are delivered, every
// other is counted under its one reason, and the record verifies natively
// with every step run.
func TestProjectReferenceVaults(t *testing.T) {
	type counts struct{ delivered, auth, schema, policy, limit int64 }
	for _, tc := range []struct {
		vault, policy string
		want          counts
		trusts        string // the delivered entries' trust, in projection order
	}{
		{"self", policyVerified, counts{4, 0, 0, 0, 0}, "self self self self"},
		{"attested", policyVerified, counts{4, 0, 0, 1, 0}, "trusted self self trusted"},
		{"attested", policyAll, counts{5, 0, 0, 0, 0}, "trusted unverified self self trusted"},
		{"unverified", policyVerified, counts{1, 2, 0, 1, 0}, "self"},
		{"unverified", policyAll, counts{4, 0, 0, 0, 0}, "self unverified unverified unverified"},
		{"forged", policyVerified, counts{2, 4, 0, 2, 0}, "self self"},
		{"forged", policyAll, counts{4, 4, 0, 0, 0}, "unverified unverified self self"},
		{"legacy-v1", policyVerified, counts{0, 2, 0, 0, 0}, ""},
		{"legacy-v1", policyAll, counts{2, 0, 0, 0, 0}, "unverified unverified"},
	} {
		name := tc.vault + "/verified"
		if tc.policy == policyAll {
			name = tc.vault + "/all"
		}
		t.Run(name, func(t *testing.T) {
			c, id := readReference(t, tc.vault)
			res := project(t, c, id, tc.policy)
			r := res.Record
			ex := r.Exclusions.ByReason
			got := counts{int64(len(r.Delivered)), ex[ReasonAuthenticationFailed], ex[ReasonSchemaInvalid], ex[ReasonPolicyFiltered], ex[ReasonContextLimit]}
			if got != tc.want {
				t.Errorf("delivered, authentication_failed, schema_invalid, policy_filtered, context_limit = %v, want %v", got, tc.want)
			}
			if n := int64(len(r.Delivered)) + r.Exclusions.Total; n != int64(len(c.Objects)) {
				t.Errorf("delivered + excluded = %d, the vault has %d objects", n, len(c.Objects))
			}
			var trusts []string
			for _, e := range r.Delivered {
				trusts = append(trusts, e.DerivedTrust)
			}
			if s := strings.Join(trusts, " "); s != tc.trusts {
				t.Errorf("delivered trust = %q, want %q", s, tc.trusts)
			}
			if r.SourceProfile != receipts.SourceProfileApertoMemory || r.SelectionContext.ContextFrameProfile != receipts.ContextFrameApertoMemory {
				t.Errorf("profiles %q, %q", r.SourceProfile, r.SelectionContext.ContextFrameProfile)
			}
			if r.SelectionContext.TrustSnapshotDigest != apertomemory.TrustSnapshotDigest(res.Material.TrustSnapshot) {
				t.Errorf("trust_snapshot_digest does not commit to the material's snapshot")
			}
			rep := nativeVerify(t, c, id, r.Canonical(), res.Material)
			if !rep.Valid() || rep.VerificationScope != verifier.ScopeFull {
				t.Fatalf("native verification: %s", rep.Summary())
			}
			for _, ch := range rep.Checks {
				if ch.Outcome != verifier.Passed && ch.Check != verifier.CheckSingleUse && ch.Check != verifier.CheckProfiles &&
					ch.Check != verifier.CheckTrustFreshness && ch.Check != verifier.CheckRecordFreshness {
					t.Errorf("check %s: %s (%s)", ch.Check, ch.Outcome, ch.Detail)
				}
			}
		})
	}
}

// writeVault builds a vault with objects whose ranking and limits are
// known. Contents are padded so that fragment lengths are easy to reason
// about.
func writeVault(t *testing.T) (*apertomemory.Container, *apertomemory.Identity, map[string]int) {
	t.Helper()
	pass := []byte("projector test")
	w, err := apertomemory.NewWriter(pass)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"work", "home"} {
		if _, err := w.AddScope(s); err != nil {
			t.Fatal(err)
		}
	}
	_, thirdPriv, _ := ed25519.GenerateKey(nil)
	if _, err := w.Accept(thirdPriv.Public().(ed25519.PublicKey)); err != nil {
		t.Fatal(err)
	}
	_, strangerPriv, _ := ed25519.GenerateKey(nil)
	index := map[string]int{}
	add := func(name, scope string, typ apertomemory.MemType, conf float64, created, updated uint64, content string, signer ed25519.PrivateKey) {
		m := &apertomemory.Memory{Type: typ, Content: content, Confidence: conf, Tool: "projector-test/1", Created: created, Updated: updated}
		var err error
		if signer == nil {
			_, err = w.Seal(scope, m)
		} else {
			_, err = w.SealBy(scope, m, signer)
		}
		if err != nil {
			t.Fatal(err)
		}
		index[name] = len(index)
	}
	add("a", "work", apertomemory.Semantic, 0.9, 100, 0, "a: older, confident", nil)
	add("b", "work", apertomemory.Semantic, 0.9, 200, 0, "b: newer, confident", nil)
	add("c", "work", apertomemory.Semantic, 0.5, 300, 0, "c: "+strings.Repeat("long ", 100), nil)
	add("d", "work", apertomemory.Procedural, 0.5, 250, 400, "d: updated latest", thirdPriv)
	add("e", "home", apertomemory.Episodic, 1.0, 500, 0, "e: other scope", nil)
	add("f", "work", apertomemory.Semantic, 1.0, 600, 0, "f: a stranger's", strangerPriv)
	c := w.Container()
	// A sealed object that is not of the format's shape.
	c.Objects = append(c.Objects, []byte{0xa0})
	index["malformed"] = len(index)
	c, err = apertomemory.ParseContainer(c.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	return c, w.Identity(), index
}

// TestProjectRankingAndLimits checks the order (confidence, then recency,
// then digest), the byte and object limits, the scope and mem-type
// filters and that each object counts under exactly one reason.
func TestProjectRankingAndLimits(t *testing.T) {
	c, id, index := writeVault(t)
	content := func(res *Result) string {
		var s []string
		for _, i := range res.Delivered {
			for name, j := range index {
				if i == j {
					s = append(s, name)
				}
			}
		}
		return strings.Join(s, " ")
	}
	reasons := func(res *Result) map[string]string {
		out := map[string]string{}
		for _, x := range res.Excluded {
			for name, j := range index {
				if x.Index == j {
					out[name] = x.Reason
				}
			}
		}
		return out
	}
	base := `"selection_policy":"urn:memtrail:selection-policy:v1"`
	for _, tc := range []struct {
		name, policy, order string
		excluded            map[string]string
	}{
		{"everything", `{` + base + `,"eligible_trust":["self","trusted"],"max_bytes":100000}`, "e b a d c",
			map[string]string{"f": ReasonAuthenticationFailed, "malformed": ReasonSchemaInvalid}},
		{"opt-in", `{` + base + `,"eligible_trust":["self","trusted","unverified"],"max_bytes":100000}`, "f e b a d c",
			map[string]string{"malformed": ReasonSchemaInvalid}},
		{"bytes: c does not fit, d after it does", `{` + base + `,"eligible_trust":["self","trusted"],"max_bytes":500}`, "e b a d",
			map[string]string{"c": ReasonContextLimit, "f": ReasonAuthenticationFailed, "malformed": ReasonSchemaInvalid}},
		{"objects", `{` + base + `,"eligible_trust":["self","trusted"],"max_bytes":100000,"max_objects":2}`, "e b",
			map[string]string{"a": ReasonContextLimit, "c": ReasonContextLimit, "d": ReasonContextLimit, "f": ReasonAuthenticationFailed, "malformed": ReasonSchemaInvalid}},
		{"scope and type", `{` + base + `,"eligible_trust":["self","trusted"],"max_bytes":100000,"scopes":["work"],"mem_types":["semantic"]}`, "b a c",
			map[string]string{"d": ReasonPolicyFiltered, "e": ReasonPolicyFiltered, "f": ReasonAuthenticationFailed, "malformed": ReasonSchemaInvalid}},
		{"self only", `{` + base + `,"eligible_trust":["self"],"max_bytes":100000}`, "e b a c",
			map[string]string{"d": ReasonPolicyFiltered, "f": ReasonAuthenticationFailed, "malformed": ReasonSchemaInvalid}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := project(t, c, id, tc.policy)
			if got := content(res); got != tc.order {
				t.Errorf("delivered %q, want %q", got, tc.order)
			}
			got := reasons(res)
			if fmt.Sprint(got) != fmt.Sprint(tc.excluded) {
				t.Errorf("excluded %v, want %v", got, tc.excluded)
			}
			if len(res.Delivered)+len(res.Excluded) != len(c.Objects) {
				t.Errorf("%d delivered and %d excluded of %d objects", len(res.Delivered), len(res.Excluded), len(c.Objects))
			}
			if int64(len(res.Projection)) > 100000 || (strings.Contains(tc.name, "bytes") && len(res.Projection) > 500) {
				t.Errorf("projection is %d bytes", len(res.Projection))
			}
			rep := nativeVerify(t, c, id, res.Record.Canonical(), res.Material)
			if !rep.Valid() || rep.VerificationScope != verifier.ScopeFull {
				t.Errorf("native verification: %s", rep.Summary())
			}
		})
	}
}

// resign returns the record of res with entry i changed by f, signed
// again by the adapter's key.
func resign(t *testing.T, res *Result, i int, f func(*receipts.Fragment)) []byte {
	t.Helper()
	r := res.Record
	var frags []receipts.Fragment
	for j, e := range r.Delivered {
		fr := receipts.Fragment{FormatVersion: e.FormatVersion, SealedObjectDigest: e.SealedObjectDigest, Bytes: res.Material.Fragments[j],
			DerivedTrust: e.DerivedTrust, Authorship: e.Authorship, AuthorKeyIDB64u: e.AuthorKeyIDB64u, CustodyPresent: e.CustodyPresent}
		if j == i {
			f(&fr)
		}
		frags = append(frags, fr)
	}
	sc := r.SelectionContext
	out, _, err := receipts.NewProjection(&receipts.ProjectionInput{SourceProfile: r.SourceProfile, ProjectionID: r.ProjectionID + ":altered",
		CreatedAt: r.CreatedAt, AdapterID: r.Adapter.ID, KeyID: r.Adapter.KeyID, RecallRequestDigest: sc.RecallRequestDigest,
		SelectionPolicyDigest: sc.SelectionPolicyDigest, TrustSnapshotDigest: sc.TrustSnapshotDigest, TrustEvaluatedAt: sc.TrustEvaluatedAt,
		ContextFrameProfile: sc.ContextFrameProfile, Fragments: frags, Exclusions: r.Exclusions.ByReason}, testKey)
	if err != nil {
		t.Fatal(err)
	}
	return out.Canonical()
}

// TestNativeVerificationRefuses alters what a record says of the vault and
// signs it again: only the native re-derivation can tell.
func TestNativeVerificationRefuses(t *testing.T) {
	c, id := readReference(t, "attested")
	res := project(t, c, id, policyVerified)
	if res.Record.Delivered[3].DerivedTrust != "trusted" || res.Record.Delivered[3].Authorship != "signed" {
		t.Fatalf("entry 3 is %+v", res.Record.Delivered[3])
	}
	owner := id.KeyID().B64u()
	for _, tc := range []struct {
		name string
		alt  func(*receipts.Fragment)
		code receipts.Code
	}{
		// A third party's memory relabelled as the owner's own: a
		// consistent source result, a valid signature, material whose
		// native results say the same, and still not what the vault says.
		{"trusted relabelled self", func(f *receipts.Fragment) { f.DerivedTrust = "self"; f.AuthorKeyIDB64u = &owner }, receipts.CodeNativeSourceResultMismatch},
		{"custody claimed", func(f *receipts.Fragment) { f.CustodyPresent = true }, receipts.CodeNativeSourceResultMismatch},
		{"fragment relabelled", func(f *receipts.Fragment) {
			f.Bytes = bytes.Replace(f.Bytes, []byte("trust=trusted"), []byte("trust=self"), 1)
		}, receipts.CodeFragmentDigestMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			record := resign(t, res, 3, tc.alt)
			r, err := receipts.ParseProjectionRecord(record)
			if err != nil {
				t.Fatal(err)
			}
			m := *res.Material
			m.NativeResults = nil
			// The material agrees with the altered record everywhere it can.
			m.Fragments = append([][]byte(nil), m.Fragments...)
			f := receipts.Fragment{Bytes: m.Fragments[3]}
			tc.alt(&f)
			m.Fragments[3] = f.Bytes
			var proj []byte
			for _, b := range m.Fragments {
				proj = append(proj, b...)
			}
			m.Projection = proj
			if r.Projection.Digest != receipts.Digest(proj) {
				t.Fatal("altered material does not match the altered record")
			}
			// Without the vault, the record and its material verify.
			plain, err := verifier.VerifyProjection(context.Background(), record, verifier.ProjectionOptions{Pins: testPins(), Material: &m, Time: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if !plain.Valid() {
				t.Fatalf("without the vault: %s", plain.Summary())
			}
			rep := nativeVerify(t, c, id, record, &m)
			if rep.Result != string(tc.code) {
				t.Errorf("natively: %s, want %s\n%s", rep.Result, tc.code, rep.Summary())
			}
		})
	}
}

// TestNativeTrustSnapshotMismatch verifies a record against the vault
// after its keyring changed: the third party's key is no longer accepted.
func TestNativeTrustSnapshotMismatch(t *testing.T) {
	c, id := readReference(t, "attested")
	res := project(t, c, id, policyVerified)
	changed := *c
	changed.KnownKeys = nil
	rep := nativeVerify(t, &changed, id, res.Record.Canonical(), res.Material)
	if rep.Result != string(receipts.CodeTrustSnapshotDigestMismatch) {
		t.Fatalf("result %s, want trust_snapshot_digest_mismatch\n%s", rep.Result, rep.Summary())
	}
	// Under the smaller keyring the trusted objects are no longer what the
	// record says either.
	var native verifier.Check
	for _, ch := range rep.Checks {
		if ch.Check == verifier.CheckNativeResults {
			native = ch
		}
	}
	if native.Code != receipts.CodeNativeSourceResultMismatch {
		t.Errorf("native results: %+v", native)
	}
}

// TestNativeVerifierNeedsOwnProfile: a plain-file record is not opened as
// an ApertoMemory one.
func TestNativeVerifierNeedsOwnProfile(t *testing.T) {
	c, id := readReference(t, "self")
	b := []byte("plain file\n")
	r, proj, err := receipts.NewProjection(&receipts.ProjectionInput{SourceProfile: receipts.SourceProfilePlain, ProjectionID: "urn:p:plain",
		CreatedAt: time.Now(), AdapterID: "urn:memtrail:adapter:test", KeyID: "test-key", RecallRequestDigest: receipts.Digest(nil),
		SelectionPolicyDigest: receipts.Digest(nil), TrustSnapshotDigest: receipts.Digest(nil), TrustEvaluatedAt: time.Now(),
		ContextFrameProfile: receipts.ContextFramePlain, Fragments: []receipts.Fragment{{FormatVersion: 1, SealedObjectDigest: receipts.Digest(b),
			Bytes: b, DerivedTrust: "unverified", Authorship: "unknown"}}}, testKey)
	if err != nil {
		t.Fatal(err)
	}
	rep := nativeVerify(t, c, id, r.Canonical(), &verifier.Material{SourceObjects: [][]byte{b}, Fragments: [][]byte{b}, Projection: proj})
	if rep.Result != string(receipts.CodeProfileMismatch) {
		t.Errorf("result %s, want profile_mismatch\n%s", rep.Result, rep.Summary())
	}
}

func TestParsePolicy(t *testing.T) {
	good := `{"selection_policy":"urn:memtrail:selection-policy:v1","eligible_trust":["trusted","self"],"max_bytes":10,"max_objects":3,"scopes":["w"],"mem_types":["episodic"]}`
	p, err := ParsePolicy([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(p.EligibleTrust, p.MaxBytes, p.MaxObjects, p.Scopes, p.MemTypes, p.AllowsUnverified()) != "[trusted self] 10 3 [w] [episodic] false" {
		t.Errorf("ParsePolicy(good) = %+v", p)
	}
	head := `"selection_policy":"urn:memtrail:selection-policy:v1"`
	for _, bad := range []string{
		``, `[]`, `{}`,
		`{"selection_policy":"urn:other","eligible_trust":["self"],"max_bytes":10}`,
		`{` + head + `,"eligible_trust":[],"max_bytes":10}`,
		`{` + head + `,"eligible_trust":["self","self"],"max_bytes":10}`,
		`{` + head + `,"eligible_trust":["third-party"],"max_bytes":10}`,
		`{` + head + `,"eligible_trust":"self","max_bytes":10}`,
		`{` + head + `,"eligible_trust":["self"],"max_bytes":0}`,
		`{` + head + `,"eligible_trust":["self"],"max_bytes":1.5}`,
		`{` + head + `,"eligible_trust":["self"],"max_bytes":"10"}`,
		`{` + head + `,"eligible_trust":["self"],"max_bytes":67108865}`,
		`{` + head + `,"eligible_trust":["self"]}`,
		`{` + head + `,"eligible_trust":["self"],"max_bytes":10,"max_objects":0}`,
		`{` + head + `,"eligible_trust":["self"],"max_bytes":10,"max_objects":65536}`,
		`{` + head + `,"eligible_trust":["self"],"max_bytes":10,"scopes":[""]}`,
		`{` + head + `,"eligible_trust":["self"],"max_bytes":10,"mem_types":["dream"]}`,
		`{` + head + `,"eligible_trust":["self"],"max_bytes":10,"min_confidence":1}`,
		`{` + head + `,"eligible_trust":["self"],"max_bytes":10,"max_bytes":11}`,
	} {
		if _, err := ParsePolicy([]byte(bad)); !errors.Is(err, ErrPolicy) {
			t.Errorf("ParsePolicy(%s) = %v, want ErrPolicy", bad, err)
		}
	}
}

func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(policyVerified))
	f.Add([]byte(policyAll))
	f.Add([]byte(`{"selection_policy":"urn:memtrail:selection-policy:v1","eligible_trust":["self"],"max_bytes":10,"max_objects":3,"scopes":["w"],"mem_types":["episodic"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePolicy(data)
		if err != nil {
			if !errors.Is(err, ErrPolicy) {
				t.Fatalf("error %v does not wrap ErrPolicy", err)
			}
			return
		}
		if len(p.EligibleTrust) == 0 || p.MaxBytes < 1 || p.MaxBytes > MaxProjectionBytes || p.MaxObjects < 0 || p.MaxObjects > receipts.MaxDelivered {
			t.Fatalf("accepted an out-of-range policy %+v", p)
		}
	})
}
