package apertomemory

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"

	"github.com/fxamacker/cbor/v2"
)

// ExportVersion is the .amem export_version this package reads and writes.
const ExportVersion = 1

// Scope is one entry of a container's vault-public "scopes" map.
type Scope struct {
	Name       string
	ID         ScopeID
	KEKWrapped []byte
	EphPub     [32]byte
	// Problem is why the entry is unusable ("" when it parsed); set by
	// [ParseContainer] for an entry that is not of the format's shape.
	Problem string
}

// KnownKey is one known_keys entry as the container carries it: the hex key
// id it is filed under and the Ed25519 public key. Nothing authenticates
// the id; readers recompute it from the key.
type KnownKey struct {
	ID  string
	Pub []byte
}

// Container is a parsed .amem export container (draft §10):
//
//	{1: export_version (1),
//	 2: {"salt": h'16', "sign_pub": h'32', "ka_pub": h'32',
//	     "scopes": {name: {"scope_id": h'16', "kek_wrapped": h'40', "eph_pub": h'32'}},
//	     ? "known_keys": {hex key id: h'32'}},
//	 3: [sealed object bytes, ...],
//	 4: {object id: wrapped DEK}}
//
// It holds only public keys, wrapped keys and sealed objects: nothing in it
// is authenticated except by the passphrase check of [Container.Open] (the
// salt, sign_pub and ka_pub) and by each object's own bindings. An attacker
// who can rewrite the file can drop, duplicate or corrupt objects (each
// such object is refused on its own), break scope entries (their objects
// are refused), and add keys to known_keys: a known_keys entry makes that
// key's objects open as "trusted", so a reader that does not trust the
// channel the container came over should pass its own keyring in
// [OpenOptions.Keyring].
type Container struct {
	Salt    [SaltSize]byte
	SignPub ed25519.PublicKey
	KAPub   [32]byte
	// Scopes, sorted by name.
	Scopes []Scope
	// KnownKeys, sorted by their written id.
	KnownKeys []KnownKey
	// Objects are the sealed objects' exact bytes, in container order.
	// An element that is not a byte string in the file is nil here.
	Objects [][]byte
	// DEKs maps object ids to wrapped DEKs.
	DEKs map[ObjectID][]byte

	dupDEK map[ObjectID]bool
	lim    Limits
}

// ReadContainerFile reads and parses the .amem container at path with
// [DefaultLimits], reading no more than the container cap.
func ReadContainerFile(path string) (*Container, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("apertomemory: %w", err)
	}
	defer f.Close()
	return DefaultLimits.ReadContainer(f)
}

// ReadContainer reads a container from r, reading no more than
// MaxContainerBytes+1 bytes, and parses it under these limits.
func (l Limits) ReadContainer(r io.Reader) (*Container, error) {
	lim := l.withDefaults()
	data, err := io.ReadAll(io.LimitReader(r, int64(lim.MaxContainerBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("apertomemory: reading container: %w", err)
	}
	return lim.ParseContainer(data)
}

// ParseContainer parses an .amem container with [DefaultLimits].
func ParseContainer(data []byte) (*Container, error) {
	return DefaultLimits.ParseContainer(data)
}

// ParseContainer parses an .amem container under these limits. It needs no
// key. A container that cannot be read at all fails with one error
// wrapping ErrContainerTooLarge, ErrMalformedContainer or
// ErrUnsupportedExport; what is wrong with one object, one DEK or one scope
// entry is left for [Container.Open] to report against that object.
func (l Limits) ParseContainer(data []byte) (*Container, error) {
	lim := l.withDefaults()
	if len(data) > lim.MaxContainerBytes {
		return nil, fmt.Errorf("%w: %d bytes, cap %d", ErrContainerTooLarge, len(data), lim.MaxContainerBytes)
	}
	dm := containerDecMode(lim)
	bad := func(what string) error { return fmt.Errorf("%w: %s", ErrMalformedContainer, what) }
	var top map[uint64]cbor.RawMessage
	if majorType(data) != 5 {
		return nil, bad("not a CBOR map")
	}
	if err := dm.Unmarshal(data, &top); err != nil {
		return nil, containerDecodeError(err, "top-level map")
	}
	for _, k := range []uint64{1, 2, 3, 4} {
		if _, ok := top[k]; !ok {
			return nil, bad(fmt.Sprintf("no key %d", k))
		}
	}
	v, ok := decodeUint(dm, top[1])
	if !ok {
		return nil, bad("export_version is not an unsigned integer")
	}
	if v != ExportVersion {
		return nil, fmt.Errorf("%w: %d", ErrUnsupportedExport, v)
	}
	c := &Container{DEKs: map[ObjectID][]byte{}, dupDEK: map[ObjectID]bool{}, lim: lim}

	// 2: vault-public.
	var pub map[string]cbor.RawMessage
	if majorType(top[2]) != 5 || dm.Unmarshal(top[2], &pub) != nil {
		return nil, bad("vault-public is not a map with text keys")
	}
	salt, ok := decodeBytes(dm, pub["salt"])
	if !ok || len(salt) != SaltSize {
		return nil, bad("salt is not a 16-byte string")
	}
	copy(c.Salt[:], salt)
	sp, ok := decodeBytes(dm, pub["sign_pub"])
	if !ok || len(sp) != ed25519.PublicKeySize {
		return nil, bad("sign_pub is not a 32-byte string")
	}
	c.SignPub = sp
	kp, ok := decodeBytes(dm, pub["ka_pub"])
	if !ok || len(kp) != 32 {
		return nil, bad("ka_pub is not a 32-byte string")
	}
	copy(c.KAPub[:], kp)
	var scopes map[string]cbor.RawMessage
	if majorType(pub["scopes"]) != 5 || dm.Unmarshal(pub["scopes"], &scopes) != nil {
		return nil, bad("scopes is not a map with text keys")
	}
	if len(scopes) > lim.MaxScopes {
		return nil, fmt.Errorf("%w: %d scopes, cap %d", ErrContainerTooLarge, len(scopes), lim.MaxScopes)
	}
	for name, raw := range scopes {
		c.Scopes = append(c.Scopes, parseScope(dm, name, raw, &lim))
	}
	sort.Slice(c.Scopes, func(i, j int) bool { return c.Scopes[i].Name < c.Scopes[j].Name })
	if raw, present := pub["known_keys"]; present {
		var kk map[string]cbor.RawMessage
		if majorType(raw) != 5 || dm.Unmarshal(raw, &kk) != nil {
			return nil, bad("known_keys is not a map with text keys")
		}
		if len(kk) > lim.MaxKnownKeys {
			return nil, fmt.Errorf("%w: %d known_keys, cap %d", ErrContainerTooLarge, len(kk), lim.MaxKnownKeys)
		}
		for id, raw := range kk {
			p, _ := decodeBytes(dm, raw)
			c.KnownKeys = append(c.KnownKeys, KnownKey{ID: id, Pub: p})
		}
		sort.Slice(c.KnownKeys, func(i, j int) bool { return c.KnownKeys[i].ID < c.KnownKeys[j].ID })
	}

	// 3: sealed objects.
	var objs []cbor.RawMessage
	if majorType(top[3]) != 4 || dm.Unmarshal(top[3], &objs) != nil {
		return nil, bad("sealed-objects is not an array")
	}
	if len(objs) > lim.MaxObjects {
		return nil, fmt.Errorf("%w: %d objects, cap %d", ErrContainerTooLarge, len(objs), lim.MaxObjects)
	}
	c.Objects = make([][]byte, len(objs))
	for i, raw := range objs {
		if b, ok := decodeBytes(dm, raw); ok {
			c.Objects[i] = b
		}
	}

	// 4: wrapped DEKs, pair by pair, so a duplicated id is isolated.
	pairs, err := mapPairs(dm, top[4], lim.MaxObjects)
	if err != nil {
		return nil, bad("wrapped DEKs: " + err.Error())
	}
	for _, kv := range pairs {
		idb, ok := decodeBytes(dm, kv[0])
		if !ok || len(idb) != 16 {
			continue // can name no object
		}
		var id ObjectID
		copy(id[:], idb)
		if _, seen := c.DEKs[id]; seen {
			c.dupDEK[id] = true
		}
		w, _ := decodeBytes(dm, kv[1])
		c.DEKs[id] = w
	}
	return c, nil
}

func containerDecodeError(err error, what string) error {
	var (
		e1 *cbor.MaxArrayElementsError
		e2 *cbor.MaxMapPairsError
		e3 *cbor.MaxNestedLevelError
	)
	if errors.As(err, &e1) || errors.As(err, &e2) || errors.As(err, &e3) {
		return fmt.Errorf("%w: %s", ErrContainerTooLarge, what)
	}
	return fmt.Errorf("%w: %s", ErrMalformedContainer, what)
}

func parseScope(dm cbor.DecMode, name string, raw cbor.RawMessage, lim *Limits) Scope {
	s := Scope{Name: name}
	if len(name) > lim.MaxNameBytes {
		s.Problem = "scope name over the size cap"
		return s
	}
	var m map[string]cbor.RawMessage
	if majorType(raw) != 5 || dm.Unmarshal(raw, &m) != nil {
		s.Problem = "scope entry is not a map with text keys"
		return s
	}
	id, ok1 := decodeBytes(dm, m["scope_id"])
	w, ok2 := decodeBytes(dm, m["kek_wrapped"])
	eph, ok3 := decodeBytes(dm, m["eph_pub"])
	if !ok1 || len(id) != 16 || !ok2 || !ok3 || len(eph) != 32 {
		s.Problem = "scope entry lacks a 16-byte scope_id, a kek_wrapped or a 32-byte eph_pub"
		return s
	}
	copy(s.ID[:], id)
	copy(s.EphPub[:], eph)
	s.KEKWrapped = w
	return s
}

// Marshal encodes the container in deterministic CBOR, as the reference
// implementation writes it (known_keys only when there are any). Scope
// entries with a Problem are written as they are (tests use this to build
// hostile containers).
func (c *Container) Marshal() []byte {
	deks := map[cbor.ByteString]any{}
	for id, w := range c.DEKs {
		deks[cbor.ByteString(id[:])] = w
	}
	return c.marshalWith(deks)
}

// marshalWith encodes the container with the given value as its DEK map.
func (c *Container) marshalWith(deks any) []byte {
	scopes := map[string]any{}
	for _, s := range c.Scopes {
		scopes[s.Name] = map[string]any{"scope_id": s.ID[:], "kek_wrapped": s.KEKWrapped, "eph_pub": s.EphPub[:]}
	}
	pub := map[string]any{"salt": c.Salt[:], "sign_pub": []byte(c.SignPub), "ka_pub": c.KAPub[:], "scopes": scopes}
	if len(c.KnownKeys) > 0 {
		kk := map[string]any{}
		for _, k := range c.KnownKeys {
			kk[k.ID] = k.Pub
		}
		pub["known_keys"] = kk
	}
	objs := make([]any, len(c.Objects))
	for i, o := range c.Objects {
		objs[i] = o
	}
	return marshal(map[uint64]any{1: uint64(ExportVersion), 2: pub, 3: objs, 4: deks})
}

// Vault is a container opened with its owner's passphrase: the keyring
// derived for it, the state of each scope, and every object opened or
// refused on its own.
type Vault struct {
	// Keyring is the trust state objects were opened against: the owner
	// and the accepted keys (the container's known_keys, each id
	// recomputed from its key, unless OpenOptions.Keyring replaced them).
	Keyring *Keyring
	// KeyringProblems lists known_keys entries that were not accepted.
	KeyringProblems []KeyringProblem
	// Scopes lists every scope entry; Err is nil when its KEK unwrapped.
	Scopes []VaultScope
	// Entries are the container's objects in container order.
	Entries []Entry

	id    *Identity
	kek   map[ScopeID][]byte
	names map[ScopeID]string
	c     *Container
	opts  OpenOptions
}

// KeyringProblem is a known_keys entry left out of the keyring.
type KeyringProblem struct {
	ID     string
	Reason string
}

// VaultScope is the state of one scope after opening.
type VaultScope struct {
	Name string
	ID   ScopeID
	Err  error
}

// Entry is one object of the container: the exact sealed bytes and either
// the opened object or why it was refused.
type Entry struct {
	Index  int
	Sealed []byte
	// Scope is the name of the object's scope, "" when unknown.
	Scope string
	// Object is nil when the object was refused.
	Object *Object
	// Err is the refusal, wrapping one of the Err* refusals.
	Err error
}

// Digest is the projection record's sealed_object_digest of the entry:
// "sha256:" and the lowercase hex SHA-256 of its exact bytes.
func (e *Entry) Digest() string { return SealedDigest(e.Sealed) }

// SealedDigest is "sha256:" and the lowercase hex SHA-256 of a sealed
// object's exact bytes, without parsing or re-encoding.
func SealedDigest(sealed []byte) string {
	s := sha256.Sum256(sealed)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Open derives the identity from the passphrase (one Argon2id run), checks
// it against the container's sign_pub and ka_pub, unwraps the scope KEKs
// and opens every object in isolation: one hostile or corrupt object is
// refused on its own and never stops the rest.
func (c *Container) Open(passphrase []byte, opts *OpenOptions) (*Vault, error) {
	id, err := DeriveIdentity(passphrase, c.Salt[:])
	if err != nil {
		return nil, err
	}
	return c.OpenWithIdentity(id, opts)
}

// OpenWithIdentity is [Container.Open] with an identity already derived
// (from this container's salt), so a caller that opens the same vault again
// does not pay for Argon2id twice.
func (c *Container) OpenWithIdentity(id *Identity, opts *OpenOptions) (*Vault, error) {
	if !bytes.Equal(id.SignPub(), c.SignPub) || id.KAPub() != c.KAPub {
		return nil, ErrWrongPassphrase
	}
	v := &Vault{id: id, kek: map[ScopeID][]byte{}, names: map[ScopeID]string{}, c: c}
	if opts != nil {
		v.opts = *opts
	}
	if opts != nil && opts.Keyring != nil {
		if opts.Keyring.Owner() != id.KeyID() {
			return nil, errors.New("apertomemory: OpenOptions.Keyring has another owner")
		}
		v.Keyring = opts.Keyring
	} else {
		var accepted []ed25519.PublicKey
		for _, k := range c.KnownKeys {
			switch {
			case len(k.Pub) != ed25519.PublicKeySize:
				v.KeyringProblems = append(v.KeyringProblems, KeyringProblem{k.ID, "not a 32-byte Ed25519 public key"})
			case k.ID != KeyIDOf(k.Pub).String():
				v.KeyringProblems = append(v.KeyringProblems, KeyringProblem{k.ID, "id is not the key's id (" + KeyIDOf(k.Pub).String() + ")"})
			default:
				accepted = append(accepted, k.Pub)
			}
		}
		kr, err := NewKeyring(id.SignPub(), accepted...)
		if err != nil {
			return nil, err
		}
		v.Keyring = kr
	}
	idCount := map[ScopeID]int{}
	for _, s := range c.Scopes {
		if s.Problem == "" {
			idCount[s.ID]++
		}
	}
	for _, s := range c.Scopes {
		vs := VaultScope{Name: s.Name, ID: s.ID}
		switch {
		case s.Problem != "":
			vs.Err = fmt.Errorf("%w: %s", ErrScopeKeyUnavailable, s.Problem)
		case idCount[s.ID] > 1:
			vs.Err = fmt.Errorf("%w: scope_id %s is listed by more than one scope", ErrScopeKeyUnavailable, s.ID)
		default:
			kek, err := id.UnwrapKEK(s.KEKWrapped, s.EphPub, s.ID)
			if err != nil {
				vs.Err = fmt.Errorf("%w: scope %q", ErrScopeKeyUnavailable, s.Name)
			} else {
				v.kek[s.ID] = kek
				v.names[s.ID] = s.Name
			}
		}
		v.Scopes = append(v.Scopes, vs)
	}
	scopeListed := map[ScopeID]string{}
	for _, s := range c.Scopes {
		if s.Problem == "" {
			scopeListed[s.ID] = s.Name
		}
	}

	envs := make([]*envelope, len(c.Objects))
	errs := make([]error, len(c.Objects))
	seen := map[ObjectID]int{}
	for i, b := range c.Objects {
		if b == nil {
			errs[i] = refuse(ErrMalformedObject, "container element is not a byte string")
			continue
		}
		envs[i], errs[i] = parseEnvelope(b, c.lim.MaxObjectBytes)
		if errs[i] == nil {
			seen[envs[i].id]++
		}
	}
	v.Entries = make([]Entry, len(c.Objects))
	for i := range c.Objects {
		e := Entry{Index: i, Sealed: c.Objects[i]}
		if env := envs[i]; errs[i] == nil {
			e.Scope = scopeListed[env.scope]
			switch {
			case seen[env.id] > 1:
				errs[i] = refuse(ErrDuplicateObjectID, "%s occurs %d times", env.id, seen[env.id])
			case c.dupDEK[env.id]:
				errs[i] = refuse(ErrDuplicateObjectID, "%s has more than one wrapped DEK", env.id)
			default:
				e.Object, errs[i] = v.openEnv(env)
			}
		}
		e.Err = errs[i]
		v.Entries[i] = e
	}
	return v, nil
}

// openEnv opens one parsed object with the vault's keys, in isolation: a
// panic in a decoder on hostile bytes becomes that object's refusal.
func (v *Vault) openEnv(env *envelope) (obj *Object, err error) {
	defer func() {
		if r := recover(); r != nil {
			obj, err = nil, refuse(ErrMalformedObject, "decoder failure")
		}
	}()
	kek, ok := v.kek[env.scope]
	if !ok {
		for _, s := range v.c.Scopes {
			if s.Problem == "" && s.ID == env.scope {
				return nil, refuse(ErrScopeKeyUnavailable, "scope %q", s.Name)
			}
		}
		return nil, refuse(ErrUnknownScope, "scope_id %s", env.scope)
	}
	w, ok := v.c.DEKs[env.id]
	if !ok {
		return nil, refuse(ErrMissingDEK, "object %s", env.id)
	}
	dek, err := UnwrapDEK(w, kek)
	if err != nil {
		return nil, refuse(ErrDEKUnwrap, "object %s", env.id)
	}
	lim := v.c.lim
	return openEnvelope(env, dek, v.Keyring, &v.opts, &lim)
}

// OpenSealed opens sealed object bytes that come from outside the
// container (for example a projection's material) with this vault's scope
// keys and wrapped DEKs, under the same rules and keyring as the container's
// own objects.
func (v *Vault) OpenSealed(sealed []byte) (*Object, error) {
	env, err := parseEnvelope(sealed, v.c.lim.MaxObjectBytes)
	if err != nil {
		return nil, err
	}
	if v.c.dupDEK[env.id] {
		return nil, refuse(ErrDuplicateObjectID, "%s has more than one wrapped DEK", env.id)
	}
	return v.openEnv(env)
}

// Opened returns the objects that opened, in container order.
func (v *Vault) Opened() []*Object {
	var out []*Object
	for i := range v.Entries {
		if v.Entries[i].Object != nil {
			out = append(out, v.Entries[i].Object)
		}
	}
	return out
}

// Refused returns the entries that were refused, in container order.
func (v *Vault) Refused() []Entry {
	var out []Entry
	for _, e := range v.Entries {
		if e.Err != nil {
			out = append(out, e)
		}
	}
	return out
}

// Writer builds an .amem container: a fresh identity (or a given one),
// scopes with random ids and KEKs, accepted keys and sealed objects, each
// with its own DEK.
type Writer struct {
	id     *Identity
	salt   [SaltSize]byte
	scopes map[string]*writerScope
	known  map[KeyID]ed25519.PublicKey
	objs   [][]byte
	deks   map[ObjectID][]byte
}

type writerScope struct {
	Scope
	kek []byte
}

// NewWriter starts a container for a new identity: a random salt and the
// identity derived from it and the passphrase (one Argon2id run).
func NewWriter(passphrase []byte) (*Writer, error) {
	var salt [SaltSize]byte
	if _, err := rand.Read(salt[:]); err != nil {
		return nil, err
	}
	id, err := DeriveIdentity(passphrase, salt[:])
	if err != nil {
		return nil, err
	}
	return NewWriterWithIdentity(id, salt), nil
}

// NewWriterWithIdentity starts a container for an identity already derived
// from salt (the container is readable only with the passphrase that
// derived it from this salt).
func NewWriterWithIdentity(id *Identity, salt [SaltSize]byte) *Writer {
	return &Writer{id: id, salt: salt, scopes: map[string]*writerScope{}, known: map[KeyID]ed25519.PublicKey{}, deks: map[ObjectID][]byte{}}
}

// Identity is the container owner's identity.
func (w *Writer) Identity() *Identity { return w.id }

// AddScope adds a scope with a random scope_id and KEK wrapped towards the
// owner.
func (w *Writer) AddScope(name string) (ScopeID, error) {
	var sid ScopeID
	if _, ok := w.scopes[name]; ok {
		return sid, fmt.Errorf("apertomemory: scope %q already exists", name)
	}
	if name == "" || len(name) > DefaultLimits.MaxNameBytes {
		return sid, errors.New("apertomemory: scope name empty or over the size cap")
	}
	kek := make([]byte, 32)
	eph := make([]byte, 32)
	if _, err := rand.Read(sid[:]); err != nil {
		return sid, err
	}
	if _, err := rand.Read(kek); err != nil {
		return sid, err
	}
	if _, err := rand.Read(eph); err != nil {
		return sid, err
	}
	wrapped, ephPub, err := WrapKEK(kek, w.id.KAPub(), sid, eph)
	if err != nil {
		return sid, err
	}
	w.scopes[name] = &writerScope{Scope: Scope{Name: name, ID: sid, KEKWrapped: wrapped, EphPub: ephPub}, kek: kek}
	return sid, nil
}

// Accept adds a third-party author key to known_keys.
func (w *Writer) Accept(pub ed25519.PublicKey) (KeyID, error) {
	if len(pub) != ed25519.PublicKeySize {
		return KeyID{}, errors.New("apertomemory: not a 32-byte Ed25519 public key")
	}
	k := KeyIDOf(pub)
	w.known[k] = slices.Clone(pub)
	return k, nil
}

// Seal seals m into scope, signed by the owner.
func (w *Writer) Seal(scope string, m *Memory) (ObjectID, error) {
	return w.SealBy(scope, m, w.id.SigningKey())
}

// SealBy seals m into scope signed by another key: a third party's memory
// kept in this vault (it opens as "trusted" only once that key is
// accepted).
func (w *Writer) SealBy(scope string, m *Memory, signer ed25519.PrivateKey) (ObjectID, error) {
	s, ok := w.scopes[scope]
	if !ok {
		return ObjectID{}, fmt.Errorf("apertomemory: no scope %q", scope)
	}
	if m.ID != (ObjectID{}) {
		if _, dup := w.deks[m.ID]; dup {
			return ObjectID{}, fmt.Errorf("apertomemory: object %s already in the container", m.ID)
		}
	}
	sealed, id, dek, err := Seal(m, signer, s.ID)
	if err != nil {
		return id, err
	}
	return id, w.add(s, sealed, id, dek)
}

// AddSealed adds an object sealed elsewhere, wrapping its DEK under the
// named scope's KEK. Nothing is checked beyond the envelope's shape and the
// id's uniqueness: the object is opened, and judged, when it is read.
func (w *Writer) AddSealed(scope string, sealed, dek []byte) (ObjectID, error) {
	s, ok := w.scopes[scope]
	if !ok {
		return ObjectID{}, fmt.Errorf("apertomemory: no scope %q", scope)
	}
	env, err := parseEnvelope(sealed, DefaultLimits.MaxObjectBytes)
	if err != nil {
		return ObjectID{}, err
	}
	if _, dup := w.deks[env.id]; dup {
		return env.id, fmt.Errorf("apertomemory: object %s already in the container", env.id)
	}
	return env.id, w.add(s, sealed, env.id, dek)
}

func (w *Writer) add(s *writerScope, sealed []byte, id ObjectID, dek []byte) error {
	wd, err := WrapDEK(dek, s.kek)
	if err != nil {
		return err
	}
	w.objs = append(w.objs, sealed)
	w.deks[id] = wd
	return nil
}

// Container returns the container built so far.
func (w *Writer) Container() *Container {
	c := &Container{Salt: w.salt, SignPub: w.id.SignPub(), KAPub: w.id.KAPub(),
		Objects: slices.Clone(w.objs), DEKs: map[ObjectID][]byte{}, dupDEK: map[ObjectID]bool{}, lim: DefaultLimits}
	for _, s := range w.scopes {
		c.Scopes = append(c.Scopes, s.Scope)
	}
	sort.Slice(c.Scopes, func(i, j int) bool { return c.Scopes[i].Name < c.Scopes[j].Name })
	for k, p := range w.known {
		c.KnownKeys = append(c.KnownKeys, KnownKey{ID: k.String(), Pub: p})
	}
	sort.Slice(c.KnownKeys, func(i, j int) bool { return c.KnownKeys[i].ID < c.KnownKeys[j].ID })
	for id, d := range w.deks {
		c.DEKs[id] = d
	}
	return c
}

// Bytes encodes the container built so far.
func (w *Writer) Bytes() []byte { return w.Container().Marshal() }
