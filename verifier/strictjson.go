package verifier

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memtrail/memtrail/receipts"
)

// InputError reports a verification material, verification policy,
// registry or audit state document that does not parse. It matches
// [ErrMalformed] with [errors.Is].
type InputError struct {
	Document string // "verification material", "verification policy", …
	Member   string // the failing member as a path; empty for the whole document
	Reason   string
}

func (e *InputError) Error() string {
	s := e.Document
	if e.Member != "" {
		s += ": " + e.Member
	}
	return s + ": " + e.Reason
}

// Is reports whether target is [ErrMalformed].
func (e *InputError) Is(target error) bool { return target == ErrMalformed }

// The JSON documents this package reads (verification material and
// policy, audit state, source-proof answers) are read strictly, like
// receipts: valid UTF-8, one value, no duplicate member names, nesting of
// at most maxJSONDepth, and closed member sets checked by jdec.

const maxJSONDepth = 32

type jkind uint8

const (
	jnull jkind = iota
	jbool
	jnumber
	jstring
	jarray
	jobject
)

func (k jkind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[k]
}

type jvalue struct {
	kind    jkind
	b       bool
	num     string // the literal, for numbers
	str     string
	elems   []jvalue
	members []jmember
	raw     []byte // the value's bytes in the document, for objects read as raw
}

type jmember struct {
	name string
	val  jvalue
}

func (v *jvalue) get(name string) (*jvalue, bool) {
	for i := range v.members {
		if v.members[i].name == name {
			return &v.members[i].val, true
		}
	}
	return nil, false
}

// parseStrictJSON parses data as one strict JSON value.
func parseStrictJSON(doc string, data []byte) (*jvalue, error) {
	if !utf8.Valid(data) {
		return nil, &InputError{Document: doc, Reason: "not valid UTF-8"}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	p := &jparser{dec: dec, data: data}
	tok, err := dec.Token()
	if err != nil {
		return nil, &InputError{Document: doc, Reason: "not JSON: " + describeJSONError(err)}
	}
	v, err := p.value(tok, 0)
	if err != nil {
		return nil, &InputError{Document: doc, Reason: err.Error()}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &InputError{Document: doc, Reason: "more than one JSON value"}
	}
	return &v, nil
}

func describeJSONError(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v at byte %d", se, se.Offset)
	}
	if errors.Is(err, io.EOF) {
		return "empty document"
	}
	return err.Error()
}

type jparser struct {
	dec  *json.Decoder
	data []byte
}

func (p *jparser) value(tok json.Token, depth int) (jvalue, error) {
	if depth > maxJSONDepth {
		return jvalue{}, fmt.Errorf("nested more than %d levels", maxJSONDepth)
	}
	switch t := tok.(type) {
	case nil:
		return jvalue{kind: jnull}, nil
	case bool:
		return jvalue{kind: jbool, b: t}, nil
	case json.Number:
		return jvalue{kind: jnumber, num: string(t)}, nil
	case string:
		return jvalue{kind: jstring, str: t}, nil
	case json.Delim:
		switch t {
		case '[':
			v := jvalue{kind: jarray}
			for p.dec.More() {
				tok, err := p.dec.Token()
				if err != nil {
					return jvalue{}, errors.New(describeJSONError(err))
				}
				e, err := p.value(tok, depth+1)
				if err != nil {
					return jvalue{}, err
				}
				v.elems = append(v.elems, e)
			}
			if _, err := p.dec.Token(); err != nil {
				return jvalue{}, errors.New(describeJSONError(err))
			}
			return v, nil
		case '{':
			start := p.dec.InputOffset() - 1
			v := jvalue{kind: jobject}
			seen := map[string]bool{}
			for p.dec.More() {
				tok, err := p.dec.Token()
				if err != nil {
					return jvalue{}, errors.New(describeJSONError(err))
				}
				name, ok := tok.(string)
				if !ok {
					return jvalue{}, errors.New("object member name is not a string")
				}
				if seen[name] {
					return jvalue{}, fmt.Errorf("duplicate member %q", name)
				}
				seen[name] = true
				tok, err = p.dec.Token()
				if err != nil {
					return jvalue{}, errors.New(describeJSONError(err))
				}
				e, err := p.value(tok, depth+1)
				if err != nil {
					return jvalue{}, err
				}
				v.members = append(v.members, jmember{name: name, val: e})
			}
			if _, err := p.dec.Token(); err != nil {
				return jvalue{}, errors.New(describeJSONError(err))
			}
			v.raw = p.data[start:p.dec.InputOffset()]
			return v, nil
		}
	}
	return jvalue{}, fmt.Errorf("unexpected token %v", tok)
}

// jdec reads a parsed document, checking closed member sets and types. It
// keeps the first failure; later calls return zero values, so decoding
// reads straight through and checks err once.
type jdec struct {
	doc string
	err *InputError
}

func jpath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func (d *jdec) fail(path, format string, args ...any) {
	if d.err == nil {
		d.err = &InputError{Document: d.doc, Member: path, Reason: fmt.Sprintf(format, args...)}
	}
}

// object checks that v is an object whose members are all of required
// plus any of optional.
func (d *jdec) object(v *jvalue, path string, required, optional []string) *jvalue {
	if d.err != nil {
		return nil
	}
	if v == nil || v.kind != jobject {
		kind := "missing"
		if v != nil {
			kind = v.kind.String()
		}
		d.fail(path, "must be an object, not %s", kind)
		return nil
	}
	for _, name := range required {
		if _, ok := v.get(name); !ok {
			d.fail(jpath(path, name), "required member is missing")
			return nil
		}
	}
	for _, m := range v.members {
		if !containsString(required, m.name) && !containsString(optional, m.name) {
			d.fail(jpath(path, m.name), "unknown member (the member set is closed)")
			return nil
		}
	}
	return v
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// member returns o's member name, or nil when it is absent or decoding
// already failed.
func (d *jdec) member(o *jvalue, name string) *jvalue {
	if d.err != nil || o == nil {
		return nil
	}
	v, _ := o.get(name)
	return v
}

func (d *jdec) str(v *jvalue, path string) string {
	if d.err != nil {
		return ""
	}
	if v == nil || v.kind != jstring {
		d.fail(path, "must be a string")
		return ""
	}
	return v.str
}

func (d *jdec) boolean(v *jvalue, path string) bool {
	if d.err != nil {
		return false
	}
	if v == nil || v.kind != jbool {
		d.fail(path, "must be a boolean")
		return false
	}
	return v.b
}

// integer reads an exact integer in [min, max]: no fraction, exponent or
// minus zero.
func (d *jdec) integer(v *jvalue, path string, min, max int64) int64 {
	if d.err != nil {
		return 0
	}
	if v == nil || v.kind != jnumber || strings.ContainsAny(v.num, ".eE") || v.num == "-0" {
		d.fail(path, "must be an integer")
		return 0
	}
	n, err := strconv.ParseInt(v.num, 10, 64)
	if err != nil || n < min || n > max {
		d.fail(path, "must be an integer in [%d, %d]", min, max)
		return 0
	}
	return n
}

func (d *jdec) array(v *jvalue, path string, max int) []jvalue {
	if d.err != nil {
		return nil
	}
	if v == nil || v.kind != jarray {
		d.fail(path, "must be an array")
		return nil
	}
	if len(v.elems) > max {
		d.fail(path, "has %d elements, more than the %d allowed", len(v.elems), max)
		return nil
	}
	return v.elems
}

// b64u reads strict unpadded base64url: the URL alphabet only, no padding,
// unused trailing bits zero. The result is never nil, even when empty.
func (d *jdec) b64u(v *jvalue, path string) []byte {
	s := d.str(v, path)
	if d.err != nil {
		return nil
	}
	b, ok := decodeB64u(s)
	if !ok {
		d.fail(path, "must be unpadded base64url")
		return nil
	}
	return b
}

func decodeB64u(s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return nil, false
		}
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, false
	}
	if b == nil {
		b = []byte{}
	}
	return b, true
}

// timestamp reads an RFC 3339 UTC timestamp as receipts write them.
func (d *jdec) timestamp(v *jvalue, path string) time.Time {
	s := d.str(v, path)
	if d.err != nil {
		return time.Time{}
	}
	t, err := receipts.ParseTimestamp(s)
	if err != nil {
		d.fail(path, "%v", err)
		return time.Time{}
	}
	return t
}

// digest reads "sha256:" followed by 64 lowercase hex digits.
func (d *jdec) digest(v *jvalue, path string) string {
	s := d.str(v, path)
	if d.err == nil && !receipts.IsDigest(s) {
		d.fail(path, "must be \"sha256:\" followed by 64 lowercase hex digits")
	}
	return s
}

// text reads a string of 1 to max bytes without control characters.
func (d *jdec) text(v *jvalue, path string, max int) string {
	s := d.str(v, path)
	if d.err != nil {
		return ""
	}
	if s == "" || len(s) > max || hasControl(s) {
		d.fail(path, "must be a non-empty string of at most %d bytes without control characters", max)
		return ""
	}
	return s
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// isPrintableID reports whether s is 1 to 2048 bytes of printable ASCII
// without spaces, as receipt ids (absolute URIs) are.
func isPrintableID(s string) bool {
	if s == "" || len(s) > 2048 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}
