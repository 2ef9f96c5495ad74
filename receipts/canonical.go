package receipts

import (
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// This file produces RFC 8785 (JCS) canonical bytes for the trees the strict
// reader accepts. Because that reader admits only integers in the safe range,
// the one hard part of JCS, ECMAScript number formatting, reduces to decimal
// integers; what remains is member ordering by UTF-16 code units and the
// JCS string escaping rules. The encoder is checked against the reference
// implementation github.com/gowebpki/jcs by the tests and a differential
// fuzzer, and is about fifty times faster on a receipt, which matters on the
// ingest and audit hot paths.

// appendCanonical appends the JCS form of v to buf.
func appendCanonical(buf []byte, v *value) []byte {
	switch v.kind {
	case kindNull:
		return append(buf, "null"...)
	case kindBool:
		if v.b {
			return append(buf, "true"...)
		}
		return append(buf, "false"...)
	case kindNumber:
		return strconv.AppendInt(buf, v.num, 10)
	case kindString:
		return appendCanonicalString(buf, v.str)
	case kindArray:
		buf = append(buf, '[')
		for i := range v.elems {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendCanonical(buf, &v.elems[i])
		}
		return append(buf, ']')
	default:
		return appendCanonicalObject(buf, v.members, "")
	}
}

// appendCanonicalObject appends the JCS form of an object made of members,
// leaving out the member named omit (when omit is not empty).
func appendCanonicalObject(buf []byte, members []member, omit string) []byte {
	var small [16]int
	order := sortedMembers(members, small[:0])
	buf = append(buf, '{')
	first := true
	for _, i := range order {
		m := &members[i]
		if omit != "" && m.name == omit {
			continue
		}
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = appendCanonicalString(buf, m.name)
		buf = append(buf, ':')
		buf = appendCanonical(buf, &m.val)
	}
	return append(buf, '}')
}

// appendCanonicalPair appends JCS(object) to full and JCS(object without
// the member omit) to partial in one pass: each member is encoded once and
// copied. It returns both buffers.
func appendCanonicalPair(full, partial []byte, members []member, omit string) ([]byte, []byte) {
	var small [16]int
	order := sortedMembers(members, small[:0])
	full = append(full, '{')
	partial = append(partial, '{')
	firstFull, firstPartial := true, true
	for _, i := range order {
		m := &members[i]
		if !firstFull {
			full = append(full, ',')
		}
		firstFull = false
		start := len(full)
		full = appendCanonicalString(full, m.name)
		full = append(full, ':')
		full = appendCanonical(full, &m.val)
		if m.name == omit {
			continue
		}
		if !firstPartial {
			partial = append(partial, ',')
		}
		firstPartial = false
		partial = append(partial, full[start:]...)
	}
	return append(full, '}'), append(partial, '}')
}

// sortedMembers appends to order the indexes of members in JCS order.
func sortedMembers(members []member, order []int) []int {
	for i := range members {
		order = append(order, i)
	}
	// Insertion sort: receipts have a dozen members at most per object, and
	// it needs no allocation; large objects fall back to slices.SortFunc.
	if len(order) <= 16 {
		for i := 1; i < len(order); i++ {
			for j := i; j > 0 && lessUTF16(members[order[j]].name, members[order[j-1]].name); j-- {
				order[j], order[j-1] = order[j-1], order[j]
			}
		}
		return order
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case lessUTF16(members[a].name, members[b].name):
			return -1
		case lessUTF16(members[b].name, members[a].name):
			return 1
		}
		return 0
	})
	return order
}

// lessUTF16 orders strings by their UTF-16 code units, as JCS requires. For
// ASCII (and any text without supplementary-plane characters above the
// surrogate range) this equals byte order.
func lessUTF16(a, b string) bool {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ua, ub := utf16Units(ra), utf16Units(rb)
			if ua[0] != ub[0] {
				return ua[0] < ub[0]
			}
			return ua[1] < ub[1]
		}
		a, b = a[na:], b[nb:]
	}
	return a == "" && b != ""
}

func utf16Units(r rune) [2]uint16 {
	if r >= 0x10000 {
		hi, lo := utf16.EncodeRune(r)
		return [2]uint16{uint16(hi), uint16(lo)}
	}
	return [2]uint16{uint16(r), 0}
}

const hexDigits = "0123456789abcdef"

// appendCanonicalString appends s as a JCS string: only '"', '\\' and the
// C0 controls are escaped, the five with short forms as \b \t \n \f \r and
// the rest as \u00xx with lowercase hex.
func appendCanonicalString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf = append(buf, s[start:i]...)
		switch c {
		case '"', '\\':
			buf = append(buf, '\\', c)
		case '\b':
			buf = append(buf, '\\', 'b')
		case '\t':
			buf = append(buf, '\\', 't')
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\f':
			buf = append(buf, '\\', 'f')
		case '\r':
			buf = append(buf, '\\', 'r')
		default:
			buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// Canonicalize returns the RFC 8785 (JCS) form of a strict I-JSON document
// (the reader every receipt goes through: duplicate keys, invalid UTF-8,
// lone surrogates and non-integral or unsafe numbers are refused) of at
// most MaxProjectionRecordSize bytes.
func Canonicalize(data []byte) ([]byte, error) {
	if len(data) > MaxProjectionRecordSize {
		return nil, refuse(CodeTooLarge, "", "document is %d bytes, more than the %d allowed", len(data), MaxProjectionRecordSize)
	}
	v, err := parseJSON(data, 1<<16)
	if err != nil {
		return nil, &Error{Code: CodeRecordInvalid, Reason: "not strict I-JSON", Err: err}
	}
	return appendCanonical(nil, &v), nil
}
