package apertomemory

import (
	"crypto/ed25519"
	"errors"
	"slices"
	"testing"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"
)

var (
	testOID   = ObjectID{0xa0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	testScope = ScopeID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	testDEK   = make([]byte, 32)
	testNonce = make([]byte, 12)
)

// payloadMap is a valid payload of the signer, for tests to break.
func payloadMap(signer ed25519.PrivateKey) map[uint64]any {
	kid := KeyIDOf(pubOf(signer))
	return map[uint64]any{1: uint64(2), 2: "content", 3: 0.5, 4: map[uint64]any{1: "t", 2: kid[:]}, 5: uint64(1), 7: map[uint64]any{1: uint64(1750000000)}}
}

func sealMap(t *testing.T, signer ed25519.PrivateKey, p any) []byte {
	t.Helper()
	b, err := sealPayload(marshal(p), signer, KeyIDOf(pubOf(signer)), 2, testOID, testScope, testDEK, testNonce)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLenientRead: an authentic object with schema slips opens, with each
// slip reported and nothing invented; only a payload with nothing to show
// is refused.
func TestLenientRead(t *testing.T) {
	owner := testKey("owner")
	kr, _ := NewKeyring(pubOf(owner))
	for _, tc := range []struct {
		name      string
		change    func(p map[uint64]any)
		violation string
		trust     Trust
		check     func(t *testing.T, o *Object)
	}{
		{"mem-type outside the enumeration", func(p map[uint64]any) { p[1] = uint64(9) }, "", TrustSelf,
			func(t *testing.T, o *Object) {
				if o.Type != 9 || o.Type.String() != "mem-type(9)" {
					t.Errorf("type = %v", o.Type)
				}
			}},
		{"mem-type missing", func(p map[uint64]any) { delete(p, 1) }, ViolationMemType, TrustSelf, nil},
		{"confidence integer 1", func(p map[uint64]any) { p[3] = uint64(1) }, "", TrustSelf,
			func(t *testing.T, o *Object) {
				if o.Confidence == nil || *o.Confidence != 1 {
					t.Errorf("confidence = %v", o.Confidence)
				}
			}},
		{"confidence true", func(p map[uint64]any) { p[3] = true }, ViolationConfidence, TrustSelf, nil},
		{"confidence NaN", func(p map[uint64]any) { p[3] = nanValue() }, ViolationConfidence, TrustSelf, nil},
		{"confidence -1", func(p map[uint64]any) { p[3] = -1.0 }, ViolationConfidence, TrustSelf, nil},
		{"confidence missing", func(p map[uint64]any) { delete(p, 3) }, ViolationConfidence, TrustSelf, nil},
		{"empty content", func(p map[uint64]any) { p[2] = "" }, ViolationEmptyContent, TrustSelf, nil},
		{"tags not an array", func(p map[uint64]any) { p[6] = "a" }, ViolationTags, TrustSelf, nil},
		{"tags of integers", func(p map[uint64]any) { p[6] = []any{1, 2} }, ViolationTags, TrustSelf, nil},
		{"tagged time", func(p map[uint64]any) {
			p[7] = map[uint64]any{1: cbor.Tag{Number: 1, Content: uint64(1750000000)}}
		}, ViolationTimestamps, TrustSelf, nil},
		{"tool missing", func(p map[uint64]any) { p[4].(map[uint64]any)[1] = 5 }, ViolationProvenance, TrustSelf, nil},
		{"custody an integer", func(p map[uint64]any) { p[20] = 5 }, ViolationCustody, TrustUnverified, nil},
		{"custody with a 4-byte proven author", func(p map[uint64]any) {
			k := KeyIDOf(pubOf(owner))
			p[20] = map[uint64]any{1: 1, 2: k[:], 3: 1, 4: []byte{1, 2, 3, 4}}
		}, ViolationCustody, TrustUnverified, nil},
		{"custody without field 3", func(p map[uint64]any) {
			k := KeyIDOf(pubOf(owner))
			p[20] = map[uint64]any{1: 1, 2: k[:], 4: k[:]}
		}, ViolationCustody, TrustUnverified, nil},
		{"custody by the owner naming the owner", func(p map[uint64]any) {
			k := KeyIDOf(pubOf(owner))
			p[20] = map[uint64]any{1: 1, 2: k[:], 3: 1, 4: k[:]}
		}, "", TrustTrusted, func(t *testing.T, o *Object) {
			if o.Authorship != AuthorshipAttested {
				t.Errorf("authorship %s", o.Authorship)
			}
		}},
		{"declared trust 4", func(p map[uint64]any) { p[5] = uint64(4) }, "", TrustSelf, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := payloadMap(owner)
			tc.change(p)
			o, err := OpenObject(sealMap(t, owner, p), testDEK, kr, nil)
			if err != nil {
				t.Fatal(err)
			}
			if o.Trust != tc.trust {
				t.Errorf("trust = %s, want %s", o.Trust, tc.trust)
			}
			if tc.violation == "" && len(o.Violations) != 0 || tc.violation != "" && !slices.Contains(o.Violations, tc.violation) {
				t.Errorf("violations = %q, want %q", o.Violations, tc.violation)
			}
			if tc.check != nil {
				tc.check(t, o)
			}
		})
	}
}

// TestObjectRefusals: the refusals no vector pins.
func TestObjectRefusals(t *testing.T) {
	owner, other := testKey("owner"), testKey("other")
	kr, _ := NewKeyring(pubOf(owner), pubOf(other))
	good := sealMap(t, owner, payloadMap(owner))
	env := func(b []byte, key uint64, v any) []byte {
		var m map[uint64]cbor.RawMessage
		cbor.Unmarshal(b, &m)
		if v == nil {
			delete(m, key)
		} else {
			m[key] = marshal(v)
		}
		return marshal(m)
	}
	// Header variants built at the COSE level.
	sign1 := func(prot cose.ProtectedHeader, payload []byte, after ...func(*cose.Sign1Message)) []byte {
		aad := envelopeAAD(2, testOID, testScope)
		s, _ := cose.NewSigner(cose.AlgorithmEdDSA, owner)
		msg := cose.NewSign1Message()
		msg.Headers.Protected = prot
		msg.Payload = payload
		if err := msg.Sign(nil, aad, s); err != nil {
			t.Fatal(err)
		}
		for _, f := range after {
			f(msg)
		}
		b, err := msg.MarshalCBOR()
		if err != nil {
			t.Fatal(err)
		}
		enc, _ := encrypt0(b, testDEK, testNonce, aad)
		return marshal(map[uint64]any{1: testOID[:], 2: testScope[:], 3: uint64(2), 4: enc})
	}
	ownKid := KeyIDOf(pubOf(owner))
	chacha := func() []byte {
		prot := marshal(map[int64]any{1: 24})
		e := marshal(cbor.Tag{Number: 16, Content: []any{prot, map[int64]any{5: testNonce}, make([]byte, 32)}})
		return marshal(map[uint64]any{1: testOID[:], 2: testScope[:], 3: uint64(2), 4: e})
	}
	noKid := sign1(cose.ProtectedHeader{cose.HeaderLabelAlgorithm: cose.AlgorithmEdDSA}, marshal(payloadMap(owner)))
	if o, err := OpenObject(noKid, testDEK, kr, nil); err != nil || o.Trust != TrustSelf {
		t.Errorf("no protected kid (the reference accepts it): %v, %v", o, err)
	}
	for _, tc := range []struct {
		name   string
		sealed []byte
		want   error
	}{
		{"format_version 3", env(good, 3, uint64(3)), ErrUnsupportedVersion},
		{"format_version 0", env(good, 3, uint64(0)), ErrUnsupportedVersion},
		{"no field 4", env(good, 4, nil), ErrMalformedObject},
		{"15-byte id", env(good, 1, make([]byte, 15)), ErrMalformedObject},
		{"scope_id a string", env(good, 2, "0102030405060708"), ErrMalformedObject},
		{"dek_wrap_ref of 3 bytes", env(good, 5, []byte{1, 2, 3}), ErrMalformedObject},
		{"field 4 untagged", env(good, 4, []any{}), ErrMalformedObject},
		{"ChaCha20/Poly1305", chacha(), ErrUnsupportedAlgorithm},
		{"wrong DEK", good, ErrEnvelopeBinding},
		{"Sign1 alg ES256", sign1(cose.ProtectedHeader{cose.HeaderLabelAlgorithm: cose.AlgorithmEdDSA, cose.HeaderLabelKeyID: ownKid[:]}, marshal(payloadMap(owner)),
			func(m *cose.Sign1Message) { m.Headers.Protected[cose.HeaderLabelAlgorithm] = cose.AlgorithmES256 }), ErrUnsupportedAlgorithm},
		{"payload with a text key", sealMap(t, owner, map[any]any{uint64(1): 2, "2": "x"}), ErrMalformedPayload},
		{"payload an array", sealMap(t, owner, []any{1, 2}), ErrMalformedPayload},
		{"content missing", sealMap(t, owner, func() map[uint64]any { p := payloadMap(owner); delete(p, 2); return p }()), ErrMalformedPayload},
		{"content bytes", sealMap(t, owner, func() map[uint64]any { p := payloadMap(owner); p[2] = []byte("x"); return p }()), ErrMalformedPayload},
		{"author_key_id missing, owner signed", sealMap(t, owner, func() map[uint64]any {
			p := payloadMap(owner)
			p[4] = map[uint64]any{1: "t"}
			return p
		}()), ErrInconsistentKid},
		{"signed by the owner, naming the other", sign1(cose.ProtectedHeader{cose.HeaderLabelAlgorithm: cose.AlgorithmEdDSA},
			marshal(payloadMap(other))), ErrAuthorMismatch},
		{"trailing byte", append(append([]byte{}, good...), 0), ErrMalformedObject},
	} {
		dek := testDEK
		if tc.name == "wrong DEK" {
			dek = make([]byte, 32)
			dek[0] = 1
		}
		for _, allow := range []bool{false, true} {
			o, err := OpenObject(tc.sealed, dek, kr, &OpenOptions{AllowUnverified: allow})
			if !errors.Is(err, tc.want) || o != nil {
				t.Errorf("%s (allow %v): %v, %v; want %v", tc.name, allow, o, err, tc.want)
			}
		}
	}
	if _, err := OpenObject(good, testDEK, kr, &OpenOptions{Limits: &Limits{MaxObjectBytes: len(good) - 1}}); !errors.Is(err, ErrObjectTooLarge) {
		t.Errorf("over the object cap: %v", err)
	}
}
