package conformance

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/memtrail/memtrail/receipts"
)

// TestProjectionRecordDraft01: the rules draft -01
// (draft-ferro-schrock-memory-projection-record-01) adds to -00, as
// mutations of the positive interop record, each signed again by the
// interop adapter key so that only the rule can refuse it. The source-result
// cases are all 36 combinations of derived_trust × authorship × author key
// × custody_present on each delivered entry, judged by the rule of §4.3
// written out below; the others are the record-level rules of §4.1, §4.3
// and §5. (The -01 rules over material — UTF-8 projection bytes, the
// interval between trust_evaluated_at and created_at — need the §8 verifier
// and run in verifier.TestProjectionEncoding and
// verifier.TestTrustIntervalBeforeCreatedAt.)
func TestProjectionRecordDraft01(t *testing.T) {
	v, pins, now, adapterKey := loadInterop(t)
	signed := func(f func(m map[string]any)) []byte {
		m := decode(t, v.Projection.Record).(map[string]any)
		f(m)
		proof := m["proof"].(map[string]any)
		delete(m, "proof")
		body, err := receipts.Canonicalize(encode(t, m))
		if err != nil {
			t.Fatal(err)
		}
		proof["signature_b64u"] = base64.RawURLEncoding.EncodeToString(ed25519.Sign(adapterKey, append([]byte("MEMORY-PROJECTION-RECORD-v1\x00"), body...)))
		m["proof"] = proof
		return encode(t, m)
	}
	verify := func(raw []byte) receipts.Code {
		r, err := receipts.ParseProjectionRecord(raw)
		if err == nil {
			err = receipts.VerifyProjectionSignature(r, pins, now)
		}
		if err == nil {
			return "VALID"
		}
		return receipts.ErrorCode(err)
	}
	type tcase struct {
		name   string
		record []byte
		want   receipts.Code
	}
	var cases []tcase

	// §4.3: "Unverified content MUST use authorship unknown and a null
	// author key. Attested authorship requires custody_present true." —
	// and verified content (self, trusted) names its author, as the
	// interoperating verifier requires.
	allows := func(trust, authorship string, key, custody bool) bool {
		if authorship == "attested" && !custody {
			return false
		}
		if trust == "unverified" {
			return authorship == "unknown" && !key
		}
		return authorship != "unknown" && key
	}
	valid := 0
	for pos := range 2 {
		for _, trust := range []string{"self", "trusted", "unverified"} {
			for _, authorship := range []string{"signed", "attested", "unknown"} {
				for _, key := range []bool{true, false} {
					for _, custody := range []bool{true, false} {
						want := receipts.CodeSourceResultInvalid
						if allows(trust, authorship, key, custody) {
							want, valid = "VALID", valid+1
						}
						cases = append(cases, tcase{fmt.Sprintf("delivered[%d] %s/%s/key=%v/custody=%v", pos, trust, authorship, key, custody),
							signed(func(m map[string]any) {
								e := m["delivered"].([]any)[pos].(map[string]any)
								e["derived_trust"], e["authorship"], e["custody_present"], e["author_key_id_b64u"] = trust, authorship, custody, nil
								if key {
									e["author_key_id_b64u"] = "0FMJy9O1Xzs"
								}
							}), want})
					}
				}
			}
		}
	}
	if valid != 16 {
		t.Fatalf("the rule allows %d of 72 entry results, want 8 per entry", valid)
	}
	entry := func(f func(e map[string]any)) []byte {
		return signed(func(m map[string]any) { f(m["delivered"].([]any)[0].(map[string]any)) })
	}
	cases = append(cases,
		// §5.1, §5.2: an ApertoMemory key identifier is eight bytes.
		tcase{"ApertoMemory author key of 7 bytes", entry(func(e map[string]any) { e["author_key_id_b64u"] = "0FMJy9O1Xw" }), receipts.CodeSourceResultInvalid},
		tcase{"ApertoMemory author key of 9 bytes", entry(func(e map[string]any) { e["author_key_id_b64u"] = "0FMJy9O1XzsA" }), receipts.CodeSourceResultInvalid},
		// §4.1: @version, a URI projection_id, UTC RFC 3339 times,
		// proof.key_id = adapter.key_id.
		tcase{"@version of -00's v0 profile", signed(func(m map[string]any) { m["@version"] = "AMEM-PROJECTION-RECORD-v0" }), receipts.CodeRecordInvalid},
		tcase{"projection_id not a URI", signed(func(m map[string]any) { m["projection_id"] = "composition-01" }), receipts.CodeRecordInvalid},
		tcase{"created_at with an offset", signed(func(m map[string]any) { m["created_at"] = "2026-07-29T19:00:01.000+02:00" }), receipts.CodeRecordInvalid},
		tcase{"trust_evaluated_at without a zone", signed(func(m map[string]any) {
			m["selection_context"].(map[string]any)["trust_evaluated_at"] = "2026-07-29T17:00:00.000"
		}), receipts.CodeRecordInvalid},
		tcase{"proof.key_id differs from adapter.key_id", signed(func(m map[string]any) {
			m["proof"].(map[string]any)["key_id"] = "apertomemory-adapter-key-2026-08"
		}), receipts.CodeRecordInvalid},
		// §4.3: positions are the zero-based index and do not repeat;
		// projection.encoding is utf-8.
		tcase{"position repeated, re-signed", entry(func(e map[string]any) { e["position"] = json.Number("1") }), receipts.CodeDeliveredOrderInvalid},
		tcase{"projection.encoding utf-16", signed(func(m map[string]any) { m["projection"].(map[string]any)["encoding"] = "utf-16" }), receipts.CodeRecordInvalid},
		// §4.4: the total is the sum of the closed reasons.
		tcase{"exclusions.total short, re-signed", signed(func(m map[string]any) { m["exclusions"].(map[string]any)["total"] = json.Number("1") }), receipts.CodeExclusionCountMismatch},
		// The positive record itself, signed again: nothing else changed.
		tcase{"positive record re-signed", signed(func(map[string]any) {}), "VALID"},
	)
	for _, c := range cases {
		if got := verify(c.record); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	t.Logf("emilia-amem, draft -01 rules: %d mutations of the positive record (72 source results, %d accepted; %d other rules) give exactly their expected code", len(cases), valid, len(cases)-72)
}
