package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/receipts"
)

// TestVerifyReceiptSourceResultCombinations: "verify receipt" and "verify
// projection" on each of the 36 combinations of derived_trust × authorship
// × author key × custody_present, set on the interop record's first entry
// and signed again by the interop adapter key: VALID exactly where the
// draft -01 rule allows it, else source_result_invalid naming the entry
// (exit 1).
func TestVerifyReceiptSourceResultCombinations(t *testing.T) {
	dir, record, pins, _, policy := vtInteropFiles(t)
	seed := sha256.Sum256([]byte("apertomemory-emilia/v0/adapter"))
	key := ed25519.NewKeyFromSeed(seed[:])
	allowed := 0
	for i, s := range gen.SourceResults() {
		rec, err := gen.Resign(vtRead(t, record), key, func(m map[string]any) {
			s.Set(m["delivered"].([]any)[0].(map[string]any))
		})
		if err != nil {
			t.Fatal(err)
		}
		file := writeFile(t, dir, fmt.Sprintf("combination-%d.json", i), rec)
		want, wantExit := string(receipts.CodeSourceResultInvalid), 1
		if s.AllowedByDraft01() {
			want, wantExit = "VALID", 0
			allowed++
		}
		code, out, errOut := runVerifyCmd(t, "receipt", file, "--adapters", pins, "--at", "2026-07-29T17:01:00Z")
		var rep struct{ Result, Member string }
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: report: %v\n%s", s, err, out)
		}
		if code != wantExit || rep.Result != want || (want != "VALID" && !strings.HasPrefix(rep.Member, "delivered[0].")) {
			t.Errorf("verify receipt, %s: exit %d, %s at %q, want exit %d, %s\n%s", s, code, rep.Result, rep.Member, wantExit, want, errOut)
		}
		code, out, _ = runVerifyCmd(t, "projection", file, "--adapters", pins, "--policy", policy)
		if code != wantExit || vtResult(t, out) != want {
			t.Errorf("verify projection, %s: exit %d, %s, want exit %d, %s", s, code, vtResult(t, out), wantExit, want)
		}
	}
	if allowed != 8 {
		t.Errorf("the rule allows %d of 36, want 8", allowed)
	}
}

// TestCLISignProjectionPlainFiles: "sign projection" over plain files
// writes what is true of them — the plain-file source profile and frame,
// format_version 1, unverified, authorship unknown, no author key, no
// custody — which verify receipt and the log accept; it refuses to name
// ApertoMemory's profiles and refuses files that are not UTF-8.
func TestCLISignProjectionPlainFiles(t *testing.T) {
	cl := newCLILog(t, 100*time.Millisecond, 5*time.Second, nil)
	a := writeFile(t, cl.dir, "a.txt", []byte("user prefers formal emails\n"))
	b := writeFile(t, cl.dir, "b.txt", []byte("écrit en français\n"))
	code, out, errOut := runCLI(t, cl.dir, "sign", "projection", "--key", cl.adapter, a, b)
	if code != 0 {
		t.Fatalf("sign projection: exit %d\n%s", code, errOut)
	}
	r, err := receipts.ParseProjectionRecord([]byte(out))
	if err != nil {
		t.Fatalf("the record does not parse: %v\n%s", err, out)
	}
	if r.SourceProfile != receipts.SourceProfilePlain || r.SelectionContext.ContextFrameProfile != receipts.ContextFramePlain {
		t.Errorf("profiles %q, %q; want the plain-file ones", r.SourceProfile, r.SelectionContext.ContextFrameProfile)
	}
	if len(r.Delivered) != 2 {
		t.Fatalf("%d entries, want 2", len(r.Delivered))
	}
	for i, e := range r.Delivered {
		got := gen.SourceResult{DerivedTrust: e.DerivedTrust, Authorship: e.Authorship, AuthorKey: e.AuthorKeyIDB64u != nil, Custody: e.CustodyPresent}
		if want := (gen.SourceResult{DerivedTrust: "unverified", Authorship: "unknown"}); got != want || e.FormatVersion != 1 {
			t.Errorf("delivered[%d] = %s, format_version %d; want %s, 1", i, got, e.FormatVersion, want)
		}
		if !got.AllowedByDraft01() {
			t.Errorf("delivered[%d] = %s, which draft -01 refuses", i, got)
		}
	}
	p := writeFile(t, cl.dir, "p.json", []byte(out))
	if code, out, errOut := runVerifyCmd(t, "receipt", p, "--trust", cl.trust); code != 0 || !strings.Contains(out, `"VALID"`) {
		t.Errorf("verify receipt: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, cl.dir, "submit", "--log", cl.url, p); code != 0 {
		t.Errorf("submit: exit %d\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"--source-profile", receipts.SourceProfileApertoMemory},
		{"--context-frame-profile", receipts.ContextFrameApertoMemory},
	} {
		code, _, errOut := runCLI(t, cl.dir, append([]string{"sign", "projection", "--key", cl.adapter, a}, args...)...)
		if code != 2 || !strings.Contains(errOut, "not ApertoMemory objects") {
			t.Errorf("sign projection %v: exit %d, want 2\n%s", args, code, errOut)
		}
	}
	bin := writeFile(t, cl.dir, "image.bin", []byte{0x89, 'P', 'N', 'G', 0xff, 0xfe})
	if code, _, errOut := runCLI(t, cl.dir, "sign", "projection", "--key", cl.adapter, a, bin); code != 1 || !strings.Contains(errOut, "image.bin is not UTF-8") {
		t.Errorf("sign projection of a binary file: exit %d, want 1\n%s", code, errOut)
	}
}
