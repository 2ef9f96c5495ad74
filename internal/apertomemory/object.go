package apertomemory

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"
)

// FormatVersion is the format_version this package writes.
const FormatVersion = 2

// COSE constants of the envelope.
const (
	coseAlgA256GCM    = 3
	coseAlgChaCha     = 24
	coseHdrAlg        = 1
	coseHdrKID        = 4
	coseHdrIV         = 5
	tagCOSEEncrypt0   = 16
	gcmNonceSize      = 12
	dekSize           = 32
	payloadKeyCustody = 20
)

// MemType is the mem-type of a memory payload. Values outside the
// enumeration are reported verbatim, not refused (draft §3.2).
type MemType uint64

const (
	Episodic   MemType = 1
	Semantic   MemType = 2
	Procedural MemType = 3
)

func (t MemType) String() string {
	switch t {
	case Episodic:
		return "episodic"
	case Semantic:
		return "semantic"
	case Procedural:
		return "procedural"
	}
	return fmt.Sprintf("mem-type(%d)", uint64(t))
}

// CustodyRecord is payload key 20: the object was re-sealed by someone
// other than its original author (draft §7).
type CustodyRecord struct {
	// FromVersion is the format_version it was re-sealed from (field 1).
	FromVersion uint64
	// ClaimedAuthor is the author_key_id the original object claimed
	// (field 2). A claim, never proof.
	ClaimedAuthor KeyID
	// ResealedAt is when it was re-sealed, epoch seconds (field 3).
	ResealedAt uint64
	// ProvenAuthor is field 4, the author proven at re-seal time; nil when
	// absent. On an opened [Object] it is set only when the attestation is
	// honoured (signed by the vault owner, naming an accepted key): an
	// attestation that is not honoured is not reported.
	ProvenAuthor *KeyID
}

// Memory is what [Seal] writes: the content of one memory-payload.
type Memory struct {
	// ID is the object id; the zero value means 16 fresh random bytes.
	ID ObjectID
	// Type must be Episodic, Semantic or Procedural.
	Type MemType
	// Content is the UTF-8 text; it must not be empty.
	Content string
	// Confidence must be within [0.0, 1.0].
	Confidence float64
	Tags       []string
	// Tool is the producing tool, e.g. "memtrail/1"; must not be empty.
	Tool string
	// Session is an optional session identifier.
	Session string
	// Created is the creation time in epoch seconds; must not be zero.
	Created uint64
	// Updated is optional (zero = absent).
	Updated uint64
	// Custody, when set, must be complete; only re-sealing writes one.
	Custody *CustodyRecord
	// Extra holds further payload keys (the reserved 8, 9, 10 or keys a
	// newer producer wrote), written verbatim. Keys 1..7 and 20 are
	// refused here.
	Extra map[uint64]cbor.RawMessage
}

// payloadBytes validates m as a Producer must (draft §3.2) and encodes the
// memory-payload deterministically.
func (m *Memory) payloadBytes(author KeyID) ([]byte, error) {
	switch m.Type {
	case Episodic, Semantic, Procedural:
	default:
		return nil, fmt.Errorf("apertomemory: mem-type %d outside the enumeration", uint64(m.Type))
	}
	if m.Content == "" || !utf8.ValidString(m.Content) {
		return nil, errors.New("apertomemory: content must be non-empty UTF-8")
	}
	if math.IsNaN(m.Confidence) || m.Confidence < 0 || m.Confidence > 1 {
		return nil, fmt.Errorf("apertomemory: confidence %v outside [0.0, 1.0]", m.Confidence)
	}
	if m.Tool == "" {
		return nil, errors.New("apertomemory: tool must not be empty")
	}
	if m.Created == 0 {
		return nil, errors.New("apertomemory: created must be set")
	}
	prov := map[uint64]any{1: m.Tool, 2: author[:]}
	if m.Session != "" {
		prov[3] = m.Session
	}
	ts := map[uint64]any{1: m.Created}
	if m.Updated != 0 {
		ts[2] = m.Updated
	}
	p := map[uint64]any{
		1: uint64(m.Type),
		2: m.Content,
		3: m.Confidence,
		4: prov,
		5: uint64(1), // trust-level: informational only, never read
		7: ts,
	}
	if len(m.Tags) > 0 {
		p[6] = m.Tags
	}
	if c := m.Custody; c != nil {
		if c.FromVersion == 0 || c.ResealedAt == 0 || c.ClaimedAuthor == (KeyID{}) {
			return nil, errors.New("apertomemory: custody record must be complete")
		}
		cm := map[uint64]any{1: c.FromVersion, 2: c.ClaimedAuthor[:], 3: c.ResealedAt}
		if c.ProvenAuthor != nil {
			cm[4] = c.ProvenAuthor[:]
		}
		p[payloadKeyCustody] = cm
	}
	for k, v := range m.Extra {
		if (k >= 1 && k <= 7) || k == payloadKeyCustody {
			return nil, fmt.Errorf("apertomemory: extra payload key %d is a defined key", k)
		}
		if objDecMode.Wellformed(v) != nil {
			return nil, fmt.Errorf("apertomemory: extra payload key %d is not well-formed CBOR", k)
		}
		p[k] = v
	}
	return marshal(p), nil
}

// Seal seals m as a format_version 2 object in scope, signed by signer: the
// deterministic-CBOR payload is signed with COSE_Sign1 (EdDSA, kid = the
// signer's key id) and encrypted with COSE_Encrypt0 (AES-256-GCM, random
// 96-bit nonce) under a fresh DEK, both with the envelope-aad
// [2, id, scope_id] as external_aad. It returns the sealed bytes, the
// object id and the DEK, which encrypts this one object only (wrap it with
// [WrapDEK]; never reuse it).
func Seal(m *Memory, signer ed25519.PrivateKey, scope ScopeID) (sealed []byte, id ObjectID, dek []byte, err error) {
	id = m.ID
	if id == (ObjectID{}) {
		if _, err := rand.Read(id[:]); err != nil {
			return nil, id, nil, err
		}
	}
	dek = make([]byte, dekSize)
	nonce := make([]byte, gcmNonceSize)
	if _, err := rand.Read(dek); err != nil {
		return nil, id, nil, err
	}
	if _, err := rand.Read(nonce); err != nil {
		return nil, id, nil, err
	}
	sealed, err = sealWith(m, signer, id, scope, dek, nonce)
	return sealed, id, dek, err
}

// sealWith is Seal with the id, DEK and nonce given (test vectors fix them).
func sealWith(m *Memory, signer ed25519.PrivateKey, id ObjectID, scope ScopeID, dek, nonce []byte) ([]byte, error) {
	kid := KeyIDOf(signer.Public().(ed25519.PublicKey))
	payload, err := m.payloadBytes(kid)
	if err != nil {
		return nil, err
	}
	return sealPayload(payload, signer, kid, FormatVersion, id, scope, dek, nonce)
}

// sealPayload builds the COSE layers over already-encoded payload bytes.
// It checks nothing about the payload: tests use it to build the hostile
// objects a Producer must never write.
func sealPayload(payload []byte, signer ed25519.PrivateKey, kid KeyID, version uint64, id ObjectID, scope ScopeID, dek, nonce []byte) ([]byte, error) {
	aad := envelopeAAD(version, id, scope)
	s, err := cose.NewSigner(cose.AlgorithmEdDSA, signer)
	if err != nil {
		return nil, err
	}
	msg := cose.NewSign1Message()
	msg.Headers.Protected[cose.HeaderLabelAlgorithm] = cose.AlgorithmEdDSA
	msg.Headers.Protected[cose.HeaderLabelKeyID] = kid[:]
	msg.Payload = payload
	if payload == nil {
		msg.Payload = []byte{} // a present, empty payload (go-cose reads nil as detached)
	}
	if err := msg.Sign(nil, aad, s); err != nil {
		return nil, err
	}
	signed, err := msg.MarshalCBOR()
	if err != nil {
		return nil, err
	}
	enc, err := encrypt0(signed, dek, nonce, aad)
	if err != nil {
		return nil, err
	}
	return marshal(map[uint64]any{1: id[:], 2: scope[:], 3: version, 4: enc}), nil
}

// encProtected is the COSE_Encrypt0 protected header {1: 3} (A256GCM).
var encProtected = marshal(map[int64]any{coseHdrAlg: coseAlgA256GCM})

// encStructure is RFC 9052 §5.3's Enc_structure, the AEAD's associated
// data: ["Encrypt0", protected, external_aad].
func encStructure(protected, aad []byte) []byte {
	return marshal([]any{"Encrypt0", protected, aad})
}

func newGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// encrypt0 builds a tagged COSE_Encrypt0 (tag 16) with AES-256-GCM.
func encrypt0(plaintext, key, nonce, aad []byte) ([]byte, error) {
	if len(key) != dekSize || len(nonce) != gcmNonceSize {
		return nil, errors.New("apertomemory: DEK must be 32 bytes and nonce 12")
	}
	g, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	ct := g.Seal(nil, nonce, plaintext, encStructure(encProtected, aad))
	return marshal(cbor.Tag{Number: tagCOSEEncrypt0, Content: []any{
		encProtected,
		map[int64]any{coseHdrIV: nonce},
		ct,
	}}), nil
}

// encrypt0Msg is a parsed COSE_Encrypt0.
type encrypt0Msg struct {
	protected  []byte
	nonce      []byte
	ciphertext []byte
}

func parseEncrypt0(raw []byte) (*encrypt0Msg, error) {
	var t cbor.RawTag
	if majorType(raw) != 6 {
		return nil, refuse(ErrMalformedObject, "field 4 is not a tagged COSE_Encrypt0")
	}
	if err := objDecMode.Unmarshal(raw, &t); err != nil || t.Number != tagCOSEEncrypt0 {
		return nil, refuse(ErrMalformedObject, "field 4 is not a tagged COSE_Encrypt0")
	}
	var parts []cbor.RawMessage
	if majorType(t.Content) != 4 {
		return nil, refuse(ErrMalformedObject, "COSE_Encrypt0 is not an array")
	}
	if err := objDecMode.Unmarshal(t.Content, &parts); err != nil || len(parts) != 3 {
		return nil, refuse(ErrMalformedObject, "COSE_Encrypt0 is not a 3-element array")
	}
	prot, ok := decodeBytes(objDecMode, parts[0])
	if !ok {
		return nil, refuse(ErrMalformedObject, "COSE_Encrypt0 protected header is not a byte string")
	}
	ph := map[int64]cbor.RawMessage{}
	if len(prot) > 0 {
		if ph, ok = decodeIntMap(objDecMode, prot); !ok {
			return nil, refuse(ErrMalformedObject, "COSE_Encrypt0 protected header is not a map")
		}
	}
	uh, ok := decodeIntMap(objDecMode, parts[1])
	if !ok {
		return nil, refuse(ErrMalformedObject, "COSE_Encrypt0 unprotected header is not a map")
	}
	for k := range ph {
		if _, dup := uh[k]; dup {
			return nil, refuse(ErrMalformedObject, "COSE_Encrypt0 header label %d in both buckets", k)
		}
	}
	alg, ok := ph[coseHdrAlg]
	if !ok {
		return nil, refuse(ErrMalformedObject, "COSE_Encrypt0 has no protected alg")
	}
	var a int64
	if err := objDecMode.Unmarshal(alg, &a); err != nil {
		return nil, refuse(ErrMalformedObject, "COSE_Encrypt0 alg is not an integer")
	}
	if a != coseAlgA256GCM {
		return nil, refuse(ErrUnsupportedAlgorithm, "COSE_Encrypt0 alg %d (want 3, A256GCM)", a)
	}
	ivRaw, ok := uh[coseHdrIV]
	if !ok {
		ivRaw, ok = ph[coseHdrIV]
	}
	iv, ok2 := decodeBytes(objDecMode, ivRaw)
	if !ok || !ok2 || len(iv) != gcmNonceSize {
		return nil, refuse(ErrMalformedObject, "COSE_Encrypt0 has no 12-byte IV")
	}
	ct, ok := decodeBytes(objDecMode, parts[2])
	if !ok || len(ct) < 16 {
		return nil, refuse(ErrMalformedObject, "COSE_Encrypt0 ciphertext missing or short")
	}
	return &encrypt0Msg{protected: prot, nonce: iv, ciphertext: ct}, nil
}

// decrypt opens the AEAD under dek with the given envelope-aad.
func (e *encrypt0Msg) decrypt(dek, aad []byte) ([]byte, bool) {
	if len(dek) != dekSize {
		return nil, false
	}
	g, err := newGCM(dek)
	if err != nil {
		return nil, false
	}
	pt, err := g.Open(nil, e.nonce, e.ciphertext, encStructure(e.protected, aad))
	return pt, err == nil
}

// envelope is the cleartext part of a sealed object.
type envelope struct {
	id      ObjectID
	scope   ScopeID
	version uint64
	enc     []byte
}

// ParseEnvelope reads the cleartext envelope of a sealed object (id,
// scope_id, format_version) without any key. Nothing in it is authenticated
// until the object is opened.
func ParseEnvelope(sealed []byte) (id ObjectID, scope ScopeID, version uint64, err error) {
	e, err := parseEnvelope(sealed, DefaultLimits.MaxObjectBytes)
	if err != nil {
		return id, scope, 0, err
	}
	return e.id, e.scope, e.version, nil
}

func parseEnvelope(sealed []byte, maxBytes int) (*envelope, error) {
	if len(sealed) > maxBytes {
		return nil, refuse(ErrObjectTooLarge, "%d bytes, cap %d", len(sealed), maxBytes)
	}
	// Unmarshal refuses trailing bytes, duplicate keys and non-uint keys.
	m, ok := decodeUintMap(objDecMode, sealed)
	if !ok {
		return nil, refuse(ErrMalformedObject, "not one CBOR map with unsigned integer keys")
	}
	var e envelope
	id, ok := decodeBytes(objDecMode, m[1])
	if !ok || len(id) != 16 {
		return nil, refuse(ErrMalformedObject, "id (1) is not a 16-byte string")
	}
	scope, ok := decodeBytes(objDecMode, m[2])
	if !ok || len(scope) != 16 {
		return nil, refuse(ErrMalformedObject, "scope_id (2) is not a 16-byte string")
	}
	if e.version, ok = decodeUint(objDecMode, m[3]); !ok {
		return nil, refuse(ErrMalformedObject, "format_version (3) is not an unsigned integer")
	}
	if e.enc, ok = decodeBytes(objDecMode, m[4]); !ok {
		return nil, refuse(ErrMalformedObject, "field 4 is not a byte string")
	}
	if raw, present := m[5]; present {
		if ref, ok := decodeBytes(objDecMode, raw); !ok || len(ref) != 16 {
			return nil, refuse(ErrMalformedObject, "dek_wrap_ref (5) is not a 16-byte string")
		}
	}
	copy(e.id[:], id)
	copy(e.scope[:], scope)
	return &e, nil
}

// kidOf reads an 8-byte key id from a CBOR byte string.
func kidOf(raw cbor.RawMessage) (KeyID, bool) {
	var k KeyID
	b, ok := decodeBytes(objDecMode, raw)
	if !ok || len(b) != len(k) {
		return k, false
	}
	copy(k[:], b)
	return k, true
}

func sortedKeys[M ~map[uint64]V, V any](m M) []uint64 {
	ks := make([]uint64, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
