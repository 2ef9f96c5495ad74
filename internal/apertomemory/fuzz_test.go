package apertomemory

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// checkObject holds an opened object to the derivation rules: whatever the
// bytes, trust is never above what the verifying key and the custody rule
// allow, and the labels always frame.
func checkObject(t *testing.T, o *Object, kr *Keyring) {
	t.Helper()
	switch o.Trust {
	case TrustSelf, TrustTrusted, TrustUnverified:
	default:
		t.Fatalf("trust %q", o.Trust)
	}
	if _, err := FrameV0(o.FrameLabels(), o.Content); err != nil {
		t.Fatalf("labels %+v do not frame: %v", o.FrameLabels(), err)
	}
	if o.CustodyPresent() && o.Trust == TrustSelf {
		t.Fatal("custody record opened as self")
	}
	if o.Trust == TrustSelf && (o.Signer == nil || *o.Signer != kr.Owner() || o.Custody != nil || o.Authorship != AuthorshipSigned) {
		t.Fatalf("self without the owner's signature: %+v", o)
	}
	if o.Trust != TrustUnverified && o.Signer == nil {
		t.Fatalf("%s with no verified signer", o.Trust)
	}
	if o.Signer != nil && *o.Signer != kr.Owner() {
		if _, ok := kr.AcceptedKey(*o.Signer); !ok {
			t.Fatalf("signer %s is not in the keyring", o.Signer)
		}
	}
	if o.Trust == TrustUnverified && o.Author != nil {
		t.Fatal("unverified object reports an author")
	}
	if o.Authorship == AuthorshipAttested {
		if o.Custody == nil || o.Custody.ProvenAuthor == nil || *o.Author != *o.Custody.ProvenAuthor ||
			o.Signer == nil || *o.Signer != kr.Owner() || !kr.isAccepted(*o.Author) {
			t.Fatalf("attested without an honoured custody record: %+v", o)
		}
	}
	if o.Custody != nil && o.Custody.ProvenAuthor != nil && o.Authorship != AuthorshipAttested {
		t.Fatal("an attestation that is not honoured is reported")
	}
	if c := o.Confidence; c != nil && (math.IsNaN(*c) || *c < 0 || *c > 1) {
		t.Fatalf("confidence %v propagated", *c)
	}
	if o.FormatVersion == 1 && o.Trust != TrustUnverified {
		t.Fatal("format_version 1 object reported as verified")
	}
}

// FuzzOpenObject fuzzes the object parser twice over: sealed bytes opened
// as they are (envelope, COSE_Encrypt0, COSE_Sign1), and arbitrary payload
// bytes sealed validly by the owner and opened (the payload decoder and the
// trust derivation behind the cryptography).
func FuzzOpenObject(f *testing.F) {
	vf := loadVectors(f)
	dek := unhex(f, "2b7e151628aed2a6abf7158809cf4f3c762e7160f38b4da56a784d9045190cfe")
	owner, other := vectorOwner(f), vectorOther(f)
	kr, _ := NewKeyring(owner.SignPub(), other.SignPub())
	for name, v := range vf.Vectors {
		raw, ok := v.Input["sealed_object"]
		if !ok {
			raw, ok = v.Expect["sealed_object"]
		}
		if !ok {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			f.Fatal(name, err)
		}
		sealed := unhex(f, s)
		var payload []byte
		if o, err := OpenObject(sealed, dek, kr, &OpenOptions{AllowUnverified: true}); err == nil {
			payload = o.Payload
		}
		f.Add(sealed, payload)
	}
	var id ObjectID
	var scope ScopeID
	nonce := make([]byte, 12)
	f.Fuzz(func(t *testing.T, sealed, payload []byte) {
		for _, allow := range []bool{false, true} {
			o, err := OpenObject(sealed, dek, kr, &OpenOptions{AllowUnverified: allow})
			if err != nil {
				if RefusalOf(err) == nil || o != nil {
					t.Fatalf("error without a refusal: %v", err)
				}
				continue
			}
			checkObject(t, o, kr)
		}
		if len(payload) > 1<<16 {
			return
		}
		for _, signer := range []*Identity{owner, other} {
			obj, err := sealPayload(payload, signer.SigningKey(), signer.KeyID(), 2, id, scope, dek, nonce)
			if err != nil {
				t.Fatal(err)
			}
			o, err := OpenObject(obj, dek, kr, nil)
			if err != nil {
				if RefusalOf(err) == nil {
					t.Fatalf("error without a refusal: %v", err)
				}
				continue
			}
			checkObject(t, o, kr)
			if !bytes.Equal(o.Payload, payload) {
				t.Fatal("payload not kept verbatim")
			}
			if signer == other && o.Trust == TrustSelf {
				t.Fatal("third party's object opened as self")
			}
		}
	})
}

// FuzzParseContainer fuzzes the container parser and the per-object
// isolation behind it: any bytes either fail with one container error or
// parse into a container that re-encodes stably and opens with every
// object either opened under the derivation rules or refused.
func FuzzParseContainer(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "reference", "*.amem"))
	files = append(files, filepath.Join("testdata", "memtrail-written.amem"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	fx := newFixture(f)
	f.Add(fx.w.Bytes())
	id := fx.w.Identity()
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseContainer(data)
		if err != nil {
			if c != nil {
				t.Fatal("container and error")
			}
			return
		}
		m1 := c.Marshal()
		c2, err := ParseContainer(m1)
		if err != nil {
			t.Fatalf("re-encoded container does not parse: %v", err)
		}
		if !bytes.Equal(c2.Marshal(), m1) {
			t.Fatal("re-encoding is not stable")
		}
		for _, allow := range []bool{false, true} {
			v, err := c.OpenWithIdentity(id, &OpenOptions{AllowUnverified: allow})
			if err != nil {
				return // another identity
			}
			if len(v.Entries) != len(c.Objects) {
				t.Fatal("entries lost")
			}
			for _, e := range v.Entries {
				if (e.Object == nil) == (e.Err == nil) {
					t.Fatalf("entry %d: object %v, error %v", e.Index, e.Object, e.Err)
				}
				if e.Err != nil && RefusalOf(e.Err) == nil {
					t.Fatalf("entry %d: error without a refusal: %v", e.Index, e.Err)
				}
				if e.Object != nil {
					checkObject(t, e.Object, v.Keyring)
				}
			}
		}
	})
}
