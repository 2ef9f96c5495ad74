package receipts

import (
	"bytes"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// This file holds the strict I-JSON (RFC 7493) reader shared by every
// receipt parser. It accepts less than encoding/json does, on purpose:
//
//   - duplicate member names are refused at parse time (ECCR parser
//     invariant 1), so a second label can never overwrite the first;
//   - strings must be valid UTF-8 and escapes must not encode lone
//     surrogates;
//   - numbers must be written as integers (no fraction, no exponent, no -0)
//     within [-(2^53-1), 2^53-1], so every number has exactly one canonical
//     form and survives a round trip through any I-JSON implementation;
//   - nesting depth and member counts are capped, and the caller caps the
//     input size before calling.
//
// The result is a small tree whose object members keep their input order;
// the typed decoders walk it and check exact member sets.

// maxSafeInteger is 2^53-1, the largest integer every I-JSON peer represents
// exactly.
const maxSafeInteger = 1<<53 - 1

// maxDepth bounds nesting; the deepest receipt shape is five levels.
const maxDepth = 32

// maxObjectMembers bounds the members of any one object, whatever the
// caller's maxMembers: every object of every document read here has a
// closed member set of at most a dozen names, so a larger object is refused
// at once instead of after hashing up to maxMembers names.
const maxObjectMembers = 64

type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func (k kind) String() string {
	switch k {
	case kindNull:
		return "null"
	case kindBool:
		return "boolean"
	case kindNumber:
		return "number"
	case kindString:
		return "string"
	case kindArray:
		return "array"
	default:
		return "object"
	}
}

// value is one parsed JSON value.
type value struct {
	kind    kind
	b       bool
	num     int64
	str     string
	elems   []value
	members []member
}

type member struct {
	name string
	val  value
}

// get returns the member named name, if present.
func (v *value) get(name string) (*value, bool) {
	if v == nil {
		return nil, false
	}
	for i := range v.members {
		if v.members[i].name == name {
			return &v.members[i].val, true
		}
	}
	return nil, false
}

// syntaxError reports where the input stopped being strict I-JSON.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string {
	return "byte " + strconv.Itoa(e.off) + ": " + e.msg
}

type parser struct {
	data       []byte
	off        int
	maxMembers int // per object and per array
	maxObject  int // per object, at most maxMembers
	// values counts the values parsed; beyond maxValues (when not 0) the
	// input is refused, so that a body of tiny values ("[0,0,0,…]") cannot
	// cost some 40 times its size in tree nodes.
	values, maxValues int
	// Scratch stacks: members and elements of the containers being parsed
	// collect here and are copied out once, exactly sized, when their
	// container closes.
	mstack []member
	vstack []value

	// nonCanonical is set when the input differs from the JCS form of the
	// tree: whitespace, members out of order, or escapes JCS would not
	// write. While it stays false the input bytes are the canonical bytes.
	nonCanonical bool
	// spans are the byte ranges of the top-level object's members, from a
	// member name's opening quote to the end of its value.
	spans []span
}

// span is a byte range [start, end); value is where the member's value
// starts in it.
type span struct{ start, value, end int }

// scratch holds a parser's stacks between parses: allocating them for
// every receipt was a tenth of the parse time of an audit.
type scratch struct {
	mstack []member
	vstack []value
}

// maxPooledStack is the largest stack kept for reuse.
const maxPooledStack = 1024

var scratchPool = sync.Pool{New: func() any { return &scratch{mstack: make([]member, 0, 32), vstack: make([]value, 0, 16)} }}

// receiptValues is the most values a receipt or submission whose longest
// array or object may hold maxMembers entries is allowed: twelve a member
// (a manifest item is up to five values, a delivered fragment ten) and 4096
// for the rest.
func receiptValues(maxMembers int) int { return 12*maxMembers + 4096 }

// parseJSON parses data, which must hold exactly one JSON value (optionally
// surrounded by whitespace). maxMembers caps the members of any one object
// and the elements of any one array.
func parseJSON(data []byte, maxMembers int) (value, error) {
	d, err := parseDocument(data, maxMembers, 0)
	if err != nil {
		return value{}, err
	}
	return d.value, nil
}

// A document is a parsed input and what the parser learned about its bytes.
type document struct {
	value
	raw       []byte // the parser's private copy of the input
	canonical bool   // raw is exactly the JCS form of value
	spans     []span // of the top-level members in raw, in member order (when value is an object)
}

// parseDocument is parseJSON keeping the input bytes and whether they are
// already canonical: log leaves always are, and then the canonical and
// signed bytes are cut from them instead of being encoded again.
func parseDocument(data []byte, maxMembers, maxValues int) (*document, error) {
	return parseLimited(data, maxMembers, min(maxMembers, maxObjectMembers), maxValues)
}

// parseLimited is parseDocument with its own cap, maxObject, on the members
// of any one object.
func parseLimited(data []byte, maxMembers, maxObject, maxValues int) (*document, error) {
	// Strings without escapes are views into one private copy of the input
	// rather than one allocation each; the copy keeps the tree independent
	// of the caller's buffer.
	data = bytes.Clone(data)
	sc := scratchPool.Get().(*scratch)
	p := parser{data: data, maxMembers: maxMembers, maxObject: maxObject, maxValues: maxValues, mstack: sc.mstack[:0], vstack: sc.vstack[:0]}
	defer func() {
		// Stacks grown by a large input are left to the collector; the
		// others drop every reference into this parse's tree and are
		// reused.
		if cap(p.mstack) > maxPooledStack || cap(p.vstack) > maxPooledStack {
			return
		}
		clear(p.mstack[:cap(p.mstack)])
		clear(p.vstack[:cap(p.vstack)])
		sc.mstack, sc.vstack = p.mstack[:0], p.vstack[:0]
		scratchPool.Put(sc)
	}()
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.off != len(p.data) {
		return nil, p.errorf("unexpected data after the top-level value")
	}
	return &document{value: v, raw: data, canonical: !p.nonCanonical, spans: p.spans}, nil
}

// canonicalPair returns JCS(v) and prefix || JCS(v without member omit),
// where v is d's top-level value or, when d is nil or not canonical, tree.
// From a canonical document both are cut from its bytes.
func canonicalPair(d *document, tree *value, prefix, omit string, sizeHint int) (full, partial []byte) {
	if d != nil && d.canonical && tree == &d.value && len(d.spans) == len(tree.members) {
		k := -1
		for i := range tree.members {
			if tree.members[i].name == omit {
				k = i
			}
		}
		partial = make([]byte, 0, len(prefix)+len(d.raw))
		partial = append(partial, prefix...)
		switch {
		case k < 0:
			partial = append(partial, d.raw...)
		case len(d.spans) == 1:
			partial = append(partial, "{}"...)
		case k == 0:
			// The member and the comma after it.
			partial = append(partial, d.raw[:d.spans[0].start]...)
			partial = append(partial, d.raw[d.spans[1].start:]...)
		default:
			// The comma before the member and the member.
			partial = append(partial, d.raw[:d.spans[k-1].end]...)
			partial = append(partial, d.raw[d.spans[k].end:]...)
		}
		return d.raw, partial
	}
	full = make([]byte, 0, sizeHint)
	partial = make([]byte, 0, len(prefix)+sizeHint)
	partial = append(partial, prefix...)
	return appendCanonicalPair(full, partial, tree.members, omit)
}

func (p *parser) errorf(msg string) error {
	return &syntaxError{off: p.off, msg: msg}
}

func (p *parser) skipSpace() {
	for p.off < len(p.data) {
		switch p.data[p.off] {
		case ' ', '\t', '\n', '\r':
			p.off++
			p.nonCanonical = true
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (value, error) {
	if p.off >= len(p.data) {
		return value{}, p.errorf("unexpected end of input")
	}
	if p.values++; p.maxValues > 0 && p.values > p.maxValues {
		return value{}, p.errorf("more than " + strconv.Itoa(p.maxValues) + " values in one document")
	}
	switch c := p.data[p.off]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, err := p.string()
		return value{kind: kindString, str: s}, err
	case c == '-' || (c >= '0' && c <= '9'):
		n, err := p.number()
		return value{kind: kindNumber, num: n}, err
	case c == 't':
		return value{kind: kindBool, b: true}, p.literal("true")
	case c == 'f':
		return value{kind: kindBool}, p.literal("false")
	case c == 'n':
		return value{kind: kindNull}, p.literal("null")
	default:
		return value{}, p.errorf("invalid character " + strconv.QuoteRune(rune(c)) + " looking for a value")
	}
}

func (p *parser) literal(lit string) error {
	if len(p.data)-p.off < len(lit) || string(p.data[p.off:p.off+len(lit)]) != lit {
		return p.errorf("invalid literal (NaN, Infinity and other non-JSON values are refused)")
	}
	p.off += len(lit)
	return nil
}

func (p *parser) object(depth int) (value, error) {
	if depth > maxDepth {
		return value{}, p.errorf("nesting deeper than " + strconv.Itoa(maxDepth) + " levels")
	}
	p.off++ // '{'
	v := value{kind: kindObject}
	p.skipSpace()
	if p.off < len(p.data) && p.data[p.off] == '}' {
		p.off++
		return v, nil
	}
	base := len(p.mstack)
	defer func() { p.mstack = p.mstack[:base] }()
	var seen map[string]struct{}
	for {
		p.skipSpace()
		if p.off >= len(p.data) || p.data[p.off] != '"' {
			return value{}, p.errorf("expected a member name")
		}
		start := p.off
		name, err := p.string()
		if err != nil {
			return value{}, err
		}
		// Duplicate names are refused: linear scan for the small objects
		// receipts are made of, a set for large ones.
		cur := p.mstack[base:]
		if len(cur) >= p.maxObject {
			return value{}, p.errorf("object has more than " + strconv.Itoa(p.maxObject) + " members")
		}
		if len(cur) > 0 && !p.nonCanonical && !lessUTF16(cur[len(cur)-1].name, name) {
			p.nonCanonical = true // out of JCS order
		}
		if len(cur) < 16 {
			for i := range cur {
				if cur[i].name == name {
					p.off = start
					return value{}, p.errorf("duplicate member " + strconv.Quote(name))
				}
			}
		} else {
			if seen == nil {
				seen = make(map[string]struct{}, 32)
				for i := range cur {
					seen[cur[i].name] = struct{}{}
				}
			}
			if _, dup := seen[name]; dup {
				p.off = start
				return value{}, p.errorf("duplicate member " + strconv.Quote(name))
			}
			seen[name] = struct{}{}
		}
		p.skipSpace()
		if p.off >= len(p.data) || p.data[p.off] != ':' {
			return value{}, p.errorf("expected ':' after a member name")
		}
		p.off++
		p.skipSpace()
		valueStart := p.off
		val, err := p.value(depth)
		if err != nil {
			return value{}, err
		}
		if depth == 1 {
			p.spans = append(p.spans, span{start: start, value: valueStart, end: p.off})
		}
		p.mstack = append(p.mstack, member{name: name, val: val})
		p.skipSpace()
		if p.off >= len(p.data) {
			return value{}, p.errorf("unexpected end of input in an object")
		}
		switch p.data[p.off] {
		case ',':
			p.off++
		case '}':
			p.off++
			v.members = append([]member(nil), p.mstack[base:]...)
			return v, nil
		default:
			return value{}, p.errorf("expected ',' or '}' in an object")
		}
	}
}

func (p *parser) array(depth int) (value, error) {
	if depth > maxDepth {
		return value{}, p.errorf("nesting deeper than " + strconv.Itoa(maxDepth) + " levels")
	}
	p.off++ // '['
	v := value{kind: kindArray}
	p.skipSpace()
	if p.off < len(p.data) && p.data[p.off] == ']' {
		p.off++
		v.elems = []value{}
		return v, nil
	}
	base := len(p.vstack)
	defer func() { p.vstack = p.vstack[:base] }()
	for {
		if len(p.vstack)-base >= p.maxMembers {
			return value{}, p.errorf("array has more than " + strconv.Itoa(p.maxMembers) + " elements")
		}
		p.skipSpace()
		val, err := p.value(depth)
		if err != nil {
			return value{}, err
		}
		p.vstack = append(p.vstack, val)
		p.skipSpace()
		if p.off >= len(p.data) {
			return value{}, p.errorf("unexpected end of input in an array")
		}
		switch p.data[p.off] {
		case ',':
			p.off++
		case ']':
			p.off++
			v.elems = append([]value(nil), p.vstack[base:]...)
			return v, nil
		default:
			return value{}, p.errorf("expected ',' or ']' in an array")
		}
	}
}

// number parses an integer in the strict profile: -?(0|[1-9][0-9]*), no
// fraction, no exponent, not -0, magnitude at most 2^53-1.
func (p *parser) number() (int64, error) {
	start := p.off
	neg := false
	if p.data[p.off] == '-' {
		neg = true
		p.off++
	}
	digits := p.off
	for p.off < len(p.data) && p.data[p.off] >= '0' && p.data[p.off] <= '9' {
		p.off++
	}
	nd := p.off - digits
	if nd == 0 {
		p.off = start
		return 0, p.errorf("invalid number (NaN, Infinity and other non-JSON values are refused)")
	}
	if nd > 1 && p.data[digits] == '0' {
		p.off = start
		return 0, p.errorf("invalid number: leading zero")
	}
	if p.off < len(p.data) {
		switch p.data[p.off] {
		case '.', 'e', 'E':
			p.off = start
			return 0, p.errorf("number is not an integer (fractions and exponents are refused)")
		}
	}
	if nd > 16 {
		p.off = start
		return 0, p.errorf("number is outside the safe integer range [-(2^53-1), 2^53-1]")
	}
	var n int64
	for _, c := range p.data[digits:p.off] {
		n = n*10 + int64(c-'0')
	}
	if n > maxSafeInteger {
		p.off = start
		return 0, p.errorf("number is outside the safe integer range [-(2^53-1), 2^53-1]")
	}
	if neg {
		if n == 0 {
			p.off = start
			return 0, p.errorf("negative zero is refused")
		}
		n = -n
	}
	return n, nil
}

// string parses a JSON string starting at the opening quote.
func (p *parser) string() (string, error) {
	p.off++ // opening quote
	start := p.off
	// Fast path: no escapes, ASCII or valid UTF-8.
	for p.off < len(p.data) {
		c := p.data[p.off]
		switch {
		case c == '"':
			s := p.data[start:p.off]
			p.off++
			if len(s) == 0 {
				return "", nil
			}
			return unsafe.String(&s[0], len(s)), nil
		case c == '\\':
			return p.stringSlow(start)
		case c < 0x20:
			return "", p.errorf("control character in a string must be escaped")
		case c < utf8.RuneSelf:
			p.off++
		default:
			r, size := utf8.DecodeRune(p.data[p.off:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.errorf("invalid UTF-8 in a string")
			}
			if isNoncharacter(r) {
				return "", p.errorf("Unicode noncharacter in a string")
			}
			p.off += size
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *parser) stringSlow(start int) (string, error) {
	buf := make([]byte, 0, p.off-start+16)
	buf = append(buf, p.data[start:p.off]...)
	for p.off < len(p.data) {
		c := p.data[p.off]
		switch {
		case c == '"':
			p.off++
			return string(buf), nil
		case c == '\\':
			if p.off+1 >= len(p.data) {
				return "", p.errorf("unterminated escape")
			}
			e := p.data[p.off+1]
			switch e {
			case '"', '\\':
				buf = append(buf, e)
				p.off += 2
			case '/':
				buf = append(buf, e)
				p.off += 2
				p.nonCanonical = true // JCS writes '/' as is
			case 'b':
				buf = append(buf, '\b')
				p.off += 2
			case 'f':
				buf = append(buf, '\f')
				p.off += 2
			case 'n':
				buf = append(buf, '\n')
				p.off += 2
			case 'r':
				buf = append(buf, '\r')
				p.off += 2
			case 't':
				buf = append(buf, '\t')
				p.off += 2
			case 'u':
				r, ok := p.hex4(p.off + 2)
				if !ok {
					return "", p.errorf("invalid \\u escape")
				}
				// JCS writes \u00xx, lowercase, only for the controls
				// without a short form.
				if r >= 0x20 || r == '\b' || r == '\t' || r == '\n' || r == '\f' || r == '\r' || hasUpperHex(p.data[p.off+2:p.off+6]) {
					p.nonCanonical = true
				}
				p.off += 6
				switch {
				case utf16.IsSurrogate(r) && r < 0xdc00:
					// High surrogate: a low one must follow.
					r2, ok := rune(0), false
					if p.off+1 < len(p.data) && p.data[p.off] == '\\' && p.data[p.off+1] == 'u' {
						r2, ok = p.hex4(p.off + 2)
					}
					if !ok || r2 < 0xdc00 || r2 > 0xdfff {
						return "", p.errorf("lone surrogate in a \\u escape")
					}
					p.off += 6
					r = utf16.DecodeRune(r, r2)
				case utf16.IsSurrogate(r):
					return "", p.errorf("lone surrogate in a \\u escape")
				}
				if isNoncharacter(r) {
					return "", p.errorf("Unicode noncharacter in a \\u escape")
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return "", p.errorf("invalid escape character " + strconv.QuoteRune(rune(e)))
			}
		case c < 0x20:
			return "", p.errorf("control character in a string must be escaped")
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			p.off++
		default:
			r, size := utf8.DecodeRune(p.data[p.off:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.errorf("invalid UTF-8 in a string")
			}
			if isNoncharacter(r) {
				return "", p.errorf("Unicode noncharacter in a string")
			}
			buf = append(buf, p.data[p.off:p.off+size]...)
			p.off += size
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *parser) hex4(at int) (rune, bool) {
	if at+4 > len(p.data) {
		return 0, false
	}
	var r rune
	for _, c := range p.data[at : at+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

func hasUpperHex(b []byte) bool {
	for _, c := range b {
		if c >= 'A' && c <= 'F' {
			return true
		}
	}
	return false
}

// isNoncharacter reports whether r is a Unicode noncharacter, which I-JSON
// (RFC 7493, section 2.1) forbids: U+FDD0..U+FDEF and the last two code
// points of every plane.
func isNoncharacter(r rune) bool {
	return (r >= 0xfdd0 && r <= 0xfdef) || r&0xfffe == 0xfffe
}
