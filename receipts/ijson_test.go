package receipts

import (
	"strings"
	"testing"
)

func TestReadJSON(t *testing.T) {
	doc := `{ "a" : [1, true, null, "s"],"b":{"x" : -2} , "c":"\u00e9" }`
	d, err := ReadJSON([]byte(doc), 16, 0)
	if err != nil {
		t.Fatal(err)
	}
	v := d.Value()
	if v.Kind() != JSONObject || v.Len() != 3 {
		t.Fatalf("ReadJSON(%q) = %v of %d members", doc, v.Kind(), v.Len())
	}
	a, _ := v.Get("a")
	if a.Kind() != JSONArray || a.Len() != 4 || a.Elem(0).Int() != 1 || !a.Elem(1).Bool() || a.Elem(2).Kind() != JSONNull || a.Elem(3).Str() != "s" {
		t.Errorf("member a read wrong")
	}
	if name, c := v.Member(2); name != "c" || c.Str() != "é" {
		t.Errorf("Member(2) = %q, %q", name, c.Str())
	}
	for name, want := range map[string]string{"a": `[1, true, null, "s"]`, "b": `{"x" : -2}`, "c": `"\u00e9"`} {
		if got, ok := d.MemberBytes(name); !ok || string(got) != want {
			t.Errorf("MemberBytes(%q) = %q, %v, want %q", name, got, ok, want)
		}
	}
	if _, ok := d.MemberBytes("x"); ok {
		t.Errorf("MemberBytes of a nested member found it")
	}
	b, _ := v.Get("b")
	if name, problem := b.CheckMembers([]string{"x"}, nil); problem != "" {
		t.Errorf("CheckMembers(x) = %q, %q", name, problem)
	}
	if name, problem := b.CheckMembers([]string{"x", "y"}, nil); name != "y" || problem != "required member is missing" {
		t.Errorf("CheckMembers(x, y) = %q, %q, want y missing", name, problem)
	}
	if name, problem := v.CheckMembers([]string{"a"}, []string{"c"}); name != "b" || !strings.HasPrefix(problem, "unknown member") {
		t.Errorf("CheckMembers(a; c) = %q, %q, want b unknown", name, problem)
	}

	// Objects may hold more than the 64 members receipts do, up to
	// maxMembers.
	var big strings.Builder
	big.WriteString("{")
	for i := range 100 {
		if i > 0 {
			big.WriteString(",")
		}
		big.WriteString(`"m` + strings.Repeat("x", i) + `":0`)
	}
	big.WriteString("}")
	if _, err := ReadJSON([]byte(big.String()), 100, 0); err != nil {
		t.Errorf("100 members under a cap of 100: %v", err)
	}
	if _, err := ReadJSON([]byte(big.String()), 99, 0); err == nil {
		t.Errorf("100 members under a cap of 99: accepted")
	}
	for _, bad := range []string{`"\ud800"`, `{"a":1,"a":2}`, `1.5`, `9007199254740992`, `-0`, `[1] [2]`, "\"\xff\"", `"\ufffe"`, `NaN`} {
		if _, err := ReadJSON([]byte(bad), 16, 0); err == nil {
			t.Errorf("ReadJSON(%q) accepted", bad)
		}
	}
	if _, err := ReadJSON([]byte(`[0,0,0,0]`), 16, 3); err == nil {
		t.Errorf("four values under a cap of three: accepted")
	}
}
