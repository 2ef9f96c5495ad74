package tlogfmt

import (
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

func TestSignatureNames(t *testing.T) {
	if got := SignatureNames(nil); got != "no key" {
		t.Errorf("SignatureNames(nil) = %q", got)
	}
	sigs := []note.Signature{{Name: "log.example/a", Hash: 0x0102abcd}, {Name: "evil\u202e\n", Hash: 1}}
	if got, want := SignatureNames(sigs), `log.example/a+0102abcd, "evil\u202e\n"+00000001`; got != want {
		t.Errorf("SignatureNames = %q, want %q", got, want)
	}
	var many []note.Signature
	for range 11 {
		many = append(many, note.Signature{Name: "w", Hash: 7})
	}
	if got := SignatureNames(many); strings.Count(got, "w+00000007") != 8 || !strings.HasSuffix(got, "and 3 more") {
		t.Errorf("SignatureNames of 11 = %q", got)
	}
}
