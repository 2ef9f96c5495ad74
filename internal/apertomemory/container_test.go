package apertomemory

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

func testKey(label string) ed25519.PrivateKey {
	s := sha256.Sum256([]byte(label))
	return ed25519.NewKeyFromSeed(s[:])
}

func pubOf(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

func mem(content string) *Memory {
	return &Memory{Type: Semantic, Content: content, Confidence: 0.5, Tool: "memtrail/test", Created: 1750000000}
}

// fixture is a small vault of the vectors' owner: every kind of object,
// each with the trust it must open with.
type fixture struct {
	w     *Writer
	third ed25519.PrivateKey
	want  map[ObjectID]Trust
	name  map[ObjectID]string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{w: NewWriterWithIdentity(vectorOwner(t), ownerSalt), third: testKey("third"),
		want: map[ObjectID]Trust{}, name: map[ObjectID]string{}}
	for _, s := range []string{"personal", "work"} {
		if _, err := f.w.AddScope(s); err != nil {
			t.Fatal(err)
		}
	}
	thirdID, _ := f.w.Accept(pubOf(f.third))
	stranger := testKey("stranger")
	owner := f.w.Identity().SigningKey()
	for _, o := range []struct {
		name, scope string
		signer      ed25519.PrivateKey
		custody     *CustodyRecord
		trust       Trust
	}{
		{"self-work", "work", owner, nil, TrustSelf},
		{"self-personal", "personal", owner, nil, TrustSelf},
		{"trusted", "work", f.third, nil, TrustTrusted},
		{"attested", "work", owner, &CustodyRecord{1, thirdID, 1755000000, &thirdID}, TrustTrusted},
		{"quarantined", "personal", owner, &CustodyRecord{1, KeyIDOf(pubOf(stranger)), 1755000000, nil}, TrustUnverified},
	} {
		m := mem(o.name)
		m.Custody = o.custody
		id, err := f.w.SealBy(o.scope, m, o.signer)
		if err != nil {
			t.Fatal(err)
		}
		f.want[id], f.name[id] = o.trust, o.name
	}
	sid, err := f.w.SealBy("work", mem("stranger"), stranger) // refused: not accepted
	if err != nil {
		t.Fatal(err)
	}
	f.want[sid], f.name[sid] = TrustUnverified, "stranger"
	return f
}

func (f *fixture) open(t testing.TB, c *Container, opts *OpenOptions) *Vault {
	t.Helper()
	v, err := c.OpenWithIdentity(f.w.Identity(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func reparse(t testing.TB, c *Container) *Container {
	t.Helper()
	c2, err := ParseContainer(c.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	return c2
}

// checkNoUpgrade: every object that opened has at most the trust it has in
// the clean fixture; the reasons of the refused ones are returned by name.
func (f *fixture) checkNoUpgrade(t testing.TB, v *Vault) map[string]error {
	t.Helper()
	rank := map[Trust]int{TrustUnverified: 0, TrustTrusted: 1, TrustSelf: 2}
	refused := map[string]error{}
	for _, e := range v.Entries {
		if e.Object == nil {
			if e.Err == nil || RefusalOf(e.Err) == nil {
				t.Errorf("entry %d: no object and no refusal (%v)", e.Index, e.Err)
			}
			if id, _, _, err := ParseEnvelope(e.Sealed); err == nil {
				refused[f.name[id]] = e.Err
			} else {
				refused["#"+string(rune('0'+e.Index))] = e.Err
			}
			continue
		}
		want, known := f.want[e.Object.ID]
		if !known {
			want = TrustUnverified
		}
		if rank[e.Object.Trust] > rank[want] {
			t.Errorf("%s opened as %s, more than its %s", f.name[e.Object.ID], e.Object.Trust, want)
		}
	}
	return refused
}

func TestContainerRoundTrip(t *testing.T) {
	f := newFixture(t)
	data := f.w.Bytes()
	c, err := ParseContainer(data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.Marshal(), data) {
		t.Error("Marshal(ParseContainer(b)) != b")
	}
	before := testingOnlyArgon2Calls.Load()
	v, err := c.Open([]byte(ownerPass), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := testingOnlyArgon2Calls.Load() - before; n != 1 {
		t.Errorf("Open ran Argon2id %d times, want 1", n)
	}
	if len(v.Entries) != 6 || len(v.Opened()) != 5 {
		t.Fatalf("%d entries, %d opened; want 6 and 5", len(v.Entries), len(v.Opened()))
	}
	for _, o := range v.Opened() {
		if o.Trust != f.want[o.ID] {
			t.Errorf("%s: trust %s, want %s", f.name[o.ID], o.Trust, f.want[o.ID])
		}
		if o.Content != f.name[o.ID] {
			t.Errorf("content %q, want %q", o.Content, f.name[o.ID])
		}
	}
	ref := v.Refused()
	if len(ref) != 1 || !errors.Is(ref[0].Err, ErrNotAuthenticated) {
		t.Errorf("refused = %v, want the stranger's object, not authenticated", ref)
	}
	if got := v.Keyring.Accepted(); len(got) != 1 || got[0] != KeyIDOf(pubOf(f.third)) {
		t.Errorf("accepted = %v", got)
	}
	for _, s := range v.Scopes {
		if s.Err != nil {
			t.Errorf("scope %s: %v", s.Name, s.Err)
		}
	}
	// Opened with the opt-in, the stranger's object reads as unverified,
	// with its claim exposed and no author.
	v2 := f.open(t, c, &OpenOptions{AllowUnverified: true})
	for _, e := range v2.Entries {
		if e.Err != nil {
			t.Errorf("with the opt-in: %v", e.Err)
		} else if e.Object.Content == "stranger" && (e.Object.Trust != TrustUnverified || e.Object.Author != nil || e.Object.ClaimedAuthor == nil) {
			t.Errorf("stranger's object with the opt-in = %+v", e.Object)
		}
	}
	// OpenSealed opens bytes from outside with the vault's keys.
	o, err := v.OpenSealed(v.Entries[0].Sealed)
	if err != nil || o.Content != v.Entries[0].Object.Content {
		t.Errorf("OpenSealed = %v, %v", o, err)
	}
}

// TestArgon2OncePerVault: opening a vault of 200 objects runs Argon2id once.
func TestArgon2OncePerVault(t *testing.T) {
	w := NewWriterWithIdentity(vectorOwner(t), ownerSalt)
	w.AddScope("s")
	for range 200 {
		if _, err := w.Seal("s", mem("m")); err != nil {
			t.Fatal(err)
		}
	}
	c, err := ParseContainer(w.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	before := testingOnlyArgon2Calls.Load()
	v, err := c.Open([]byte(ownerPass), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := testingOnlyArgon2Calls.Load() - before; n != 1 || len(v.Opened()) != 200 {
		t.Errorf("Argon2id runs = %d, opened = %d; want 1 and 200", n, len(v.Opened()))
	}
}

func TestContainerWrongPassphrase(t *testing.T) {
	f := newFixture(t)
	c := reparse(t, f.w.Container())
	if _, err := c.Open([]byte("correct horse battery stapler"), nil); !errors.Is(err, ErrWrongPassphrase) {
		t.Errorf("wrong passphrase: %v, want ErrWrongPassphrase", err)
	}
	// A container whose sign_pub (or ka_pub) was replaced: the passphrase
	// derives an identity that does not match it.
	c.SignPub = pubOf(testKey("impostor"))
	if _, err := reparse(t, c).Open([]byte(ownerPass), nil); !errors.Is(err, ErrWrongPassphrase) {
		t.Errorf("replaced sign_pub: %v, want ErrWrongPassphrase", err)
	}
	c = reparse(t, f.w.Container())
	c.KAPub[0] ^= 1
	if _, err := c.OpenWithIdentity(f.w.Identity(), nil); !errors.Is(err, ErrWrongPassphrase) {
		t.Errorf("replaced ka_pub: %v, want ErrWrongPassphrase", err)
	}
}

func TestContainerTruncated(t *testing.T) {
	data := newFixture(t).w.Bytes()
	for _, n := range []int{0, 1, 10, len(data) / 3, len(data) / 2, len(data) - 40, len(data) - 1} {
		c, err := ParseContainer(data[:n])
		if !errors.Is(err, ErrMalformedContainer) || c != nil {
			t.Errorf("truncated to %d of %d: %v, want ErrMalformedContainer", n, len(data), err)
		}
	}
	for _, bad := range [][]byte{{0xa0}, {0x80}, append(append([]byte{}, data...), 0x00), []byte("not cbor at all")} {
		if _, err := ParseContainer(bad); !errors.Is(err, ErrMalformedContainer) {
			t.Errorf("ParseContainer(%x...) = %v, want ErrMalformedContainer", bad[:1], err)
		}
	}
	raw := marshal(map[uint64]any{1: uint64(2), 2: map[string]any{}, 3: []any{}, 4: map[string]any{}})
	if _, err := ParseContainer(raw); !errors.Is(err, ErrUnsupportedExport) {
		t.Errorf("export_version 2: %v", err)
	}
}

func TestContainerCaps(t *testing.T) {
	f := newFixture(t)
	data := f.w.Bytes()
	if _, err := (Limits{MaxContainerBytes: len(data) - 1}).ParseContainer(data); !errors.Is(err, ErrContainerTooLarge) {
		t.Errorf("container over its cap: %v", err)
	}
	if _, err := (Limits{MaxObjects: 5}).ParseContainer(data); !errors.Is(err, ErrContainerTooLarge) {
		t.Errorf("6 objects, cap 5: %v", err)
	}
	if _, err := (Limits{MaxScopes: 1}).ParseContainer(data); !errors.Is(err, ErrContainerTooLarge) {
		t.Errorf("2 scopes, cap 1: %v", err)
	}
	if _, err := (Limits{MaxKnownKeys: 1}).ParseContainer(data); err != nil {
		t.Errorf("1 known key, cap 1: %v", err)
	}
	// One oversized object is refused on its own.
	id, err := f.w.Seal("work", mem(strings.Repeat("x", 400)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := (Limits{MaxObjectBytes: 400}).ParseContainer(f.w.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	v := f.open(t, c, nil)
	f.checkNoUpgrade(t, v)
	if n := len(v.Opened()); n != 5 {
		t.Errorf("%d opened next to the oversized object, want 5", n)
	}
	for _, e := range v.Entries {
		if eid, _, _, _ := ParseEnvelope(e.Sealed); eid == id && !errors.Is(e.Err, ErrObjectTooLarge) {
			t.Errorf("oversized object: %v, want ErrObjectTooLarge", e.Err)
		}
	}
	// At the default cap: an object over 1 MiB.
	w2 := NewWriterWithIdentity(vectorOwner(t), ownerSalt)
	w2.AddScope("s")
	w2.Seal("s", mem("small"))
	w2.Seal("s", mem(strings.Repeat("y", 1<<20)))
	c2, err := ParseContainer(w2.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	v2, _ := c2.OpenWithIdentity(vectorOwner(t), nil)
	if len(v2.Opened()) != 1 || !errors.Is(v2.Refused()[0].Err, ErrObjectTooLarge) {
		t.Errorf("1 MiB object: opened %d, refused %v", len(v2.Opened()), v2.Refused())
	}
}

// TestHostileContainers: each hostile change to a vault refuses the
// objects it touches, with the named reason, opens the rest, and never
// raises an object's trust.
func TestHostileContainers(t *testing.T) {
	f := newFixture(t)
	byName := func(c *Container, name string) int {
		for i, b := range c.Objects {
			if id, _, _, err := ParseEnvelope(b); err == nil && f.name[id] == name {
				return i
			}
		}
		t.Fatalf("no object %s", name)
		return -1
	}
	scopeIdx := func(c *Container, name string) int {
		for i, s := range c.Scopes {
			if s.Name == name {
				return i
			}
		}
		t.Fatalf("no scope %s", name)
		return -1
	}
	rewriteEnv := func(b []byte, key uint64, val any) []byte {
		var m map[uint64]cbor.RawMessage
		if err := cbor.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m[key] = marshal(val)
		return marshal(m)
	}
	for _, tc := range []struct {
		name   string
		mutate func(c *Container) []byte // nil result: c.Marshal()
		opts   *OpenOptions
		want   map[string]error // refused objects and their reasons
		opened int
	}{
		{name: "clean", want: map[string]error{"stranger": ErrNotAuthenticated}, opened: 5},
		{name: "duplicate object id", mutate: func(c *Container) []byte {
			c.Objects = append(c.Objects, c.Objects[byName(c, "self-work")])
			return nil
		}, want: map[string]error{"self-work": ErrDuplicateObjectID, "stranger": ErrNotAuthenticated}, opened: 4},
		{name: "duplicate wrapped DEK", mutate: func(c *Container) []byte {
			// Hand-built DEK map with one id filed twice.
			id, _, _, _ := ParseEnvelope(c.Objects[byName(c, "trusted")])
			var buf bytes.Buffer
			n := len(c.DEKs) + 1
			buf.WriteByte(0xa0 | byte(n))
			for oid, w := range c.DEKs {
				buf.Write(marshal(oid[:]))
				buf.Write(marshal(w))
			}
			buf.Write(marshal(id[:]))
			buf.Write(marshal(c.DEKs[id]))
			return c.marshalWith(cbor.RawMessage(buf.Bytes()))
		}, want: map[string]error{"trusted": ErrDuplicateObjectID, "stranger": ErrNotAuthenticated}, opened: 4},
		{name: "DEK of another scope", mutate: func(c *Container) []byte {
			// The personal object's DEK replaced by one wrapped under the
			// work KEK.
			id, _, _, _ := ParseEnvelope(c.Objects[byName(c, "self-personal")])
			other, _, _, _ := ParseEnvelope(c.Objects[byName(c, "self-work")])
			c.DEKs[id] = c.DEKs[other]
			return nil
		}, want: map[string]error{"self-personal": ErrDEKUnwrap, "stranger": ErrNotAuthenticated}, opened: 4},
		{name: "object moved to another scope", mutate: func(c *Container) []byte {
			i := byName(c, "self-personal")
			c.Objects[i] = rewriteEnv(c.Objects[i], 2, c.Scopes[scopeIdx(c, "work")].ID[:])
			return nil
		}, want: map[string]error{"self-personal": ErrDEKUnwrap, "stranger": ErrNotAuthenticated}, opened: 4},
		{name: "moved with a DEK rewrapped for the new scope", mutate: func(c *Container) []byte {
			// An attacker holding the work KEK still cannot move an
			// object: the envelope-aad binds scope_id.
			i := byName(c, "self-personal")
			id, _, _, _ := ParseEnvelope(c.Objects[i])
			pk, _ := f.w.Identity().UnwrapKEK(c.Scopes[scopeIdx(c, "personal")].KEKWrapped, c.Scopes[scopeIdx(c, "personal")].EphPub, c.Scopes[scopeIdx(c, "personal")].ID)
			wk, _ := f.w.Identity().UnwrapKEK(c.Scopes[scopeIdx(c, "work")].KEKWrapped, c.Scopes[scopeIdx(c, "work")].EphPub, c.Scopes[scopeIdx(c, "work")].ID)
			dek, _ := UnwrapDEK(c.DEKs[id], pk)
			c.DEKs[id], _ = WrapDEK(dek, wk)
			c.Objects[i] = rewriteEnv(c.Objects[i], 2, c.Scopes[scopeIdx(c, "work")].ID[:])
			return nil
		}, want: map[string]error{"self-personal": ErrEnvelopeBinding, "stranger": ErrNotAuthenticated}, opened: 4},
		{name: "swapped scope ids", mutate: func(c *Container) []byte {
			a, b := scopeIdx(c, "personal"), scopeIdx(c, "work")
			c.Scopes[a].ID, c.Scopes[b].ID = c.Scopes[b].ID, c.Scopes[a].ID
			return nil
		}, want: map[string]error{"self-work": ErrScopeKeyUnavailable, "self-personal": ErrScopeKeyUnavailable,
			"trusted": ErrScopeKeyUnavailable, "attested": ErrScopeKeyUnavailable, "quarantined": ErrScopeKeyUnavailable,
			"stranger": ErrScopeKeyUnavailable}, opened: 0},
		{name: "two scopes with one scope_id", mutate: func(c *Container) []byte {
			c.Scopes[scopeIdx(c, "personal")].ID = c.Scopes[scopeIdx(c, "work")].ID
			return nil
		}, want: map[string]error{"self-work": ErrScopeKeyUnavailable, "self-personal": ErrUnknownScope,
			"trusted": ErrScopeKeyUnavailable, "attested": ErrScopeKeyUnavailable, "quarantined": ErrUnknownScope,
			"stranger": ErrScopeKeyUnavailable}, opened: 0},
		{name: "scope removed", mutate: func(c *Container) []byte {
			c.Scopes = slicesDelete(c.Scopes, scopeIdx(c, "personal"))
			return nil
		}, want: map[string]error{"self-personal": ErrUnknownScope, "quarantined": ErrUnknownScope, "stranger": ErrNotAuthenticated}, opened: 3},
		{name: "DEK missing", mutate: func(c *Container) []byte {
			id, _, _, _ := ParseEnvelope(c.Objects[byName(c, "attested")])
			delete(c.DEKs, id)
			return nil
		}, want: map[string]error{"attested": ErrMissingDEK, "stranger": ErrNotAuthenticated}, opened: 4},
		{name: "corrupt objects", mutate: func(c *Container) []byte {
			i := byName(c, "trusted")
			b := bytes.Clone(c.Objects[i])
			b[len(b)-1] ^= 0x01
			c.Objects[i] = b
			j := byName(c, "attested")
			c.Objects[j] = c.Objects[j][:len(c.Objects[j])-5]
			c.Objects = append(c.Objects, []byte("garbage"), nil, marshal(map[uint64]any{1: 1}))
			return nil
		}, want: map[string]error{"trusted": ErrEnvelopeBinding, "stranger": ErrNotAuthenticated}, opened: 3},
		{name: "known_keys id does not match its key", mutate: func(c *Container) []byte {
			c.KnownKeys[0].ID = KeyIDOf(pubOf(testKey("someone else"))).String()
			return nil
		}, want: map[string]error{"trusted": ErrNotAuthenticated, "stranger": ErrNotAuthenticated}, opened: 4},
		{name: "known_keys key not 32 bytes", mutate: func(c *Container) []byte {
			c.KnownKeys[0].Pub = c.KnownKeys[0].Pub[:31]
			return nil
		}, want: map[string]error{"trusted": ErrNotAuthenticated, "stranger": ErrNotAuthenticated}, opened: 4},
		{name: "key added to known_keys, caller's own keyring", mutate: func(c *Container) []byte {
			s := pubOf(testKey("stranger"))
			c.KnownKeys = append(c.KnownKeys, KnownKey{KeyIDOf(s).String(), s})
			return nil
		}, opts: func() *OpenOptions {
			kr, _ := NewKeyring(vectorOwner(t).SignPub(), pubOf(testKey("third")))
			return &OpenOptions{Keyring: kr}
		}(), want: map[string]error{"stranger": ErrNotAuthenticated}, opened: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := reparse(t, f.w.Container())
			var data []byte
			if tc.mutate != nil {
				data = tc.mutate(c)
			}
			if data == nil {
				data = c.Marshal()
			}
			c2, err := ParseContainer(data)
			if err != nil {
				t.Fatalf("ParseContainer: %v", err)
			}
			v := f.open(t, c2, tc.opts)
			refused := f.checkNoUpgrade(t, v)
			if strings.HasPrefix(tc.name, "known_keys") && len(v.KeyringProblems) != 1 {
				t.Errorf("keyring problems = %v, want one", v.KeyringProblems)
			}
			if got := len(v.Opened()); got != tc.opened {
				t.Errorf("opened %d, want %d", got, tc.opened)
			}
			for name, want := range tc.want {
				if err := refused[name]; !errors.Is(err, want) {
					t.Errorf("%s: %v, want %v", name, err, want)
				}
			}
			for name, err := range refused {
				if _, ok := tc.want[name]; !ok && !strings.HasPrefix(name, "#") && name != "" {
					t.Errorf("%s refused unexpectedly: %v", name, err)
				}
			}
		})
	}
}

func slicesDelete(s []Scope, i int) []Scope { return append(s[:i:i], s[i+1:]...) }

// TestForgedReferenceContainerReasons: the reference's hostile container
// gives the refusal each of its objects names; the rest open with derived
// trust.
func TestForgedReferenceContainerReasons(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "reference", "forged.amem"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseContainer(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, allow := range []bool{false, true} {
		v, err := c.Open([]byte("memtrail reference vault"), &OpenOptions{AllowUnverified: allow})
		if err != nil {
			t.Fatal(err)
		}
		reasons := map[*Refusal]int{}
		opened := map[string]*Object{}
		for _, e := range v.Entries {
			if e.Err != nil {
				reasons[RefusalOf(e.Err)]++
			} else {
				opened[e.Object.Content] = e.Object
			}
		}
		for _, r := range []*Refusal{ErrAuthorMismatch, ErrInconsistentKid, ErrEnvelopeBinding, ErrVersionDowngrade} {
			if reasons[r] != 1 {
				t.Errorf("allow %v: %s refused %d times, want once (all: %v)", allow, r.Code, reasons[r], reasons)
			}
		}
		for content, trust := range map[string]Trust{"the one genuine memory": TrustSelf, "confidence 42": TrustSelf,
			"empty custody": TrustUnverified, "custody by a non-owner": TrustUnverified} {
			if o := opened[content]; o == nil || o.Trust != trust {
				t.Errorf("allow %v: %q = %+v, want %s", allow, content, o, trust)
			}
		}
		if o := opened["confidence 42"]; o != nil && o.Confidence != nil {
			t.Errorf("confidence 42 reported as %v", *o.Confidence)
		}
	}
}

func TestSealRefusesInvalid(t *testing.T) {
	k := testKey("p")
	kid := KeyIDOf(pubOf(k))
	for name, m := range map[string]*Memory{
		"confidence 1.5":        {Type: Semantic, Content: "x", Confidence: 1.5, Tool: "t", Created: 1},
		"confidence -0.1":       {Type: Semantic, Content: "x", Confidence: -0.1, Tool: "t", Created: 1},
		"empty content":         {Type: Semantic, Content: "", Confidence: 0.5, Tool: "t", Created: 1},
		"invalid UTF-8":         {Type: Semantic, Content: "\xff", Confidence: 0.5, Tool: "t", Created: 1},
		"mem-type 4":            {Type: 4, Content: "x", Confidence: 0.5, Tool: "t", Created: 1},
		"empty custody":         {Type: Semantic, Content: "x", Confidence: 0.5, Tool: "t", Created: 1, Custody: &CustodyRecord{}},
		"incomplete custody":    {Type: Semantic, Content: "x", Confidence: 0.5, Tool: "t", Created: 1, Custody: &CustodyRecord{FromVersion: 1, ClaimedAuthor: kid}},
		"extra key 3":           {Type: Semantic, Content: "x", Confidence: 0.5, Tool: "t", Created: 1, Extra: map[uint64]cbor.RawMessage{3: {0x01}}},
		"extra not well-formed": {Type: Semantic, Content: "x", Confidence: 0.5, Tool: "t", Created: 1, Extra: map[uint64]cbor.RawMessage{30: {0x18}}},
		"no tool":               {Type: Semantic, Content: "x", Confidence: 0.5, Created: 1},
		"no created":            {Type: Semantic, Content: "x", Confidence: 0.5, Tool: "t"},
	} {
		if _, _, _, err := Seal(m, k, ScopeID{}); err == nil {
			t.Errorf("Seal(%s) succeeded", name)
		}
	}
	nan := mem("x")
	nan.Confidence = nanValue()
	if _, _, _, err := Seal(nan, k, ScopeID{}); err == nil {
		t.Error("Seal with NaN confidence succeeded")
	}
}

func nanValue() float64 { z := 0.0; return z / z }

// TestPreservesUnknownKeys: unrecognised payload keys come back verbatim,
// and the signed payload is available byte for byte.
func TestPreservesUnknownKeys(t *testing.T) {
	k := testKey("p")
	m := mem("x")
	m.Extra = map[uint64]cbor.RawMessage{9: marshal(uint64(1)), 30: marshal(map[string]any{"a": []any{1.5, "b"}})}
	m.Session, m.Updated, m.Tags = "s", 1750000001, []string{"a", "b"}
	sealed, _, dek, err := Seal(m, k, ScopeID{1})
	if err != nil {
		t.Fatal(err)
	}
	kr, _ := NewKeyring(pubOf(k))
	o, err := OpenObject(sealed, dek, kr, nil)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range m.Extra {
		if !bytes.Equal(o.Extra[key], want) {
			t.Errorf("Extra[%d] = %x, want %x", key, o.Extra[key], want)
		}
	}
	if o.Session != "s" || o.Updated != 1750000001 || len(o.Tags) != 2 || len(o.Violations) != 0 {
		t.Errorf("opened = %+v", o)
	}
	var p map[uint64]cbor.RawMessage
	if err := cbor.Unmarshal(o.Payload, &p); err != nil || !bytes.Equal(p[30], m.Extra[30]) {
		t.Errorf("payload does not hold key 30 verbatim: %v", err)
	}
}

func TestReadPassphrase(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const env = "MEMTRAIL_TEST_AMEM_PASSPHRASE"
	t.Setenv(env, "from the environment")
	for _, tc := range []struct {
		path, want string
		err        bool
	}{
		{write("lf", "secret words\n"), "secret words", false},
		{write("crlf", "secret words\r\n"), "secret words", false},
		{write("none", "secret words"), "secret words", false},
		{write("two", "secret words\n\n"), "secret words\n", false},
		{write("spaces", "  secret  \n"), "  secret  ", false},
		{write("empty", "\n"), "", true},
		{write("big", strings.Repeat("a", 64<<10+1)), "", true},
		{filepath.Join(dir, "missing"), "", true},
		{"", "from the environment", false},
	} {
		got, err := ReadPassphrase(tc.path, env)
		if (err != nil) != tc.err || string(got) != tc.want {
			t.Errorf("ReadPassphrase(%s) = %q, %v; want %q (error %v)", filepath.Base(tc.path), got, err, tc.want, tc.err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error names the passphrase: %v", err)
		}
	}
	t.Setenv(env, "")
	if _, err := ReadPassphrase("", env); err == nil {
		t.Error("empty environment variable accepted")
	}
	os.Unsetenv(env)
	if _, err := ReadPassphrase("", env); err == nil || !strings.Contains(err.Error(), env) {
		t.Errorf("unset variable: %v", err)
	}
}

func TestReadContainerFile(t *testing.T) {
	p := filepath.Join("testdata", "memtrail-written.amem")
	c, err := ReadContainerFile(p)
	if err != nil || len(c.Objects) != 7 {
		t.Fatalf("ReadContainerFile = %v, %v", c, err)
	}
	data, _ := os.ReadFile(p)
	if _, err := (Limits{MaxContainerBytes: len(data) - 1}).ReadContainer(bytes.NewReader(data)); !errors.Is(err, ErrContainerTooLarge) {
		t.Errorf("over the cap: %v", err)
	}
	if _, err := ReadContainerFile(filepath.Join(t.TempDir(), "missing.amem")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
