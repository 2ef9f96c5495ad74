package verifier_test

import (
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
)

// The rules draft -01 adds, through the whole §8 verifier (docs/profile.md,
// "Draft -01").

func checkOf(rep *verifier.ProjectionReport, name string) verifier.Check {
	for _, c := range rep.Checks {
		if c.Check == name {
			return c
		}
	}
	return verifier.Check{}
}

// TestSourceResultCombinations: each of the 36 combinations of
// derived_trust × authorship × author key × custody, set on the interop
// record's first entry and signed again, with native results in the
// material that agree with it (so only the record's own rule decides). The
// verifier accepts exactly those the -01 rule allows and refuses the rest
// with source_result_invalid, in the source_results check, before the key
// and the signature are judged.
func TestSourceResultCombinations(t *testing.T) {
	fx := loadInterop(t)
	allowed := 0
	for _, s := range gen.SourceResults() {
		r := fx.base()
		rec, err := gen.Resign(fx.record, emiliaKey(), func(m map[string]any) {
			s.Set(m["delivered"].([]any)[0].(map[string]any))
		})
		if err != nil {
			t.Fatal(err)
		}
		r.record = rec
		m := *fx.material
		m.NativeResults = append([]verifier.NativeResult(nil), fx.material.NativeResults...)
		nr := &m.NativeResults[0]
		nr.DerivedTrust, nr.Authorship, nr.CustodyPresent, nr.AuthorKeyIDB64u = s.DerivedTrust, s.Authorship, s.Custody, nil
		if s.AuthorKey {
			k := gen.AuthorKey
			nr.AuthorKeyIDB64u = &k
		}
		r.material = &m
		rep := r.verify(t)
		c := checkOf(rep, verifier.CheckSourceResults)
		if s.AllowedByDraft01() {
			allowed++
			if !rep.Valid() || c.Outcome != verifier.Passed {
				t.Errorf("%s: %s, want VALID\n%s", s, rep.Result, rep.Summary())
			}
			continue
		}
		if rep.Result != string(receipts.CodeSourceResultInvalid) || c.Outcome != verifier.Failed || c.Code != receipts.CodeSourceResultInvalid {
			t.Errorf("%s: %s (check %+v), want source_result_invalid", s, rep.Result, c)
		}
		if sig := checkOf(rep, verifier.CheckSignature); sig.Outcome != verifier.NotRun {
			t.Errorf("%s: signature check %s after a parse refusal, want not_run", s, sig.Outcome)
		}
	}
	if allowed != 8 {
		t.Errorf("the rule allows %d of 36, want 8", allowed)
	}
}

// TestProjectionEncoding: projection bytes that are not UTF-8 are refused
// (projection_encoding_invalid) even when every digest matches — with the
// projection bytes, and with the fragments alone.
func TestProjectionEncoding(t *testing.T) {
	fx := loadInterop(t)
	frag0 := fx.material.Fragments[0]
	bad := []byte("[ApertoMemory trust=self authorship=signed author_key=Y8HonACcWtc custody=false]\n\xff\xfe\n[/ApertoMemory]\n")
	projection := append(append([]byte{}, frag0...), bad...)
	rec, err := gen.Resign(fx.record, emiliaKey(), func(m map[string]any) {
		m["delivered"].([]any)[1].(map[string]any)["context_fragment_digest"] = receipts.Digest(bad)
		p := m["projection"].(map[string]any)
		p["byte_length"], p["digest"] = len(projection), receipts.Digest(projection)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, withProjection := range []bool{true, false} {
		r := fx.base()
		r.record = rec
		m := *fx.material
		m.Fragments = [][]byte{frag0, bad}
		m.Projection = nil
		if withProjection {
			m.Projection = projection
		}
		r.material = &m
		rep := r.verify(t)
		c := checkOf(rep, verifier.CheckProjectionBytes)
		if rep.Result != string(receipts.CodeProjectionEncodingInvalid) || c.Code != receipts.CodeProjectionEncodingInvalid || c.Member != "projection.encoding" {
			t.Errorf("projection bytes given: %v: %s %+v, want projection_encoding_invalid", withProjection, rep.Result, c)
		}
		if f := checkOf(rep, verifier.CheckFragments); f.Outcome != verifier.Passed {
			t.Errorf("the fragments match their digests, but the check says %+v", f)
		}
	}
}

// TestTrustIntervalBeforeCreatedAt: the trust evaluation may be no longer
// before created_at than max_trust_age (draft -01 section 4.1), even when
// it is recent enough at the verification time — here the record is dated
// within the clock skew ahead of that time.
func TestTrustIntervalBeforeCreatedAt(t *testing.T) {
	fx := loadInterop(t)
	// trust_evaluated_at stays 17:00:00; created_at moves 330 s on.
	rec, err := gen.Resign(fx.record, emiliaKey(), func(m map[string]any) { m["created_at"] = "2026-07-29T17:05:30.000Z" })
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		at   string
		want string
	}{
		// 290 s after the trust evaluation, created_at 40 s ahead (within
		// the skew), but 330 s between the two.
		{"2026-07-29T17:04:50.000Z", "trust_snapshot_stale"},
	} {
		r := fx.base()
		r.record = rec
		at, _ := receipts.ParseTimestamp(tc.at)
		r.policy.VerificationTime = &at
		rep := r.verify(t)
		if rep.Result != tc.want {
			t.Errorf("at %s: %s, want %s\n%s", tc.at, rep.Result, tc.want, rep.Summary())
		}
	}
	// Within the bound, at the same verification time, it verifies.
	rec, _ = gen.Resign(fx.record, emiliaKey(), func(m map[string]any) { m["created_at"] = "2026-07-29T17:05:00.000Z" })
	r := fx.base()
	r.record = rec
	at := time.Date(2026, 7, 29, 17, 4, 50, 0, time.UTC)
	r.policy.VerificationTime = &at
	if rep := r.verify(t); !rep.Valid() {
		t.Errorf("300 s between trust and created_at: %s\n%s", rep.Result, rep.Summary())
	}
}
