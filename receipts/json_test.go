package receipts

import (
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

func TestParseJSONRefusals(t *testing.T) {
	bad := []struct{ name, in string }{
		{"empty", ``},
		{"duplicate key", `{"a":1,"a":2}`},
		{"duplicate key nested", `{"x":{"b":true,"b":false}}`},
		{"duplicate key after escape", `{"a":1,"\u0061":2}`},
		{"duplicate in large object", `{` + manyMembers(20) + `,"m3":0}`},
		{"fraction", `{"a":1.0}`},
		{"exponent", `{"a":1e2}`},
		{"exponent capital", `{"a":1E2}`},
		{"huge exponent", `{"a":1e1000}`},
		{"negative zero", `{"a":-0}`},
		{"beyond 2^53", `{"a":9007199254740992}`},
		{"far beyond", `{"a":123456789012345678901234567890}`},
		{"below -(2^53-1)", `{"a":-9007199254740992}`},
		{"NaN", `{"a":NaN}`},
		{"Infinity", `{"a":Infinity}`},
		{"-Infinity", `{"a":-Infinity}`},
		{"leading zero", `{"a":01}`},
		{"plus sign", `{"a":+1}`},
		{"lone high surrogate", `{"a":"\ud800"}`},
		{"lone low surrogate", `{"a":"\udc00"}`},
		{"reversed surrogates", `{"a":"\udc00\ud800"}`},
		{"high surrogate then text", `{"a":"\ud83dx"}`},
		{"invalid UTF-8", "{\"a\":\"\xff\"}"},
		{"UTF-8 surrogate", "{\"a\":\"\xed\xa0\x80\"}"},
		{"overlong UTF-8", "{\"a\":\"\xc0\xaf\"}"},
		{"noncharacter", "{\"a\":\"\xef\xbf\xbf\"}"},
		{"noncharacter escaped", `{"a":"\ufdd0"}`},
		{"raw control", "{\"a\":\"\x01\"}"},
		{"raw newline", "{\"a\":\"a\nb\"}"},
		{"bad escape", `{"a":"\x41"}`},
		{"short unicode escape", `{"a":"\u12"}`},
		{"trailing comma object", `{"a":1,}`},
		{"trailing comma array", `[1,]`},
		{"trailing data", `{} {}`},
		{"single quotes", `{'a':1}`},
		{"unquoted key", `{a:1}`},
		{"BOM", "\xef\xbb\xbf{}"},
		{"comment", `{"a":1 /* x */}`},
		{"unterminated", `{"a":"`},
		{"too deep", strings.Repeat("[", 40) + strings.Repeat("]", 40)},
		{"too deep objects", strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40)},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if v, err := parseJSON([]byte(tc.in), 1000); err == nil {
				t.Errorf("parseJSON(%q) = %v, want an error", tc.in, v)
			}
		})
	}
}

func manyMembers(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"m` + string(rune('0'+i/10)) + string(rune('0'+i%10)) + `":0`)
	}
	return strings.ReplaceAll(b.String(), `"m0`, `"m`)
}

func TestParseJSONMemberCap(t *testing.T) {
	in := "[" + strings.Repeat("1,", 10) + "1]"
	if _, err := parseJSON([]byte(in), 10); err == nil {
		t.Errorf("array of 11 with cap 10 accepted")
	}
	if _, err := parseJSON([]byte(in), 11); err != nil {
		t.Errorf("array of 11 with cap 11: %v", err)
	}
}

func TestParseJSONAccepts(t *testing.T) {
	good := []string{
		`{}`, `[]`, ` {"a" : [1, -2, 0, 9007199254740991, -9007199254740991] } `,
		`{"s":"\u00e9\ud83d\ude00\"\\\/\b\f\n\r\t"}`, `{"t":true,"f":false,"n":null}`,
		"{\"utf8\":\"é😀\u007f\"}", `"just a string"`, `42`,
	}
	for _, in := range good {
		if _, err := parseJSON([]byte(in), 1000); err != nil {
			t.Errorf("parseJSON(%q) = %v, want success", in, err)
		}
	}
}

// canonicalViaReference canonicalizes with github.com/gowebpki/jcs.
func canonicalViaReference(t testing.TB, in []byte) []byte {
	out, err := jcs.Transform(in)
	if err != nil {
		t.Fatalf("jcs.Transform(%q): %v", in, err)
	}
	return out
}

func canonicalize(t testing.TB, in []byte) []byte {
	v, err := parseJSON(in, 1<<16)
	if err != nil {
		t.Fatalf("parseJSON(%q): %v", in, err)
	}
	return appendCanonical(nil, &v)
}

func TestCanonicalMatchesReference(t *testing.T) {
	inputs := []string{
		`{"b":1,"a":{"d":[3,2,{"z":null,"y":true}],"c":"x"}}`,
		`{"zk😀":"1","zk\ufffd":"2","€":3,"\r":4,"\n":5,"1":6,"é":7}`,
		`{"ctl":"\u0001\u001f\u007f\b\t\n\f\r\"\\/"}`,
		`{"big":9007199254740991,"neg":-9007199254740991,"zero":0}`,
		`["\u2028\u2029", "</script>", ""]`,
	}
	for _, in := range inputs {
		got := canonicalize(t, []byte(in))
		want := canonicalViaReference(t, []byte(in))
		if string(got) != string(want) {
			t.Errorf("canonical(%s) = %s, want %s", in, got, want)
		}
	}
}
