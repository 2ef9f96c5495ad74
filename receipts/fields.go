package receipts

import (
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// decoder walks a parsed tree, checking exact member sets and member types.
// It keeps the first failure; later calls are no-ops that return zero
// values, so decoding code reads straight through and checks d.err once.
type decoder struct {
	code Code // the code for structural failures
	err  *Error
}

// MemberPath is the path of member name inside parent, as errors name
// members: "signature.kid", or "kid" at the top level.
func MemberPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func (d *decoder) fail(path, format string, args ...any) {
	if d.err == nil {
		d.err = refuse(d.code, path, format, args...)
	}
}

// object checks that v is an object whose members are exactly required plus
// any of optional, and returns it.
func (d *decoder) object(v *value, path string, required, optional []string) *value {
	if d.err != nil {
		return nil
	}
	if v.kind != kindObject {
		d.fail(path, "must be an object, not %s", v.kind)
		return nil
	}
	if name, problem := checkMembers(v, required, optional); problem != "" {
		d.fail(MemberPath(path, name), "%s", problem)
		return nil
	}
	return v
}

// checkMembers checks that the object v's members are exactly required plus
// any of optional. If not, it names the first required member missing, or
// else the first member of neither list, and says which ("required member
// is missing", "unknown member (the member set is closed)").
func checkMembers(v *value, required, optional []string) (name, problem string) {
	for _, name := range required {
		if _, ok := v.get(name); !ok {
			return name, "required member is missing"
		}
	}
	if len(v.members) == len(required) {
		return "", ""
	}
	for i := range v.members {
		name := v.members[i].name
		if !contains(required, name) && !contains(optional, name) {
			return name, "unknown member (the member set is closed)"
		}
	}
	return "", ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// member returns the member name of o, which object has already checked.
func (d *decoder) member(o *value, name string) *value {
	if d.err != nil || o == nil {
		return &value{}
	}
	v, ok := o.get(name)
	if !ok {
		return &value{}
	}
	return v
}

func (d *decoder) str(o *value, parent, name string) string {
	v := d.member(o, name)
	if d.err != nil {
		return ""
	}
	if v.kind != kindString {
		d.fail(MemberPath(parent, name), "must be a string, not %s", v.kind)
		return ""
	}
	return v.str
}

// boundedString is a string of 1 to max bytes with no control characters.
func (d *decoder) boundedString(o *value, parent, name string, max int) string {
	s := d.str(o, parent, name)
	if d.err != nil {
		return ""
	}
	if s == "" || len(s) > max {
		d.fail(MemberPath(parent, name), "must be a non-empty string of at most %d bytes", max)
		return ""
	}
	if HasControl(s) {
		d.fail(MemberPath(parent, name), "must not contain control characters")
		return ""
	}
	return s
}

// HasControl reports whether s holds an ASCII control character (U+0000 to
// U+001F, or U+007F), which text members refuse.
func HasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

func (d *decoder) constant(o *value, parent, name, want string) {
	if s := d.str(o, parent, name); d.err == nil && s != want {
		d.fail(MemberPath(parent, name), "must be %q", want)
	}
}

func (d *decoder) integer(o *value, parent, name string, min, max int64) int64 {
	v := d.member(o, name)
	if d.err != nil {
		return 0
	}
	if v.kind != kindNumber {
		d.fail(MemberPath(parent, name), "must be an integer, not %s", v.kind)
		return 0
	}
	if v.num < min || v.num > max {
		d.fail(MemberPath(parent, name), "must be an integer in [%d, %d]", min, max)
		return 0
	}
	return v.num
}

func (d *decoder) boolean(o *value, parent, name string) bool {
	v := d.member(o, name)
	if d.err != nil {
		return false
	}
	if v.kind != kindBool {
		d.fail(MemberPath(parent, name), "must be a boolean, not %s", v.kind)
		return false
	}
	return v.b
}

func (d *decoder) digest(o *value, parent, name string) string {
	s := d.str(o, parent, name)
	if d.err == nil && !IsDigest(s) {
		d.fail(MemberPath(parent, name), "must be \"sha256:\" followed by 64 lowercase hex digits")
	}
	return s
}

func (d *decoder) uri(o *value, parent, name string) string {
	s := d.str(o, parent, name)
	if d.err == nil {
		if err := checkURI(s); err != "" {
			d.fail(MemberPath(parent, name), "%s", err)
		}
	}
	return s
}

// timestamp reads an RFC 3339 UTC timestamp ending in "Z". It returns the
// parsed time; the text itself stays in the tree for canonical bytes.
func (d *decoder) timestamp(o *value, parent, name string) (time.Time, string) {
	s := d.str(o, parent, name)
	if d.err != nil {
		return time.Time{}, ""
	}
	t, err := ParseTimestamp(s)
	if err != nil {
		d.fail(MemberPath(parent, name), "%v", err)
		return time.Time{}, ""
	}
	return t, s
}

// IsDigest reports whether s is "sha256:" followed by 64 lowercase hex
// digits.
func IsDigest(s string) bool {
	if len(s) != 71 || !strings.HasPrefix(s, "sha256:") {
		return false
	}
	for i := 7; i < 71; i++ {
		if !lowerHex[s[i]] {
			return false
		}
	}
	return true
}

// lowerHex and b64uAlphabet are byte classes as tables: digests and
// base64url strings are checked byte by byte for every receipt, and a
// table lookup is several times cheaper than the chained comparisons.
var lowerHex, b64uAlphabet = func() (h, b [256]bool) {
	for c := 0; c < 256; c++ {
		h[c] = c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
		b[c] = c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	return
}()

// maxURI is the cap on identifiers written as URIs.
const maxURI = 2048

// checkURI returns "" when s is an absolute URI (RFC 3986: a scheme, a
// colon, and the rest) of printable ASCII without spaces, at most 2048
// bytes; otherwise it says what is wrong.
func checkURI(s string) string {
	if s == "" || len(s) > maxURI {
		return "must be an absolute URI of 1 to 2048 bytes"
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= 0x20 || s[i] >= 0x7f {
			return "must be an absolute URI of printable ASCII without spaces"
		}
	}
	colon := strings.IndexByte(s, ':')
	if colon <= 0 {
		return "must be an absolute URI (scheme \":\" ...)"
	}
	for i := 0; i < colon; i++ {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if i == 0 && !letter || !(letter || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return "must be an absolute URI with a valid scheme"
		}
	}
	if _, err := url.Parse(s); err != nil {
		return "must be a valid URI"
	}
	return ""
}

// ParseTimestamp parses an RFC 3339 timestamp in UTC, written with an
// upper-case "T" and "Z" and optionally 1 to 9 fractional digits, as in
// "2026-07-29T17:00:01.000Z".
func ParseTimestamp(s string) (time.Time, error) {
	// Shape first: time.Parse alone would take offsets and lower case.
	ok := len(s) >= 20 && len(s) <= 30 && s[len(s)-1] == 'Z' && s[10] == 'T' &&
		s[4] == '-' && s[7] == '-' && s[13] == ':' && s[16] == ':'
	if ok && len(s) > 20 {
		ok = s[19] == '.' && len(s) >= 22
		for i := 20; ok && i < len(s)-1; i++ {
			ok = s[i] >= '0' && s[i] <= '9'
		}
	}
	if !ok {
		return time.Time{}, timestampError(s)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, timestampError(s)
	}
	return t, nil
}

type timestampError string

func (e timestampError) Error() string {
	return "must be an RFC 3339 UTC timestamp such as \"2026-07-29T17:00:01.000Z\", not " + strconv.Quote(string(e))
}

// FormatTimestamp writes t in UTC with millisecond precision, the form the
// drafts use.
func FormatTimestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// DecodeB64u decodes strict unpadded base64url (RFC 4648 section 5): no
// padding, no line breaks, and unused trailing bits must be zero, so every
// byte string has exactly one encoding.
func DecodeB64u(s string) ([]byte, bool) {
	// The alphabet check comes first: the standard decoder skips '\r' and
	// '\n', which would give one byte string many encodings.
	for i := 0; i < len(s); i++ {
		if !b64uAlphabet[s[i]] {
			return nil, false
		}
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, false
	}
	return b, true
}

// EncodeB64u encodes b as unpadded base64url.
func EncodeB64u(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// isB64u reports whether s is non-empty strict unpadded base64url.
func isB64u(s string) bool {
	_, ok := DecodeB64u(s)
	return ok && s != ""
}
