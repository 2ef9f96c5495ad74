package log

import (
	"regexp"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

func TestGenerateLogKeyFor(t *testing.T) {
	shape := regexp.MustCompile(`^myhost\.example/memtrail/[0-9a-f]{16}$`)
	seen := map[string]bool{}
	for range 3 {
		skey, vkey, origin, err := GenerateLogKeyFor("MyHost.Example")
		if err != nil {
			t.Fatal(err)
		}
		if !shape.MatchString(origin) || seen[origin] {
			t.Fatalf("origin %q: want a fresh one of the form myhost.example/memtrail/<16 hex>", origin)
		}
		seen[origin] = true
		signer, err := note.NewSigner(skey)
		if err != nil {
			t.Fatalf("NewSigner: %v", err)
		}
		verifier, err := note.NewVerifier(vkey)
		if err != nil {
			t.Fatalf("NewVerifier: %v", err)
		}
		if got, _ := VerifierKey(skey); got != vkey || signer.Name() != origin || verifier.KeyHash() != signer.KeyHash() {
			t.Errorf("key pair does not match: VerifierKey = %q, vkey %q", got, vkey)
		}
		msg, err := note.Sign(&note.Note{Text: origin + "\n1\n"}, signer)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := note.Open(msg, note.VerifierList(verifier)); err != nil {
			t.Errorf("a note signed by the new key does not verify: %v", err)
		}
	}
	for host, want := range map[string]string{"": "localhost", "bad host+name/x": "badhostnamex", "ü": "localhost"} {
		if _, _, origin, err := GenerateLogKeyFor(host); err != nil || !regexp.MustCompile(`^`+regexp.QuoteMeta(want)+`/memtrail/[0-9a-f]{16}$`).MatchString(origin) {
			t.Errorf("GenerateLogKeyFor(%q) origin = %q, %v; want %s/memtrail/…", host, origin, err, want)
		}
	}
}
