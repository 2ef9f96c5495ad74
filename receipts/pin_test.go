package receipts

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"
	"time"
)

// pinFile writes pins as an --adapters file: a JSON array.
func pinFile(pins ...*AdapterPin) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, p := range pins {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(MarshalAdapterPin(p))
	}
	b.WriteByte(']')
	return b.Bytes()
}

func codeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// TestDuplicateAdapterPins: several pins for one adapter id and key id
// never widen what one of them allows. Pins that disagree on the key are
// refused; among pins of the same key the most restrictive status,
// revocation and validity window apply, whatever their order.
func TestDuplicateAdapterPins(t *testing.T) {
	fx := loadFixture(t)
	active := fx.pins[0]
	r, err := ParseProjectionRecord(fx.record)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyProjectionSignature(r, []*AdapterPin{active}, fx.now); err != nil {
		t.Fatalf("the vector's own pin: %v", err)
	}
	with := func(f func(p *AdapterPin)) *AdapterPin {
		c := *active
		f(&c)
		return &c
	}
	rev := fx.now.Add(-time.Second)
	later := r.CreatedAt.Add(time.Second)
	cases := []struct {
		name string
		pins []*AdapterPin
		code Code
	}{
		{"active then revoked", []*AdapterPin{active, with(func(p *AdapterPin) { p.Status, p.RevokedAt = "revoked", &rev })}, CodeAdapterKeyRevoked},
		{"revoked then active", []*AdapterPin{with(func(p *AdapterPin) { p.Status, p.RevokedAt = "revoked", &rev }), active}, CodeAdapterKeyRevoked},
		{"revoked for every time", []*AdapterPin{active, with(func(p *AdapterPin) { p.Status = "revoked" }),
			with(func(p *AdapterPin) { p.Status, p.RevokedAt = "revoked", &rev })}, CodeAdapterKeyRevoked},
		{"revoked_at on an active pin", []*AdapterPin{active, with(func(p *AdapterPin) { p.RevokedAt = &rev })}, CodeAdapterKeyRevoked},
		{"valid only after created_at", []*AdapterPin{active, with(func(p *AdapterPin) { p.ValidFrom = later })}, CodeAdapterKeyExpired},
		{"expired by created_at", []*AdapterPin{with(func(p *AdapterPin) { p.ValidTo = &r.CreatedAt }), active}, CodeAdapterKeyExpired},
		{"identical pins", []*AdapterPin{active, with(func(*AdapterPin) {})}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pins, err := ParseAdapterPins(pinFile(c.pins...))
			if err != nil {
				t.Fatalf("ParseAdapterPins: %v", err)
			}
			err = VerifyProjectionSignature(r, pins, fx.now)
			if codeOf(err) != c.code || (c.code == "") != (err == nil) {
				t.Fatalf("verified with %v, want %q", err, c.code)
			}
			// The pins given are not changed by the merge.
			if active.Status != "active" || active.RevokedAt != nil || active.ValidTo == nil || !active.ValidFrom.Before(r.CreatedAt) {
				t.Fatalf("the pin was modified: %+v", active)
			}
		})
	}

	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	conflicting := with(func(p *AdapterPin) { p.PublicKey = pub })
	if _, err := ParseAdapterPins(pinFile(active, conflicting)); err == nil {
		t.Errorf("a pin file pinning two keys under one adapter id and key id was accepted")
	}
	if err := CheckAdapterPins([]*AdapterPin{conflicting, active}); err == nil {
		t.Errorf("CheckAdapterPins accepted two keys under one adapter id and key id")
	}
	if err := CheckAdapterPins([]*AdapterPin{active, with(func(p *AdapterPin) { p.Status = "revoked" })}); err != nil {
		t.Errorf("CheckAdapterPins refused pins of one key: %v", err)
	}
	// Handed to the verifier anyway, ambiguous pins verify nothing.
	for _, pins := range [][]*AdapterPin{{active, conflicting}, {conflicting, active}} {
		if err := VerifyProjectionSignature(r, pins, fx.now); codeOf(err) != CodeAdapterKeyNotPinned {
			t.Errorf("ambiguous pins: %v, want %s", err, CodeAdapterKeyNotPinned)
		}
	}
}
