package receipts

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// emiliaSeed derives the deterministic adapter key behind the interop
// vectors: seed = SHA-256("apertomemory-emilia/v0/adapter").
func emiliaKey() ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("apertomemory-emilia/v0/adapter"))
	return ed25519.NewKeyFromSeed(seed[:])
}

type fixture struct {
	record []byte
	pins   []*AdapterPin
	now    time.Time
}

func loadFixture(t *testing.T) fixture {
	t.Helper()
	v := loadEmilia(t)
	pins, err := ParseAdapterPins(v.AdapterPin)
	if err != nil {
		t.Fatal(err)
	}
	now, err := ParseTimestamp(v.VerificationPolicy.VerificationTime)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{record: v.Projection.Record, pins: pins, now: now}
}

// mutate decodes the record into generic JSON, applies f, and re-encodes.
func mutate(t *testing.T, record []byte, f func(map[string]any)) []byte {
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

func verifyRecord(data []byte, pins []*AdapterPin, now time.Time) error {
	r, err := ParseProjectionRecord(data)
	if err != nil {
		return err
	}
	return VerifyProjectionSignature(r, pins, now)
}

func TestProjectionVectorVerifies(t *testing.T) {
	fx := loadFixture(t)
	r, err := ParseProjectionRecord(fx.record)
	if err != nil {
		t.Fatalf("ParseProjectionRecord: %v", err)
	}
	if err := VerifyProjectionSignature(r, fx.pins, fx.now); err != nil {
		t.Fatalf("VerifyProjectionSignature: %v", err)
	}
	if got, want := r.Canonical(), canonicalViaReference(t, fx.record); !bytes.Equal(got, want) {
		t.Errorf("Canonical() differs from the reference JCS:\n got %s\nwant %s", got, want)
	}
	if pub := emiliaKey().Public().(ed25519.PublicKey); !pub.Equal(fx.pins[0].PublicKey) {
		t.Errorf("derived vector key does not match the pin")
	}
	if len(r.Delivered) != 2 || r.Exclusions.Total != 2 || r.Projection.ByteLength != 328 {
		t.Errorf("parsed record = %+v", r)
	}
}

// TestProjectionInteropCases runs the receipt-level cases of the interop
// vector file (the material-level ones run in the verifier package). Each
// mutation is implemented as its name describes.
func TestProjectionInteropCases(t *testing.T) {
	fx := loadFixture(t)
	cases := []struct {
		mutation string
		want     Code
		record   func() []byte
		pins     func() []*AdapterPin
	}{
		{"add_unknown_top_level_member", CodeRecordInvalid, func() []byte {
			return mutate(t, fx.record, func(m map[string]any) { m["extension"] = "x" })
		}, nil},
		{"sign_with_legacy_v0_domain", CodeSignatureInvalid, func() []byte {
			r, _ := ParseProjectionRecord(fx.record)
			body := r.SignedBytes()[len(projectionDomain)+1:]
			sig := ed25519.Sign(emiliaKey(), append([]byte("AMEM-EMILIA-PROJECTION-RECORD-v0\x00"), body...))
			return mutate(t, fx.record, func(m map[string]any) {
				m["proof"].(map[string]any)["signature_b64u"] = EncodeB64u(sig)
			})
		}, nil},
		{"swap_delivered_entries", CodeDeliveredOrderInvalid, func() []byte {
			return mutate(t, fx.record, func(m map[string]any) {
				d := m["delivered"].([]any)
				d[0], d[1] = d[1], d[0]
			})
		}, nil},
		{"omit_delivered_entry", CodeSignatureInvalid, func() []byte {
			return mutate(t, fx.record, func(m map[string]any) {
				m["delivered"] = m["delivered"].([]any)[:1]
			})
		}, nil},
		{"duplicate_delivered_position", CodeDeliveredOrderInvalid, func() []byte {
			return mutate(t, fx.record, func(m map[string]any) {
				d := m["delivered"].([]any)
				d[1].(map[string]any)["position"] = 0
			})
		}, nil},
		{"increment_exclusions_total", CodeExclusionCountMismatch, func() []byte {
			return mutate(t, fx.record, func(m map[string]any) {
				m["exclusions"].(map[string]any)["total"] = 3
			})
		}, nil},
		{"set_model_use_established", CodeNonclaimInvalid, func() []byte {
			return mutate(t, fx.record, func(m map[string]any) {
				m["nonclaims"].(map[string]any)["model_use"] = "ESTABLISHED"
			})
		}, nil},
		{"remove_adapter_pin", CodeAdapterKeyNotPinned, nil, func() []*AdapterPin { return nil }},
		{"revoke_adapter_key", CodeAdapterKeyRevoked, nil, func() []*AdapterPin {
			p := *fx.pins[0]
			p.Status = "revoked"
			at := fx.now.Add(-time.Second)
			p.RevokedAt = &at
			return []*AdapterPin{&p}
		}},
		// Cases the interop file lacks.
		{"key_valid_only_after_created_at", CodeAdapterKeyExpired, nil, func() []*AdapterPin {
			p := *fx.pins[0]
			p.ValidFrom = fx.now
			return []*AdapterPin{&p}
		}},
		{"key_expired_before_created_at", CodeAdapterKeyExpired, nil, func() []*AdapterPin {
			p := *fx.pins[0]
			p.ValidFrom = fx.now.Add(-48 * time.Hour)
			to := fx.now.Add(-24 * time.Hour)
			p.ValidTo = &to
			return []*AdapterPin{&p}
		}},
		{"status_revoked_without_time", CodeAdapterKeyRevoked, nil, func() []*AdapterPin {
			p := *fx.pins[0]
			p.Status = "revoked"
			return []*AdapterPin{&p}
		}},
		{"pin_for_other_adapter", CodeAdapterKeyNotPinned, nil, func() []*AdapterPin {
			p := *fx.pins[0]
			p.AdapterID = "urn:other:adapter"
			return []*AdapterPin{&p}
		}},
		{"pin_with_other_key", CodeSignatureInvalid, nil, func() []*AdapterPin {
			p := *fx.pins[0]
			pub, _, _ := GenerateKey()
			p.PublicKey = pub
			return []*AdapterPin{&p}
		}},
		{"flip_signature_bit", CodeSignatureInvalid, func() []byte {
			return mutate(t, fx.record, func(m map[string]any) {
				p := m["proof"].(map[string]any)
				s := []byte(p["signature_b64u"].(string))
				if s[10] == 'B' {
					s[10] = 'C'
				} else {
					s[10] = 'B'
				}
				p["signature_b64u"] = string(s)
			})
		}, nil},
		{"change_projection_id", CodeSignatureInvalid, func() []byte {
			return mutate(t, fx.record, func(m map[string]any) { m["projection_id"] = "urn:memory-projection:replayed" })
		}, nil},
		{"relabel_trust_in_record", CodeSignatureInvalid, func() []byte {
			return mutate(t, fx.record, func(m map[string]any) {
				m["delivered"].([]any)[1].(map[string]any)["derived_trust"] = "trusted"
			})
		}, nil},
		{"trust_evaluated_after_created_at", CodeRecordInvalid, func() []byte {
			return mutate(t, fx.record, func(m map[string]any) {
				m["selection_context"].(map[string]any)["trust_evaluated_at"] = "2026-07-29T17:00:02.000Z"
			})
		}, nil},
		{"proof_key_id_differs", CodeRecordInvalid, func() []byte {
			return mutate(t, fx.record, func(m map[string]any) { m["proof"].(map[string]any)["key_id"] = "other" })
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.mutation, func(t *testing.T) {
			record, pins := fx.record, fx.pins
			if tc.record != nil {
				record = tc.record()
			}
			if tc.pins != nil {
				pins = tc.pins()
			}
			err := verifyRecord(record, pins, fx.now)
			if got := ErrorCode(err); got != tc.want {
				t.Errorf("verify = %v (code %q), want code %q", err, got, tc.want)
			}
		})
	}
}

func TestProjectionRefusals(t *testing.T) {
	fx := loadFixture(t)
	set := func(path string, v any) func(map[string]any) {
		return func(m map[string]any) {
			parts := strings.Split(path, ".")
			cur := m
			for _, p := range parts[:len(parts)-1] {
				if p == "delivered0" {
					cur = cur["delivered"].([]any)[0].(map[string]any)
					continue
				}
				cur = cur[p].(map[string]any)
			}
			if v == nil {
				delete(cur, parts[len(parts)-1])
			} else {
				cur[parts[len(parts)-1]] = v
			}
		}
	}
	type tc struct {
		name   string
		f      func(map[string]any)
		member string
	}
	cases := []tc{
		{"missing projection_id", set("projection_id", nil), "projection_id"},
		{"unknown nested member", set("adapter.extra", "x"), "adapter.extra"},
		{"unknown delivered member", set("delivered0.extra", true), "delivered[0].extra"},
		{"missing object member", set("delivered0.object.format_version", nil), "delivered[0].object.format_version"},
		{"wrong version", set("@version", "MEMORY-PROJECTION-RECORD-v2"), "@version"},
		{"created_at with offset", set("created_at", "2026-07-29T17:00:01.000+00:00"), "created_at"},
		{"created_at lowercase", set("created_at", "2026-07-29t17:00:01.000z"), "created_at"},
		{"created_at date only", set("created_at", "2026-07-29"), "created_at"},
		{"created_at bad day", set("created_at", "2026-02-30T17:00:01.000Z"), "created_at"},
		{"created_at as number", set("created_at", 1785344401), "created_at"},
		{"digest upper hex", set("selection_context.recall_request_digest", "sha256:AA71638EF2A2A71D2C7E431B455ED1784221B353609387C9FAF9B6D1FEC70BD2"), "selection_context.recall_request_digest"},
		{"digest short", set("projection.digest", "sha256:abc"), "projection.digest"},
		{"digest other alg", set("projection.digest", "sha512:a58a3ede9399e4b69acf0cc6acd51d199e9282ec93883bf1d5c9c06619518b52"), "projection.digest"},
		{"derived_trust unknown", set("delivered0.derived_trust", "TRUSTED"), "delivered[0].derived_trust"},
		{"authorship unknown", set("delivered0.authorship", "forged"), "delivered[0].authorship"},
		{"author key padded", set("delivered0.author_key_id_b64u", "0FMJy9O1Xzs="), "delivered[0].author_key_id_b64u"},
		{"author key one char", set("delivered0.author_key_id_b64u", "A"), "delivered[0].author_key_id_b64u"},
		{"custody as string", set("delivered0.custody_present", "true"), "delivered[0].custody_present"},
		{"position negative", set("delivered0.position", -1), "delivered[0].position"},
		{"position as string", set("delivered0.position", "0"), "delivered[0].position"},
		{"format_version zero", set("delivered0.object.format_version", 0), "delivered[0].object.format_version"},
		{"exclusion negative", set("exclusions.by_reason.context_limit", -1), "exclusions.by_reason.context_limit"},
		{"unknown exclusion reason", set("exclusions.by_reason.other", 0), "exclusions.by_reason.other"},
		{"encoding utf-16", set("projection.encoding", "utf-16"), "projection.encoding"},
		{"byte_length as bool", set("projection.byte_length", true), "projection.byte_length"},
		{"nonclaim as number", set("nonclaims.model_use", 1), "nonclaims.model_use"},
		{"unknown nonclaim", set("nonclaims.other", "NOT_ESTABLISHED"), "nonclaims.other"},
		{"proof alg", set("proof.alg", "EdDSA"), "proof.alg"},
		{"signature short", set("proof.signature_b64u", "AAAA"), "proof.signature_b64u"},
		{"signature padded", set("proof.signature_b64u", "AhfmEtuBREAdnWqrHpfWoy3TMzB_76Ma_B9xX1aEB_5rtEQz6AxvyfS7vgMCZ8zb3s0-CTPZwGLa6oNZxg7QCw=="), "proof.signature_b64u"},
		{"signature std alphabet", set("proof.signature_b64u", "AhfmEtuBREAdnWqrHpfWoy3TMzB/76Ma/B9xX1aEB/5rtEQz6AxvyfS7vgMCZ8zb3s0+CTPZwGLa6oNZxg7QCw"), "proof.signature_b64u"},
		{"projection_id not a URI", set("projection_id", "composition 01"), "projection_id"},
		{"adapter id relative", set("adapter.id", "reference-01"), "adapter.id"},
		{"empty key_id", set("adapter.key_id", ""), "adapter.key_id"},
		{"delivered not array", set("delivered", map[string]any{}), "delivered"},
		{"source_profile control char", set("source_profile", "draft\u0000"), "source_profile"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseProjectionRecord(mutate(t, fx.record, c.f))
			e, ok := err.(*Error)
			if !ok || e.Code != CodeRecordInvalid || e.Member != c.member {
				t.Errorf("ParseProjectionRecord = %v, want record_invalid at %q", err, c.member)
			}
		})
	}
	t.Run("duplicate member text", func(t *testing.T) {
		in := bytes.Replace(fx.record, []byte(`"source_profile"`), []byte(`"projection_id": "urn:x:y", "source_profile"`), 1)
		if got := ErrorCode(verifyRecord(in, fx.pins, fx.now)); got != CodeRecordInvalid {
			t.Errorf("duplicate projection_id: code %q", got)
		}
	})
	t.Run("too large", func(t *testing.T) {
		in := append(bytes.Repeat([]byte(" "), MaxProjectionRecordSize), fx.record...)
		if got := ErrorCode(verifyRecord(in, fx.pins, fx.now)); got != CodeTooLarge {
			t.Errorf("oversized record: code %q", got)
		}
	})
}

func TestProjectionWhitespaceAndEscapesKeepSignature(t *testing.T) {
	fx := loadFixture(t)
	// Re-encoding with other whitespace or escapes leaves the canonical
	// bytes, and so the signature, unchanged.
	in := bytes.ReplaceAll(fx.record, []byte(`"utf-8"`), []byte(`"utf\u002d8"`))
	in = bytes.ReplaceAll(in, []byte("\n"), []byte("\r\n\t"))
	if err := verifyRecord(in, fx.pins, fx.now); err != nil {
		t.Fatalf("reformatted record: %v", err)
	}
}

func TestNewProjection(t *testing.T) {
	_, priv, _ := GenerateKey()
	author := "0FMJy9O1Xzs"
	created := time.Date(2026, 11, 30, 12, 0, 1, 0, time.UTC)
	in := &ProjectionInput{
		SourceProfile: "draft-ferro-apertomemory-02", ProjectionID: "urn:memory-projection:test:1",
		CreatedAt: created, AdapterID: "urn:memory-adapter:test", KeyID: "k1",
		RecallRequestDigest: Digest([]byte("req")), SelectionPolicyDigest: Digest([]byte("pol")),
		TrustSnapshotDigest: Digest([]byte("snap")), TrustEvaluatedAt: created.Add(-time.Second),
		ContextFrameProfile: "urn:context-frame:test",
		Fragments: []Fragment{
			{FormatVersion: 2, SealedObjectDigest: Digest([]byte("o1")), Bytes: []byte("first\n"), DerivedTrust: "trusted", Authorship: "attested", AuthorKeyIDB64u: &author, CustodyPresent: true},
			{FormatVersion: 2, SealedObjectDigest: Digest([]byte("o2")), Bytes: []byte("second\n"), DerivedTrust: "unverified", Authorship: "unknown"},
		},
		Exclusions: map[string]int64{"context_limit": 3, "policy_filtered": 1},
	}
	r, projection, err := NewProjection(in, priv)
	if err != nil {
		t.Fatal(err)
	}
	if string(projection) != "first\nsecond\n" || r.Projection.ByteLength != 13 || r.Projection.Digest != Digest(projection) {
		t.Errorf("projection = %q, commitment %+v", projection, r.Projection)
	}
	if r.Exclusions.Total != 4 {
		t.Errorf("exclusions.total = %d, want 4", r.Exclusions.Total)
	}
	pin := &AdapterPin{AdapterID: in.AdapterID, KeyID: "k1", PublicKey: priv.Public().(ed25519.PublicKey), Status: "active", ValidFrom: created.Add(-time.Hour)}
	// Round trip through the wire form.
	if err := verifyRecord(r.Canonical(), []*AdapterPin{pin}, created); err != nil {
		t.Fatalf("produced record does not verify: %v", err)
	}
	if r.Delivered[1].AuthorKeyIDB64u != nil {
		t.Errorf("null author became %v", *r.Delivered[1].AuthorKeyIDB64u)
	}
	in.Exclusions["made_up"] = 1
	if _, _, err := NewProjection(in, priv); err == nil {
		t.Errorf("unknown exclusion reason accepted")
	}
}

func TestAdapterPins(t *testing.T) {
	fx := loadFixture(t)
	pin := MarshalAdapterPin(fx.pins[0])
	again, err := ParseAdapterPins(pin)
	if err != nil {
		t.Fatalf("round trip: %v\n%s", err, pin)
	}
	if !again[0].PublicKey.Equal(fx.pins[0].PublicKey) || again[0].KeyID != fx.pins[0].KeyID {
		t.Errorf("round trip changed the pin")
	}
	arr := append(append([]byte("["), pin...), ']')
	if pins, err := ParseAdapterPins(arr); err != nil || len(pins) != 1 {
		t.Errorf("array of one pin: %v, %d", err, len(pins))
	}
	bad := map[string][]byte{
		"unknown member": bytes.Replace(pin, []byte(`"alg"`), []byte(`"x": 1, "alg"`), 1),
		"bad status":     bytes.Replace(pin, []byte(`"active"`), []byte(`"enabled"`), 1),
		"weak key":       bytes.Replace(pin, []byte(PublicKeySPKI(fx.pins[0].PublicKey)), []byte(PublicKeySPKI(make([]byte, 32))), 1),
		"to before from": bytes.Replace(pin, []byte(`"2027-07-29T00:00:00.000Z"`), []byte(`"2026-07-28T00:00:00.000Z"`), 1),
		"not json":       []byte("adapter"),
	}
	for name, in := range bad {
		if _, err := ParseAdapterPins(in); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
