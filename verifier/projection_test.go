package verifier_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
	"github.com/memtrail/memtrail/verifier/backend"
)

// interopFile is the MEMORY-PROJECTION-RECORD-v1 reciprocal vector file of
// the interoperating implementation.
const interopFile = "../conformance/vectors/emilia-amem/memory-projection-record.v1.vectors.json"

type interopVectors struct {
	AdapterPin         json.RawMessage `json:"adapter_pin"`
	VerificationPolicy json.RawMessage `json:"verification_policy"`
	Projection         struct {
		Record   json.RawMessage `json:"record"`
		Material json.RawMessage `json:"verification_material"`
		Expect   struct {
			Valid         bool   `json:"valid"`
			Scope         string `json:"verification_scope"`
			DeliveredCnt  int    `json:"delivered_count"`
			ExcludedCount int64  `json:"excluded_count"`
		} `json:"expect"`
	} `json:"projection"`
	Cases []struct {
		ID       string  `json:"id"`
		Mutation *string `json:"mutation"`
		Expect   struct {
			Result string `json:"result"`
		} `json:"expect"`
	} `json:"cases"`
}

// fixture is the positive vector, parsed, for mutations to start from.
type fixture struct {
	record   []byte
	pins     []*receipts.AdapterPin
	material *verifier.Material
	policy   *verifier.VerificationPolicy
	vectors  interopVectors
}

func loadInterop(t testing.TB) *fixture {
	t.Helper()
	raw, err := os.ReadFile(interopFile)
	if err != nil {
		t.Fatalf("the interop vectors are missing from conformance/vectors: %v", err)
	}
	fx := &fixture{}
	if err := json.Unmarshal(raw, &fx.vectors); err != nil {
		t.Fatal(err)
	}
	fx.record = fx.vectors.Projection.Record
	if fx.pins, err = receipts.ParseAdapterPins(fx.vectors.AdapterPin); err != nil {
		t.Fatal(err)
	}
	if fx.material, err = verifier.ParseMaterial(fx.vectors.Projection.Material); err != nil {
		t.Fatal(err)
	}
	if fx.policy, err = verifier.ParseVerificationPolicy(fx.vectors.VerificationPolicy); err != nil {
		t.Fatal(err)
	}
	return fx
}

// emiliaKey is the deterministic adapter key behind the vectors: seed =
// SHA-256("apertomemory-emilia/v0/adapter").
func emiliaKey() ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("apertomemory-emilia/v0/adapter"))
	return ed25519.NewKeyFromSeed(seed[:])
}

// editRecord decodes the record into generic JSON, applies f and encodes
// it again.
func editRecord(t testing.TB, record []byte, f func(map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(record))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// resign signs the record's body again under domain with the vector key.
func resign(t testing.TB, record []byte, domain string) []byte {
	r, err := receipts.ParseProjectionRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	body := r.SignedBytes()[len(receipts.ProjectionVersion)+1:]
	sig := ed25519.Sign(emiliaKey(), append([]byte(domain+"\x00"), body...))
	return editRecord(t, record, func(m map[string]any) {
		m["proof"].(map[string]any)["signature_b64u"] = receipts.EncodeB64u(sig)
	})
}

func flip(b []byte, i int) []byte {
	out := bytes.Clone(b)
	out[i] ^= 0x01
	return out
}

// memRegistry is a registry in memory, for tests.
type memRegistry struct {
	mu  sync.Mutex
	ids map[string]string
}

func (r *memRegistry) Register(ctx context.Context, id string, record []byte, at time.Time) (*verifier.Registration, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = map[string]string{}
	}
	if d, dup := r.ids[id]; dup {
		return nil, &verifier.ReplayError{ProjectionID: id, First: verifier.Registration{Registry: "memory", ProjectionID: id, RecordDigest: d}}
	}
	r.ids[id] = receipts.Digest(record)
	return &verifier.Registration{Registry: "memory", ProjectionID: id, RecordDigest: r.ids[id], RegisteredAt: receipts.FormatTimestamp(at)}, nil
}

// run is one verification: the record, pins, material and policy of a
// case, each defaulting to the positive vector's.
type run struct {
	record   []byte
	pins     []*receipts.AdapterPin
	material *verifier.Material
	policy   *verifier.VerificationPolicy
	registry verifier.Registry
	times    int // verify this many times against one registry
}

func (fx *fixture) base() run {
	m := *fx.material
	p := *fx.policy
	return run{record: fx.record, pins: fx.pins, material: &m, policy: &p}
}

func (r run) verify(t testing.TB) *verifier.ProjectionReport {
	t.Helper()
	n := max(r.times, 1)
	var rep *verifier.ProjectionReport
	for range n {
		var err error
		rep, err = verifier.VerifyProjection(context.Background(), r.record, verifier.ProjectionOptions{
			Pins: r.pins, Material: r.material, Policy: r.policy, Registry: r.registry})
		if err != nil {
			t.Fatalf("VerifyProjection: %v", err)
		}
	}
	return rep
}

// mutations implements each hostile case of the interop file from its
// name. The file names the mutation, not how it is done; each is done here
// in the smallest way its name allows:
//
//   - add_unknown_top_level_member: the record gains "extension": "x".
//   - sign_with_legacy_v0_domain: the unchanged body is signed again by
//     the vector key under the v0 domain "AMEM-EMILIA-PROJECTION-RECORD-v0".
//   - swap_delivered_entries: delivered[0] and delivered[1] trade places.
//   - omit_delivered_entry: the last delivered entry is removed (so the
//     positions stay sequential and only the signature can tell).
//   - duplicate_delivered_position: delivered[1].position becomes 0.
//   - mutate_source_object_bytes: one bit of source object 0 flips.
//   - mutate_fragment_bytes: one bit of fragment 0 flips (the projection
//     bytes stay as they were).
//   - substitute_projection_bytes_only: the projection bytes are replaced
//     by the fragments concatenated in the other order (same length, other
//     bytes); the fragments stay.
//   - mutate_recall_request_bytes, mutate_selection_policy_bytes,
//     mutate_trust_snapshot_bytes: one bit of those bytes flips.
//   - increment_exclusions_total: exclusions.total goes from 2 to 3.
//   - set_model_use_established: nonclaims.model_use becomes "ESTABLISHED".
//   - remove_adapter_pin: no pin at all.
//   - revoke_adapter_key: the pin's status becomes "revoked", with
//     revoked_at one second before the verification time.
//   - advance_verification_time: the verification time moves one hour on.
//   - relabel_native_source_result: the native result at position 1 says
//     derivedTrust "trusted" where the record (rightly) says "self".
//   - register_projection_twice: the record is verified twice against one
//     registry file.
func mutations(t *testing.T, fx *fixture) map[string]func() run {
	return map[string]func() run{
		"add_unknown_top_level_member": func() run {
			r := fx.base()
			r.record = editRecord(t, fx.record, func(m map[string]any) { m["extension"] = "x" })
			return r
		},
		"sign_with_legacy_v0_domain": func() run {
			r := fx.base()
			r.record = resign(t, fx.record, "AMEM-EMILIA-PROJECTION-RECORD-v0")
			return r
		},
		"swap_delivered_entries": func() run {
			r := fx.base()
			r.record = editRecord(t, fx.record, func(m map[string]any) {
				d := m["delivered"].([]any)
				d[0], d[1] = d[1], d[0]
			})
			return r
		},
		"omit_delivered_entry": func() run {
			r := fx.base()
			r.record = editRecord(t, fx.record, func(m map[string]any) { m["delivered"] = m["delivered"].([]any)[:1] })
			return r
		},
		"duplicate_delivered_position": func() run {
			r := fx.base()
			r.record = editRecord(t, fx.record, func(m map[string]any) {
				m["delivered"].([]any)[1].(map[string]any)["position"] = 0
			})
			return r
		},
		"mutate_source_object_bytes": func() run {
			r := fx.base()
			r.material.SourceObjects = [][]byte{flip(fx.material.SourceObjects[0], 10), fx.material.SourceObjects[1]}
			return r
		},
		"mutate_fragment_bytes": func() run {
			r := fx.base()
			r.material.Fragments = [][]byte{flip(fx.material.Fragments[0], 10), fx.material.Fragments[1]}
			return r
		},
		"substitute_projection_bytes_only": func() run {
			r := fx.base()
			r.material.Projection = append(bytes.Clone(fx.material.Fragments[1]), fx.material.Fragments[0]...)
			return r
		},
		"mutate_recall_request_bytes": func() run {
			r := fx.base()
			r.material.RecallRequest = flip(fx.material.RecallRequest, 0)
			return r
		},
		"mutate_selection_policy_bytes": func() run {
			r := fx.base()
			r.material.SelectionPolicy = flip(fx.material.SelectionPolicy, 0)
			return r
		},
		"mutate_trust_snapshot_bytes": func() run {
			r := fx.base()
			r.material.TrustSnapshot = flip(fx.material.TrustSnapshot, 0)
			return r
		},
		"increment_exclusions_total": func() run {
			r := fx.base()
			r.record = editRecord(t, fx.record, func(m map[string]any) { m["exclusions"].(map[string]any)["total"] = 3 })
			return r
		},
		"set_model_use_established": func() run {
			r := fx.base()
			r.record = editRecord(t, fx.record, func(m map[string]any) { m["nonclaims"].(map[string]any)["model_use"] = "ESTABLISHED" })
			return r
		},
		"remove_adapter_pin": func() run {
			r := fx.base()
			r.pins = nil
			return r
		},
		"revoke_adapter_key": func() run {
			r := fx.base()
			p := *fx.pins[0]
			p.Status = "revoked"
			at := fx.policy.VerificationTime.Add(-time.Second)
			p.RevokedAt = &at
			r.pins = []*receipts.AdapterPin{&p}
			return r
		},
		"advance_verification_time": func() run {
			r := fx.base()
			later := fx.policy.VerificationTime.Add(time.Hour)
			r.policy.VerificationTime = &later
			return r
		},
		"relabel_native_source_result": func() run {
			r := fx.base()
			r.material.NativeResults = append([]verifier.NativeResult(nil), fx.material.NativeResults...)
			r.material.NativeResults[1].DerivedTrust = "trusted"
			return r
		},
		"register_projection_twice": func() run {
			r := fx.base()
			r.registry = backend.NewFileRegistry(filepath.Join(t.TempDir(), "registry"))
			r.times = 2
			return r
		},
	}
}

// TestInteropVectors runs all 19 cases of the interop vector file; each
// must give exactly its expected result.
func TestInteropVectors(t *testing.T) {
	fx := loadInterop(t)
	muts := mutations(t, fx)
	if len(fx.vectors.Cases) != 19 {
		t.Fatalf("the vector file has %d cases, want 19", len(fx.vectors.Cases))
	}
	passed := 0
	for _, c := range fx.vectors.Cases {
		t.Run(c.ID, func(t *testing.T) {
			r := fx.base()
			if c.Mutation != nil {
				mut, ok := muts[*c.Mutation]
				if !ok {
					t.Fatalf("mutation %q is not implemented", *c.Mutation)
				}
				r = mut()
			}
			rep := r.verify(t)
			if rep.Result != c.Expect.Result {
				t.Errorf("result = %s, want %s\n%s", rep.Result, c.Expect.Result, rep.Summary())
				return
			}
			passed++
		})
	}
	t.Logf("%d of %d interop cases give their expected result", passed, len(fx.vectors.Cases))
}

func TestInteropPositiveExpectations(t *testing.T) {
	fx := loadInterop(t)
	rep := fx.base().verify(t)
	want := fx.vectors.Projection.Expect
	if !rep.Valid() || !want.Valid {
		t.Fatalf("result = %s\n%s", rep.Result, rep.Summary())
	}
	if rep.VerificationScope != want.Scope || *rep.DeliveredCount != want.DeliveredCnt || *rep.ExcludedCount != want.ExcludedCount {
		t.Errorf("scope %s, delivered %d, excluded %d; want %s, %d, %d", rep.VerificationScope, *rep.DeliveredCount, *rep.ExcludedCount,
			want.Scope, want.DeliveredCnt, want.ExcludedCount)
	}
	for _, c := range rep.Checks {
		if c.Outcome != verifier.Passed && c.Check != verifier.CheckSingleUse {
			t.Errorf("check %s: %s (%s)", c.Check, c.Outcome, c.Detail)
		}
	}
	if got := rep.Checks[len(rep.Checks)-1]; got.Check != verifier.CheckSingleUse || got.Outcome != verifier.Skipped {
		t.Errorf("last check = %+v, want single_use skipped (no registry)", got)
	}
	if rep.VerificationTime != "2026-07-29T17:01:00.000Z" {
		t.Errorf("verification_time = %s, want the policy's", rep.VerificationTime)
	}
}

// TestProjectionMutations covers the mutations the interop file lacks.
func TestProjectionMutations(t *testing.T) {
	fx := loadInterop(t)
	secs := func(n int) *time.Duration { d := time.Duration(n) * time.Second; return &d }
	cases := []struct {
		name string
		want string
		run  func() run
	}{
		{"fragment moved between positions", "fragment_digest_mismatch", func() run {
			r := fx.base()
			r.material.Fragments = [][]byte{fx.material.Fragments[1], fx.material.Fragments[0]}
			return r
		}},
		{"projection one byte longer", "projection_fragment_concatenation_mismatch", func() run {
			r := fx.base()
			r.material.Projection = append(bytes.Clone(fx.material.Projection), '\n')
			return r
		}},
		{"projection one byte longer, no fragments", "projection_digest_mismatch", func() run {
			r := fx.base()
			r.material.Fragments = nil
			r.material.Projection = append(bytes.Clone(fx.material.Projection), '\n')
			return r
		}},
		{"projection one byte shorter, no fragments", "projection_digest_mismatch", func() run {
			r := fx.base()
			r.material.Fragments = nil
			r.material.Projection = fx.material.Projection[:len(fx.material.Projection)-1]
			return r
		}},
		{"fragments only, one dropped", "fragment_digest_mismatch", func() run {
			r := fx.base()
			r.material.Projection = nil
			r.material.Fragments = fx.material.Fragments[:1]
			return r
		}},
		{"fragments only, valid", verifier.Valid, func() run {
			r := fx.base()
			r.material.Projection = nil
			return r
		}},
		{"trust_evaluated_at after created_at", "record_invalid", func() run {
			r := fx.base()
			r.record = editRecord(t, fx.record, func(m map[string]any) {
				m["selection_context"].(map[string]any)["trust_evaluated_at"] = "2026-07-29T17:00:02.000Z"
			})
			return r
		}},
		{"key valid only after created_at", "adapter_key_expired", func() run {
			r := fx.base()
			p := *fx.pins[0]
			p.ValidFrom = time.Date(2026, 7, 29, 17, 0, 2, 0, time.UTC)
			r.pins = []*receipts.AdapterPin{&p}
			return r
		}},
		{"key expired before created_at", "adapter_key_expired", func() run {
			r := fx.base()
			p := *fx.pins[0]
			to := time.Date(2026, 7, 29, 12, 0, 0, 0, time.UTC)
			p.ValidTo = &to
			r.pins = []*receipts.AdapterPin{&p}
			return r
		}},
		{"key revoked after the verification time", verifier.Valid, func() run {
			r := fx.base()
			p := *fx.pins[0]
			p.Status = "revoked"
			at := fx.policy.VerificationTime.Add(time.Hour)
			p.RevokedAt = &at
			r.pins = []*receipts.AdapterPin{&p}
			return r
		}},
		{"pin of another key", "signature_invalid", func() run {
			r := fx.base()
			p := *fx.pins[0]
			pub, _, _ := ed25519.GenerateKey(nil)
			p.PublicKey = pub
			r.pins = []*receipts.AdapterPin{&p}
			return r
		}},
		{"re-signed correctly after an edit", "native_source_result_mismatch", func() run {
			// A producer that relabels and signs again passes the
			// signature but not the native results.
			r := fx.base()
			r.record = resign(t, editRecord(t, fx.record, func(m map[string]any) {
				m["delivered"].([]any)[1].(map[string]any)["derived_trust"] = "trusted"
			}), receipts.ProjectionVersion)
			return r
		}},
		{"record stale", "record_stale", func() run {
			r := fx.base()
			r.policy.MaxProjectionAge = secs(30)
			return r
		}},
		{"record from the future", "record_from_future", func() run {
			r := fx.base()
			early := time.Date(2026, 7, 29, 16, 0, 0, 0, time.UTC)
			r.policy.VerificationTime = &early
			return r
		}},
		{"within the clock skew", verifier.Valid, func() run {
			r := fx.base()
			early := time.Date(2026, 7, 29, 16, 59, 30, 0, time.UTC)
			r.policy.VerificationTime = &early
			return r
		}},
		{"source profile not the expected one", "profile_mismatch", func() run {
			r := fx.base()
			r.policy.ExpectedSourceProfile = "draft-ferro-apertomemory-03"
			return r
		}},
		{"context frame profile not the expected one", "profile_mismatch", func() run {
			r := fx.base()
			r.policy.ExpectedContextFrameProfile = "urn:other:frame"
			return r
		}},
		{"native result refused", "native_source_result_mismatch", func() run {
			r := fx.base()
			r.material.NativeResults = append([]verifier.NativeResult(nil), fx.material.NativeResults...)
			r.material.NativeResults[0].Valid = false
			return r
		}},
		{"native author key relabelled to null", "native_source_result_mismatch", func() run {
			r := fx.base()
			r.material.NativeResults = append([]verifier.NativeResult(nil), fx.material.NativeResults...)
			r.material.NativeResults[0].AuthorKeyIDB64u = nil
			return r
		}},
		{"native custody relabelled", "native_source_result_mismatch", func() run {
			r := fx.base()
			r.material.NativeResults = append([]verifier.NativeResult(nil), fx.material.NativeResults...)
			r.material.NativeResults[1].CustodyPresent = true
			return r
		}},
		{"one native result short", "native_source_result_mismatch", func() run {
			r := fx.base()
			r.material.NativeResults = fx.material.NativeResults[:1]
			return r
		}},
		{"source objects swapped", "source_object_digest_mismatch", func() run {
			r := fx.base()
			r.material.SourceObjects = [][]byte{fx.material.SourceObjects[1], fx.material.SourceObjects[0]}
			return r
		}},
		{"source object duplicated", "source_object_digest_mismatch", func() run {
			r := fx.base()
			r.material.SourceObjects = append(r.material.SourceObjects, fx.material.SourceObjects[0])
			return r
		}},
		{"duplicate member", "record_invalid", func() run {
			r := fx.base()
			r.record = bytes.Replace(fx.record, []byte(`"source_profile"`), []byte(`"projection_id": "urn:x:y", "source_profile"`), 1)
			return r
		}},
		{"flipped signature bit", "signature_invalid", func() run {
			r := fx.base()
			r.record = editRecord(t, fx.record, func(m map[string]any) {
				p := m["proof"].(map[string]any)
				s := []byte(p["signature_b64u"].(string))
				s[5] ^= 'A' ^ 'B'
				p["signature_b64u"] = string(s)
			})
			return r
		}},
		{"the same record on two registries", verifier.Valid, func() run {
			r := fx.base()
			r.registry = &memRegistry{}
			return r
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := c.run().verify(t)
			if rep.Result != c.want {
				t.Errorf("result = %s, want %s\n%s", rep.Result, c.want, rep.Summary())
			}
		})
	}
}

// TestProjectionSkippedSteps checks that missing material and policy are
// reported as skipped and the record still verifies.
func TestProjectionSkippedSteps(t *testing.T) {
	fx := loadInterop(t)
	rep, err := verifier.VerifyProjection(context.Background(), fx.record, verifier.ProjectionOptions{
		Pins: fx.pins, Time: *fx.policy.VerificationTime})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Valid() || rep.VerificationScope != verifier.ScopeRecordOnly {
		t.Fatalf("result %s scope %s\n%s", rep.Result, rep.VerificationScope, rep.Summary())
	}
	ran := map[string]verifier.Outcome{}
	for _, c := range rep.Checks {
		ran[c.Check] = c.Outcome
	}
	for _, name := range []string{verifier.CheckTrustFreshness, verifier.CheckRecordFreshness, verifier.CheckProfiles, verifier.CheckRecallRequest,
		verifier.CheckSelectionPolicy, verifier.CheckTrustSnapshot, verifier.CheckSourceObjects, verifier.CheckNativeResults,
		verifier.CheckFragments, verifier.CheckProjectionBytes, verifier.CheckSingleUse} {
		if ran[name] != verifier.Skipped {
			t.Errorf("%s: %s, want skipped", name, ran[name])
		}
	}
	for _, name := range []string{verifier.CheckStructure, verifier.CheckAdapterKey, verifier.CheckSignature} {
		if ran[name] != verifier.Passed {
			t.Errorf("%s: %s, want passed", name, ran[name])
		}
	}

	// Only fragments: partial scope.
	m := &verifier.Material{Fragments: fx.material.Fragments}
	rep, _ = verifier.VerifyProjection(context.Background(), fx.record, verifier.ProjectionOptions{Pins: fx.pins, Material: m, Policy: fx.policy})
	if !rep.Valid() || rep.VerificationScope != verifier.ScopePartial {
		t.Errorf("fragments only: %s %s", rep.Result, rep.VerificationScope)
	}

	if _, err := verifier.VerifyProjection(context.Background(), fx.record, verifier.ProjectionOptions{Pins: fx.pins}); err == nil {
		t.Errorf("no verification time: no error")
	}
}

// TestProjectionFailuresKeepChecking checks that checks after a failure
// still run, that the result is the first failure, and that a refused
// record is not registered.
func TestProjectionFailuresKeepChecking(t *testing.T) {
	fx := loadInterop(t)
	r := fx.base()
	r.material.Fragments = [][]byte{flip(fx.material.Fragments[0], 3), fx.material.Fragments[1]}
	r.material.RecallRequest = flip(fx.material.RecallRequest, 3)
	reg := &memRegistry{}
	r.registry = reg
	rep := r.verify(t)
	if rep.Result != "recall_request_digest_mismatch" {
		t.Errorf("result = %s, want the first failure in check order", rep.Result)
	}
	got := map[string]verifier.Check{}
	for _, c := range rep.Checks {
		got[c.Check] = c
	}
	if c := got[verifier.CheckFragments]; c.Outcome != verifier.Failed || c.Code != receipts.CodeFragmentDigestMismatch || c.Member != "delivered[0].context_fragment_digest" {
		t.Errorf("fragment check = %+v", c)
	}
	if c := got[verifier.CheckSingleUse]; c.Outcome != verifier.NotRun {
		t.Errorf("single use after a failure = %+v, want not_run", c)
	}
	if len(reg.ids) != 0 {
		t.Errorf("a refused record was registered")
	}
	// The same record, now whole, registers once.
	ok := fx.base()
	ok.registry = reg
	if rep := ok.verify(t); !rep.Valid() || rep.SingleUse == nil {
		t.Fatalf("valid record: %s", rep.Summary())
	}
	if rep := ok.verify(t); rep.Result != "projection_replay" {
		t.Errorf("second use: %s", rep.Result)
	}
}

func TestProjectionReportJSON(t *testing.T) {
	fx := loadInterop(t)
	rep := fx.base().verify(t)
	var back map[string]any
	if err := json.Unmarshal(rep.JSON(), &back); err != nil {
		t.Fatal(err)
	}
	if back["result"] != "VALID" || back["kind"] != "projection" || back["verification_scope"] != verifier.ScopeFull {
		t.Errorf("JSON report = %s", rep.JSON())
	}
	checks := back["checks"].([]any)
	if len(checks) != 18 {
		t.Errorf("%d checks, want 18", len(checks))
	}
	first := checks[0].(map[string]any)
	if first["check"] != "structure" || first["outcome"] != "passed" || first["draft_step"] != 1.0 {
		t.Errorf("first check = %v", first)
	}
	if s := rep.Summary(); !strings.Contains(s, "VALID") || !strings.Contains(s, "native_source_results") {
		t.Errorf("summary = %s", s)
	}
}
