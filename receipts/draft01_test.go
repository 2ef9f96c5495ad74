package receipts

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Tests of the rules draft -01 adds to the record (docs/profile.md, "Draft
// -01"). The 36 source-result combinations are judged against the rule
// written out here, not against a list of accepted cases.

// sourceResult is one combination of what a delivered entry reports.
type sourceResult struct {
	trust, authorship string
	key, custody      bool
}

func (s sourceResult) String() string {
	return fmt.Sprintf("%s/%s/key=%v/custody=%v", s.trust, s.authorship, s.key, s.custody)
}

// allSourceResults is derived_trust × authorship (the draft's value sets,
// section 5.2) × author key present or null × custody_present.
func allSourceResults() []sourceResult {
	var out []sourceResult
	for _, trust := range DerivedTrustValues {
		for _, authorship := range AuthorshipValues {
			for _, key := range []bool{true, false} {
				for _, custody := range []bool{true, false} {
					out = append(out, sourceResult{trust, authorship, key, custody})
				}
			}
		}
	}
	return out
}

// draft01Allows is section 4.3 of draft -01 with the interoperating
// verifier's reading of "verified content": attested needs custody;
// unverified is unknown with no key; self and trusted name an author.
func draft01Allows(s sourceResult) bool {
	if s.authorship == "attested" && !s.custody {
		return false
	}
	if s.trust == "unverified" {
		return s.authorship == "unknown" && !s.key
	}
	return s.authorship != "unknown" && s.key
}

// resignRecord edits the decoded record and signs it again with the
// interop adapter key, as a producer that wrote the edited record would.
func resignRecord(t testing.TB, record []byte, edit func(m map[string]any)) []byte {
	t.Helper()
	return resignRecordWith(t, emiliaKey(), record, edit)
}

// resignRecordWith is resignRecord under another key.
func resignRecordWith(t testing.TB, key ed25519.PrivateKey, record []byte, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(record))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	proof := m["proof"].(map[string]any)
	delete(m, "proof")
	raw, _ := json.Marshal(m)
	body, err := Canonicalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	proof["signature_b64u"] = EncodeB64u(ed25519.Sign(key, append([]byte(projectionDomain+"\x00"), body...)))
	m["proof"] = proof
	out, _ := json.Marshal(m)
	return out
}

func setSourceResult(entry map[string]any, s sourceResult) {
	entry["derived_trust"], entry["authorship"], entry["custody_present"] = s.trust, s.authorship, s.custody
	entry["author_key_id_b64u"] = nil
	if s.key {
		entry["author_key_id_b64u"] = "0FMJy9O1Xzs"
	}
}

func TestSourceResultCombinations(t *testing.T) {
	fx := loadFixture(t)
	combos := allSourceResults()
	if len(combos) != 36 {
		t.Fatalf("%d combinations, want 36", len(combos))
	}
	for _, pos := range []int{0, 1} {
		allowed := 0
		for _, s := range combos {
			rec := resignRecord(t, fx.record, func(m map[string]any) {
				setSourceResult(m["delivered"].([]any)[pos].(map[string]any), s)
			})
			err := verifyRecord(rec, fx.pins, fx.now)
			if draft01Allows(s) {
				allowed++
				if err != nil {
					t.Errorf("delivered[%d] %s: %v, want it accepted", pos, s, err)
				}
				continue
			}
			var e *Error
			if ErrorCode(err) != CodeSourceResultInvalid || !errorsAs(err, &e) || !strings.HasPrefix(e.Member, fmt.Sprintf("delivered[%d].", pos)) {
				t.Errorf("delivered[%d] %s: %v, want source_result_invalid at delivered[%d]", pos, s, err, pos)
			}
		}
		if allowed != 8 {
			t.Errorf("delivered[%d]: the rule allows %d of 36, want 8", pos, allowed)
		}
	}
}

func errorsAs(err error, e **Error) bool { return errors.As(err, e) }

// TestSourceProfileRules: the record-level rules of the named source
// profiles — ApertoMemory's eight-byte key identifiers (draft -01 sections
// 5.1, 5.2) and this profile's plain files.
func TestSourceProfileRules(t *testing.T) {
	fx := loadFixture(t)
	edit := func(f func(m map[string]any, e map[string]any)) []byte {
		return resignRecord(t, fx.record, func(m map[string]any) { f(m, m["delivered"].([]any)[0].(map[string]any)) })
	}
	plain := func(m, e map[string]any) {
		m["source_profile"] = SourceProfilePlain
		m["selection_context"].(map[string]any)["context_frame_profile"] = ContextFramePlain
		for _, x := range m["delivered"].([]any) {
			x := x.(map[string]any)
			setSourceResult(x, sourceResult{"unverified", "unknown", false, false})
			x["object"].(map[string]any)["format_version"] = json.Number("1")
		}
	}
	cases := []struct {
		name   string
		record []byte
		member string // "" when accepted
	}{
		{"ApertoMemory key of 7 bytes", edit(func(_, e map[string]any) { e["author_key_id_b64u"] = EncodeB64u(make([]byte, 7)) }), "delivered[0].author_key_id_b64u"},
		{"ApertoMemory key of 9 bytes", edit(func(_, e map[string]any) { e["author_key_id_b64u"] = EncodeB64u(make([]byte, 9)) }), "delivered[0].author_key_id_b64u"},
		{"ApertoMemory key of 32 bytes", edit(func(_, e map[string]any) { e["author_key_id_b64u"] = EncodeB64u(make([]byte, 32)) }), "delivered[0].author_key_id_b64u"},
		{"ApertoMemory key of 8 bytes", edit(func(_, e map[string]any) { e["author_key_id_b64u"] = EncodeB64u([]byte("8 bytes!")) }), ""},
		{"other profile, 7-byte key", edit(func(m, e map[string]any) {
			m["source_profile"] = "urn:example:other-source"
			e["author_key_id_b64u"] = EncodeB64u(make([]byte, 7))
		}), ""},
		{"plain files, unverified", edit(plain), ""},
		{"plain file reported trusted", edit(func(m, e map[string]any) {
			plain(m, e)
			setSourceResult(e, sourceResult{"trusted", "signed", true, false})
		}), "delivered[0].derived_trust"},
		{"plain file with custody", edit(func(m, e map[string]any) { plain(m, e); e["custody_present"] = true }), "delivered[0].custody_present"},
		{"plain file of format 2", edit(func(m, e map[string]any) {
			plain(m, e)
			e["object"].(map[string]any)["format_version"] = json.Number("2")
		}), "delivered[0].object.format_version"},
		{"plain file self, no author (the old sign projection)", edit(func(m, e map[string]any) {
			plain(m, e)
			setSourceResult(e, sourceResult{"self", "unknown", false, false})
		}), "delivered[0].authorship"},
	}
	for _, tc := range cases {
		err := verifyRecord(tc.record, fx.pins, fx.now)
		switch {
		case tc.member == "" && err != nil:
			t.Errorf("%s: %v, want accepted", tc.name, err)
		case tc.member != "":
			var e *Error
			if !errorsAs(err, &e) || e.Code != CodeSourceResultInvalid || e.Member != tc.member {
				t.Errorf("%s: %v, want source_result_invalid at %s", tc.name, err, tc.member)
			}
		}
	}
}

// TestSourceResultRuleOrder: the source-result rule comes after positions
// and before the exclusion count and the nonclaims, whatever else is wrong.
func TestSourceResultRuleOrder(t *testing.T) {
	fx := loadFixture(t)
	bad := func(m map[string]any) {
		setSourceResult(m["delivered"].([]any)[1].(map[string]any), sourceResult{"self", "unknown", false, false})
	}
	cases := []struct {
		name string
		edit func(m map[string]any)
		want Code
	}{
		{"with a reordered entry", func(m map[string]any) {
			bad(m)
			d := m["delivered"].([]any)
			d[0], d[1] = d[1], d[0]
		}, CodeDeliveredOrderInvalid},
		{"with a wrong total", func(m map[string]any) { bad(m); m["exclusions"].(map[string]any)["total"] = json.Number("9") }, CodeSourceResultInvalid},
		{"with a nonclaim upgraded", func(m map[string]any) { bad(m); m["nonclaims"].(map[string]any)["model_use"] = "ESTABLISHED" }, CodeSourceResultInvalid},
		{"with an unknown member", func(m map[string]any) { bad(m); m["extension"] = true }, CodeRecordInvalid},
	}
	for _, tc := range cases {
		if got := ErrorCode(verifyRecord(resignRecord(t, fx.record, tc.edit), fx.pins, fx.now)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestNewProjectionRefusesWhatVerifiersRefuse: the producer signs no
// inconsistent source result and no projection that is not UTF-8.
func TestNewProjectionRefusesWhatVerifiersRefuse(t *testing.T) {
	_, priv, _ := GenerateKey()
	created := time.Date(2026, 11, 30, 12, 0, 1, 0, time.UTC)
	input := func(frags ...Fragment) *ProjectionInput {
		return &ProjectionInput{
			SourceProfile: SourceProfilePlain, ProjectionID: "urn:memory-projection:test:2",
			CreatedAt: created, AdapterID: "urn:memory-adapter:test", KeyID: "k1",
			RecallRequestDigest: Digest(nil), SelectionPolicyDigest: Digest(nil), TrustSnapshotDigest: Digest(nil),
			TrustEvaluatedAt: created, ContextFrameProfile: ContextFramePlain, Fragments: frags,
		}
	}
	plain := func(b string) Fragment {
		return Fragment{FormatVersion: 1, SealedObjectDigest: Digest([]byte(b)), Bytes: []byte(b), DerivedTrust: "unverified", Authorship: "unknown"}
	}
	if _, _, err := NewProjection(input(plain("one\n"), plain("zwei\u00e9\n")), priv); err != nil {
		t.Fatalf("plain files: %v", err)
	}
	selfNoAuthor := plain("x\n")
	selfNoAuthor.DerivedTrust = "self"
	if _, _, err := NewProjection(input(selfNoAuthor), priv); ErrorCode(err) != CodeSourceResultInvalid {
		t.Errorf("self without an author: %v, want source_result_invalid", err)
	}
	if _, _, err := NewProjection(input(plain("ok\n"), plain("\xff\xfe")), priv); err == nil || !strings.Contains(err.Error(), "fragment 1 is not UTF-8") {
		t.Errorf("binary fragment: %v", err)
	}
	// The rule is on the projection: a code point split across two
	// fragments still makes UTF-8 projection bytes.
	if _, _, err := NewProjection(input(plain("\xc3"), plain("\xa9")), priv); err != nil {
		t.Errorf("a code point split across fragments, whole in the projection: %v", err)
	}
}
