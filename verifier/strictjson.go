package verifier

import (
	"fmt"
	"time"

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
// policy, audit state, source-proof answers) are read by the strict I-JSON
// reader receipts are read with ([receipts.ReadJSON]), and closed member
// sets are checked by jdec.

// jvalue is one value of a parsed document.
type jvalue = receipts.JSONValue

// maxJSONMembers caps the members of one object and the elements of one
// array in these documents; their size caps bound them first.
const maxJSONMembers = 1 << 30

// parseStrictJSON parses data as one strict I-JSON value.
func parseStrictJSON(doc string, data []byte) (*receipts.JSONDocument, *jvalue, error) {
	d, err := receipts.ReadJSON(data, maxJSONMembers, 0)
	if err != nil {
		return nil, nil, &InputError{Document: doc, Reason: "not strict I-JSON: " + err.Error()}
	}
	v := d.Value()
	return d, &v, nil
}

// get returns o's member name, or nil when it is absent.
func get(o *jvalue, name string) *jvalue {
	v, ok := o.Get(name)
	if !ok {
		return nil
	}
	return &v
}

// article names a kind for a message: "an object", "a string".
func article(k receipts.JSONKind) string {
	if k == receipts.JSONArray || k == receipts.JSONObject {
		return "an " + k.String()
	}
	if k == receipts.JSONNull {
		return "null"
	}
	return "a " + k.String()
}

// jdec reads a parsed document, checking closed member sets and types. It
// keeps the first failure; later calls return zero values, so decoding
// reads straight through and checks err once.
type jdec struct {
	doc string
	err *InputError
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
	if v == nil || v.Kind() != receipts.JSONObject {
		kind := "missing"
		if v != nil {
			kind = article(v.Kind())
		}
		d.fail(path, "must be an object, not %s", kind)
		return nil
	}
	if name, problem := v.CheckMembers(required, optional); problem != "" {
		d.fail(receipts.MemberPath(path, name), "%s", problem)
		return nil
	}
	return v
}

// member returns o's member name, or nil when it is absent or decoding
// already failed.
func (d *jdec) member(o *jvalue, name string) *jvalue {
	if d.err != nil || o == nil {
		return nil
	}
	return get(o, name)
}

func (d *jdec) str(v *jvalue, path string) string {
	if d.err != nil {
		return ""
	}
	if v == nil || v.Kind() != receipts.JSONString {
		d.fail(path, "must be a string")
		return ""
	}
	return v.Str()
}

func (d *jdec) boolean(v *jvalue, path string) bool {
	if d.err != nil {
		return false
	}
	if v == nil || v.Kind() != receipts.JSONBool {
		d.fail(path, "must be a boolean")
		return false
	}
	return v.Bool()
}

// integer reads an integer in [min, max] (the reader refuses fractions,
// exponents and minus zero).
func (d *jdec) integer(v *jvalue, path string, min, max int64) int64 {
	if d.err != nil {
		return 0
	}
	if v == nil || v.Kind() != receipts.JSONNumber {
		d.fail(path, "must be an integer")
		return 0
	}
	if n := v.Int(); n >= min && n <= max {
		return n
	}
	d.fail(path, "must be an integer in [%d, %d]", min, max)
	return 0
}

func (d *jdec) array(v *jvalue, path string, max int) []jvalue {
	if d.err != nil {
		return nil
	}
	if v == nil || v.Kind() != receipts.JSONArray {
		d.fail(path, "must be an array")
		return nil
	}
	if v.Len() > max {
		d.fail(path, "has %d elements, more than the %d allowed", v.Len(), max)
		return nil
	}
	elems := make([]jvalue, v.Len())
	for i := range elems {
		elems[i] = v.Elem(i)
	}
	return elems
}

// b64u reads strict unpadded base64url: the URL alphabet only, no padding,
// unused trailing bits zero. The result is never nil, even when empty.
func (d *jdec) b64u(v *jvalue, path string) []byte {
	s := d.str(v, path)
	if d.err != nil {
		return nil
	}
	b, ok := receipts.DecodeB64u(s)
	if !ok {
		d.fail(path, "must be unpadded base64url")
		return nil
	}
	if b == nil {
		b = []byte{}
	}
	return b
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
	if s == "" || len(s) > max || receipts.HasControl(s) {
		d.fail(path, "must be a non-empty string of at most %d bytes without control characters", max)
		return ""
	}
	return s
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
