package apertomemory

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/fxamacker/cbor/v2"
)

// Limits are the size caps applied to untrusted input. The zero value of a
// field means its DefaultLimits value.
type Limits struct {
	// MaxContainerBytes caps an .amem container (default 64 MiB).
	MaxContainerBytes int
	// MaxObjects caps the sealed objects of a container, and the wrapped
	// DEKs (default 100,000).
	MaxObjects int
	// MaxObjectBytes caps one sealed object (default 1 MiB). The
	// plaintext, the signed payload and every string inside it are smaller
	// than the object, so this also caps content and embeddings.
	MaxObjectBytes int
	// MaxScopes caps the scopes of a container (default 1,024).
	MaxScopes int
	// MaxKnownKeys caps the known_keys of a container (default 1,024).
	MaxKnownKeys int
	// MaxNameBytes caps a scope name, the producing tool,
	// the session identifier and each tag (default 1,024 bytes).
	MaxNameBytes int
	// MaxTags caps the tags of one object (default 1,024).
	MaxTags int
}

// DefaultLimits are the caps used when none are given.
var DefaultLimits = Limits{
	MaxContainerBytes: 64 << 20,
	MaxObjects:        100_000,
	MaxObjectBytes:    1 << 20,
	MaxScopes:         1024,
	MaxKnownKeys:      1024,
	MaxNameBytes:      1024,
	MaxTags:           1024,
}

func (l *Limits) withDefaults() Limits {
	var out Limits
	if l != nil {
		out = *l
	}
	d := DefaultLimits
	if out.MaxContainerBytes <= 0 {
		out.MaxContainerBytes = d.MaxContainerBytes
	}
	if out.MaxObjects <= 0 {
		out.MaxObjects = d.MaxObjects
	}
	if out.MaxObjectBytes <= 0 {
		out.MaxObjectBytes = d.MaxObjectBytes
	}
	if out.MaxScopes <= 0 {
		out.MaxScopes = d.MaxScopes
	}
	if out.MaxKnownKeys <= 0 {
		out.MaxKnownKeys = d.MaxKnownKeys
	}
	if out.MaxNameBytes <= 0 {
		out.MaxNameBytes = d.MaxNameBytes
	}
	if out.MaxTags <= 0 {
		out.MaxTags = d.MaxTags
	}
	return out
}

// encMode is RFC 8949 §4.2.1 core deterministic encoding with the
// shortest float that keeps the value (§4.2.2 preferred serialization),
// as the reference implementation's canonical CBOR writes it.
var encMode = func() cbor.EncMode {
	m, err := cbor.EncOptions{
		Sort:          cbor.SortCoreDeterministic,
		ShortestFloat: cbor.ShortestFloat16,
		NaNConvert:    cbor.NaNConvert7e00,
		InfConvert:    cbor.InfConvertFloat16,
		IndefLength:   cbor.IndefLengthForbidden,
		TagsMd:        cbor.TagsAllowed,
	}.EncMode()
	if err != nil {
		panic(err)
	}
	return m
}()

// objDecMode decodes the maps inside one sealed object: no duplicate keys,
// no indefinite lengths, valid UTF-8, bounded nesting and counts (the
// object itself is size-capped before decoding, so no declared length can
// make the decoder allocate more than the input).
var objDecMode = func() cbor.DecMode {
	m, err := cbor.DecOptions{
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		IndefLength:      cbor.IndefLengthForbidden,
		TagsMd:           cbor.TagsAllowed,
		MaxNestedLevels:  32,
		MaxArrayElements: 65536,
		MaxMapPairs:      4096,
		UTF8:             cbor.UTF8RejectInvalid,
	}.DecMode()
	if err != nil {
		panic(err)
	}
	return m
}()

var containerModes sync.Map // Limits -> cbor.DecMode

// containerDecMode decodes the container structure: it holds no tags, and
// its arrays and maps are bounded by the object and scope caps.
func containerDecMode(l Limits) cbor.DecMode {
	if m, ok := containerModes.Load(l); ok {
		return m.(cbor.DecMode)
	}
	n := max(l.MaxObjects, l.MaxScopes, l.MaxKnownKeys, 16) + 1
	m, err := cbor.DecOptions{
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		IndefLength:      cbor.IndefLengthForbidden,
		TagsMd:           cbor.TagsForbidden,
		MaxNestedLevels:  8,
		MaxArrayElements: n,
		MaxMapPairs:      n,
		UTF8:             cbor.UTF8RejectInvalid,
	}.DecMode()
	if err != nil {
		panic(err)
	}
	containerModes.Store(l, m)
	return m
}

// marshal encodes v deterministically; the values this package encodes
// always encode.
func marshal(v any) []byte {
	b, err := encMode.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("apertomemory: deterministic encoding failed: %v", err))
	}
	return b
}

// envelopeAAD is the envelope-aad of draft §5.1: deterministic CBOR of
// [format_version, id, scope_id]. format_version 1 has none (empty).
func envelopeAAD(version uint64, id ObjectID, scope ScopeID) []byte {
	if version < 2 {
		return []byte{}
	}
	return marshal([]any{version, id[:], scope[:]})
}

var errNotMap = errors.New("not a definite-length map")

// mapPairs splits a well-formed CBOR map into its key and value items, in
// order, without collapsing duplicate keys, so a caller can isolate a
// duplicated entry instead of failing the whole map.
func mapPairs(dm cbor.DecMode, raw []byte, maxPairs int) ([][2]cbor.RawMessage, error) {
	if len(raw) == 0 || raw[0]>>5 != 5 {
		return nil, errNotMap
	}
	n, hdr, err := headArg(raw)
	if err != nil {
		return nil, err
	}
	if n > uint64(maxPairs) {
		return nil, fmt.Errorf("%d map entries, cap %d", n, maxPairs)
	}
	dec := dm.NewDecoder(bytes.NewReader(raw[hdr:]))
	out := make([][2]cbor.RawMessage, 0, n)
	for i := uint64(0); i < n; i++ {
		var k, v cbor.RawMessage
		if err := dec.Decode(&k); err != nil {
			return nil, err
		}
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, [2]cbor.RawMessage{k, v})
	}
	if hdr+dec.NumBytesRead() != len(raw) {
		return nil, errors.New("trailing bytes after map")
	}
	return out, nil
}

// headArg reads the argument of a CBOR head (the count of a map or array)
// and the head's length.
func headArg(raw []byte) (uint64, int, error) {
	ai := raw[0] & 0x1f
	switch {
	case ai < 24:
		return uint64(ai), 1, nil
	case ai == 24 && len(raw) >= 2:
		return uint64(raw[1]), 2, nil
	case ai == 25 && len(raw) >= 3:
		return uint64(binary.BigEndian.Uint16(raw[1:])), 3, nil
	case ai == 26 && len(raw) >= 5:
		return uint64(binary.BigEndian.Uint32(raw[1:])), 5, nil
	case ai == 27 && len(raw) >= 9:
		return binary.BigEndian.Uint64(raw[1:]), 9, nil
	}
	return 0, 0, errNotMap
}

// majorType of the first item of raw, or 8 when raw is empty.
func majorType(raw []byte) byte {
	if len(raw) == 0 {
		return 8
	}
	return raw[0] >> 5
}

// decodeAs decodes raw as a T if its first item has the CBOR major type
// given (so that, for example, an array of small integers never passes for
// a byte string).
func decodeAs[T any](dm cbor.DecMode, raw cbor.RawMessage, major byte) (T, bool) {
	var v T
	if majorType(raw) != major {
		return v, false
	}
	if err := dm.Unmarshal(raw, &v); err != nil {
		var zero T
		return zero, false
	}
	return v, true
}

// decodeBytes decodes raw as a byte string (major type 2).
func decodeBytes(dm cbor.DecMode, raw cbor.RawMessage) ([]byte, bool) {
	return decodeAs[[]byte](dm, raw, 2)
}

// decodeText decodes raw as a text string (major type 3).
func decodeText(dm cbor.DecMode, raw cbor.RawMessage) (string, bool) {
	return decodeAs[string](dm, raw, 3)
}

// decodeUint decodes raw as an unsigned integer (major type 0).
func decodeUint(dm cbor.DecMode, raw cbor.RawMessage) (uint64, bool) {
	return decodeAs[uint64](dm, raw, 0)
}

// decodeMap decodes raw as a map (major type 5) with keys of type K; an
// empty map is non-nil.
func decodeMap[K comparable](dm cbor.DecMode, raw cbor.RawMessage) (map[K]cbor.RawMessage, bool) {
	m, ok := decodeAs[map[K]cbor.RawMessage](dm, raw, 5)
	if ok && m == nil {
		m = map[K]cbor.RawMessage{}
	}
	return m, ok
}

// decodeUintMap decodes raw as a map with unsigned-integer keys.
func decodeUintMap(dm cbor.DecMode, raw cbor.RawMessage) (map[uint64]cbor.RawMessage, bool) {
	return decodeMap[uint64](dm, raw)
}

// decodeIntMap decodes raw as a map with integer keys (COSE headers).
func decodeIntMap(dm cbor.DecMode, raw cbor.RawMessage) (map[int64]cbor.RawMessage, bool) {
	return decodeMap[int64](dm, raw)
}
