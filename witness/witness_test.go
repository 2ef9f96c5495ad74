package witness_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/promtest"
	"github.com/memtrail/memtrail/witness"
	"github.com/memtrail/memtrail/witness/internal/witnesstest"
	"golang.org/x/mod/sumdb/note"
)

const testOrigin = "example.com/log"

// TestAddCheckpoint runs one request against a witness that holds a given
// state, and checks the status, the body, and the state afterwards.
func TestAddCheckpoint(t *testing.T) {
	l := newSimLog(t, testOrigin)
	l.GrowTo(100)
	fork := l.Fork(5, "fork") // same key, different leaves after the 5th
	fork.GrowTo(100)
	stranger := newSimLog(t, "example.com/other") // not a known log
	stranger.GrowTo(10)
	impostor := newSimLog(t, testOrigin) // the log's origin and name, another key
	impostor.GrowTo(100)
	_, rotatedVKey, rotatedSigner := newKey(t, witnesstest.KeyName(testOrigin))

	flip := func(h []byte) []byte { h = bytes.Clone(h); h[0] ^= 1; return h }
	hashLine := base64.StdEncoding.EncodeToString(make([]byte, 32)) + "\n"
	text := func(size uint64, root []byte, ext string) string {
		return fmt.Sprintf("%s\n%d\n%s\n%s", testOrigin, size, base64.StdEncoding.EncodeToString(root), ext)
	}
	signed := func(text string) []byte { return witnesstest.SignText(text, l.Signer) }

	tests := []struct {
		name        string
		cosigned    uint64 // the witness holds l's checkpoint of this size; 0 means nothing
		cosignEmpty bool   // the witness holds l's checkpoint of size 0
		body        []byte
		code        int
		size        string // body of a 409
		newSize     int64  // size served after a 200
	}{
		// Success.
		{name: "first checkpoint", body: l.Request(0, 10), code: 200, newSize: 10},
		{name: "first checkpoint of the empty tree", body: l.Request(0, 0), code: 200, newSize: 0},
		{name: "extension of the empty tree", cosignEmpty: true, body: l.Request(0, 7), code: 200, newSize: 7},
		{name: "empty tree again", cosignEmpty: true, body: l.Request(0, 0), code: 200, newSize: 0},
		{name: "consistent update", cosigned: 10, body: l.Request(10, 20), code: 200, newSize: 20},
		{name: "update from a power of two", cosigned: 16, body: l.Request(16, 100), code: 200, newSize: 100},
		{name: "update by one leaf", cosigned: 99, body: l.Request(99, 100), code: 200, newSize: 100},
		{name: "same checkpoint again", cosigned: 10, body: l.Request(10, 10), code: 200, newSize: 10},
		{name: "extension lines", cosigned: 10, body: witnesstest.RequestBody(10, l.Proof(10, 20), signed(text(20, l.Root(20), "ext one\next two\n"))), code: 200, newSize: 20},
		{name: "extra signatures by unknown keys", cosigned: 10,
			body: witnesstest.RequestBody(10, l.Proof(10, 20), witnesstest.SignText(l.Text(20), l.Signer, stranger.Signer)), code: 200, newSize: 20},
		{name: "signed by the second key of a rotation", cosigned: 10,
			body: witnesstest.RequestBody(10, l.Proof(10, 20), witnesstest.SignText(l.Text(20), rotatedSigner)), code: 200, newSize: 20},

		// A fork is a fork only once it diverges from what was cosigned.
		{name: "fork extending the shared prefix", cosigned: 3, body: fork.Request(3, 20), code: 200, newSize: 20},

		// 404, 403.
		{name: "unknown origin", body: stranger.Request(0, 10), code: 404},
		{name: "unknown origin with a known key", body: witnesstest.RequestBody(0, nil, witnesstest.SignText(strings.Replace(l.Text(10), testOrigin, "example.com/other", 1), l.Signer)), code: 404},
		{name: "signed by another key of the same name", cosigned: 10, body: impostor.Request(0, 10), code: 403},
		{name: "signed by unknown keys only", cosigned: 10, body: witnesstest.RequestBody(10, l.Proof(10, 20), witnesstest.SignText(l.Text(20), stranger.Signer)), code: 403},
		{name: "checkpoint altered after signing", cosigned: 10,
			body: bytes.Replace(l.Request(10, 20), []byte("\n20\n"), []byte("\n21\n"), 1), code: 403},
		{name: "log signature altered", cosigned: 10, body: alterSignature(l.Request(10, 20)), code: 403},

		// 400.
		{name: "old larger than size", cosigned: 20, body: witnesstest.RequestBody(20, nil, l.Checkpoint(10)), code: 400},
		{name: "old larger than size, nothing cosigned", body: witnesstest.RequestBody(5, nil, l.Checkpoint(3)), code: 400},
		{name: "empty body", body: nil, code: 400},
		{name: "old line only", body: []byte("old 0\n"), code: 400},
		{name: "no newline", body: []byte("old 0"), code: 400},
		{name: "no blank line", body: append([]byte("old 0\n"), l.Checkpoint(10)...), code: 400},
		{name: "nothing after the blank line", body: []byte("old 0\n\n"), code: 400},
		{name: "old with a leading zero", cosigned: 10, body: bytes.Replace(l.Request(10, 20), []byte("old 10"), []byte("old 010"), 1), code: 400},
		{name: "old with a plus sign", cosigned: 10, body: bytes.Replace(l.Request(10, 20), []byte("old 10"), []byte("old +10"), 1), code: 400},
		{name: "negative old", body: bytes.Replace(l.Request(0, 10), []byte("old 0"), []byte("old -0"), 1), code: 400},
		{name: "old 2^63", body: bytes.Replace(l.Request(0, 10), []byte("old 0"), []byte("old 9223372036854775808"), 1), code: 400},
		{name: "old in hex", body: bytes.Replace(l.Request(0, 10), []byte("old 0"), []byte("old 0x0"), 1), code: 400},
		{name: "two spaces after old", body: bytes.Replace(l.Request(0, 10), []byte("old 0"), []byte("old  0"), 1), code: 400},
		{name: "trailing space after old", body: bytes.Replace(l.Request(0, 10), []byte("old 0"), []byte("old 0 "), 1), code: 400},
		{name: "capitalized old", body: bytes.Replace(l.Request(0, 10), []byte("old 0"), []byte("Old 0"), 1), code: 400},
		{name: "CRLF line ending", body: bytes.Replace(l.Request(0, 10), []byte("old 0\n"), []byte("old 0\r\n"), 1), code: 400},
		{name: "proof line not base64", cosigned: 10, body: []byte("old 10\nnot base64!\n\n" + string(l.Checkpoint(20))), code: 400},
		{name: "proof line of 31 bytes", cosigned: 10,
			body: []byte("old 10\n" + base64.StdEncoding.EncodeToString(make([]byte, 31)) + "\n\n" + string(l.Checkpoint(20))), code: 400},
		{name: "proof line without padding", cosigned: 10,
			body: []byte("old 10\n" + base64.RawStdEncoding.EncodeToString(make([]byte, 32)) + "\n\n" + string(l.Checkpoint(20))), code: 400},
		{name: "proof line in non-canonical base64", cosigned: 10,
			body: []byte("old 10\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB=\n\n" + string(l.Checkpoint(20))), code: 400},
		{name: "proof line in URL base64", cosigned: 10,
			body: []byte("old 10\n" + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xff}, 32)) + "\n\n" + string(l.Checkpoint(20))), code: 400},
		{name: "64 proof lines", cosigned: 10, body: []byte("old 10\n" + strings.Repeat(hashLine, 64) + "\n" + string(l.Checkpoint(20))), code: 400},
		{name: "note without signatures", body: []byte("old 0\n\n" + l.Text(10)), code: 400},
		{name: "note with a control character", body: witnesstest.RequestBody(0, nil, bytes.Replace(l.Checkpoint(10), []byte("\n10\n"), []byte("\n1\x000\n"), 1)), code: 400},
		{name: "signed size with a leading zero", body: witnesstest.RequestBody(0, nil, signed(strings.Replace(l.Text(10), "\n10\n", "\n010\n", 1))), code: 400},
		{name: "signed negative size", body: witnesstest.RequestBody(0, nil, signed(strings.Replace(l.Text(10), "\n10\n", "\n-10\n", 1))), code: 400},
		{name: "signed root of 31 bytes", body: witnesstest.RequestBody(0, nil, signed(text(10, make([]byte, 31), ""))), code: 400},
		{name: "signed root in non-canonical base64", body: witnesstest.RequestBody(0, nil,
			signed(testOrigin+"\n10\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB=\n")), code: 400},
		{name: "signed checkpoint without root", body: witnesstest.RequestBody(0, nil, signed(testOrigin+"\n10\n")), code: 400},
		{name: "signed empty extension line", body: witnesstest.RequestBody(0, nil, signedRaw(l.Signer, l.Text(10)+"\nextension\n")), code: 400},
		{name: "size 2^63", body: witnesstest.RequestBody(0, nil, signed(strings.Replace(l.Text(10), "\n10\n", "\n9223372036854775808\n", 1))), code: 400},

		// 409.
		{name: "stale old", cosigned: 20, body: l.Request(10, 30), code: 409, size: "20\n"},
		{name: "old 0 but a checkpoint is cosigned", cosigned: 20, body: l.Request(0, 30), code: 409, size: "20\n"},
		{name: "old ahead of the witness", cosigned: 10, body: l.Request(15, 30), code: 409, size: "10\n"},
		{name: "old ahead of an empty witness", body: l.Request(15, 30), code: 409, size: "0\n"},
		{name: "fork from a stale size", cosigned: 20, body: fork.Request(10, 30), code: 409, size: "20\n"},

		// 422.
		{name: "bad proof", cosigned: 10, body: witnesstest.RequestBody(10, flipFirst(l.Proof(10, 20)), l.Checkpoint(20)), code: 422},
		{name: "proof between other sizes", cosigned: 10, body: witnesstest.RequestBody(10, l.Proof(11, 20), l.Checkpoint(20)), code: 422},
		{name: "missing proof", cosigned: 10, body: witnesstest.RequestBody(10, nil, l.Checkpoint(20)), code: 422},
		{name: "proof with an extra line", cosigned: 10, body: witnesstest.RequestBody(10, append(l.Proof(10, 20), make([]byte, 32)), l.Checkpoint(20)), code: 422},
		{name: "truncated proof", cosigned: 10, body: witnesstest.RequestBody(10, l.Proof(10, 20)[1:], l.Checkpoint(20)), code: 422},
		{name: "non-empty proof with old 0", body: witnesstest.RequestBody(0, l.Proof(10, 20), l.Checkpoint(20)), code: 422},
		{name: "non-empty proof with old 0 on an empty tree", cosigned: 0, body: witnesstest.RequestBody(0, [][]byte{l.Root(1)}, l.Checkpoint(1)), code: 422},
		{name: "equal sizes, different roots", cosigned: 10, body: fork.Request(10, 10), code: 422},
		{name: "equal sizes, same root, non-empty proof", cosigned: 10, body: witnesstest.RequestBody(10, [][]byte{l.Root(10)}, l.Checkpoint(10)), code: 422},
		{name: "fork with a valid proof in its own tree", cosigned: 10, body: fork.Request(10, 20), code: 422},
		{name: "size 0 when the empty tree is cosigned, with a non-empty root", cosignEmpty: true,
			body: witnesstest.RequestBody(0, nil, signed(text(0, flip(l.Root(0)), ""))), code: 422},
		{name: "size 0 with a non-empty root", body: witnesstest.RequestBody(0, nil, signed(text(0, flip(l.Root(0)), ""))), code: 422},
		{name: "right proof, wrong new root", cosigned: 10, body: witnesstest.RequestBody(10, l.Proof(10, 20), signed(text(20, flip(l.Root(20)), ""))), code: 422},

		// 413.
		{name: "body over the cap", body: append(l.Request(0, 10), bytes.Repeat([]byte("x"), witness.MaxRequestSize)...), code: 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, l.WitnessLog(), witness.Log{Origin: testOrigin, VKey: rotatedVKey})
			if tt.cosigned > 0 {
				h.mustAdd(l, 0, tt.cosigned)
			}
			if tt.cosignEmpty {
				h.mustAdd(l, 0, 0)
			}
			before := h.get(checkpointPath(testOrigin))
			start := time.Now()
			r := h.post(tt.body)
			if r.code != tt.code {
				t.Fatalf("add-checkpoint = %d %q, want %d", r.code, r.body, tt.code)
			}
			after := h.get(checkpointPath(testOrigin))
			switch tt.code {
			case 200:
				cp := tt.body[bytes.Index(tt.body, []byte("\n\n"))+2:]
				checkCosignature(t, h.cosigV, cp, r.body, start)
				if got := h.storedSize(testOrigin); got != tt.newSize {
					t.Fatalf("served size after success = %d, want %d", got, tt.newSize)
				}
				// The served note is the checkpoint text, the log's valid
				// signatures and this very cosignature.
				text := string(cp[:bytes.Index(cp, []byte("\n\n"))+1])
				if !bytes.HasPrefix(after.body, []byte(text+"\n")) || !bytes.HasSuffix(after.body, r.body) {
					t.Fatalf("served checkpoint %q does not carry the text and the cosignature %q", after.body, r.body)
				}
				if bytes.Contains(after.body, []byte("— "+stranger.Signer.Name()+" ")) {
					t.Fatalf("served checkpoint %q carries a signature by an unknown key", after.body)
				}
			case 409:
				if r.contentType != "text/x.tlog.size" {
					t.Errorf("409 Content-Type = %q, want text/x.tlog.size", r.contentType)
				}
				if string(r.body) != tt.size {
					t.Errorf("409 body = %q, want %q", r.body, tt.size)
				}
				fallthrough
			default:
				if after.code != before.code || !bytes.Equal(after.body, before.body) {
					t.Fatalf("state changed after a refused request: %d %q, was %d %q", after.code, after.body, before.code, before.body)
				}
				if bytes.Contains(r.body, []byte("— witness.example.com")) {
					t.Fatalf("refusal body %q carries a cosignature", r.body)
				}
			}
		})
	}
}

func newKey(tb testing.TB, name string) (skey, vkey string, s note.Signer) {
	tb.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		tb.Fatal(err)
	}
	s, err = note.NewSigner(skey)
	if err != nil {
		tb.Fatal(err)
	}
	return skey, vkey, s
}

func flipFirst(p [][]byte) [][]byte {
	q := make([][]byte, len(p))
	for i := range p {
		q[i] = bytes.Clone(p[i])
	}
	q[0][5] ^= 0x40
	return q
}

// alterSignature changes one byte of the last signature of a request.
func alterSignature(body []byte) []byte {
	body = bytes.Clone(body)
	i := bytes.LastIndex(body, []byte(" ")) + 10
	if body[i] == 'A' {
		body[i] = 'B'
	} else {
		body[i] = 'A'
	}
	return body
}

// signedRaw signs text that note.Sign would refuse, such as text with an
// empty line, by computing the signature line by hand.
func signedRaw(s note.Signer, text string) []byte {
	sig, err := s.Sign([]byte(text))
	if err != nil {
		panic(err)
	}
	raw := append([]byte{byte(s.KeyHash() >> 24), byte(s.KeyHash() >> 16), byte(s.KeyHash() >> 8), byte(s.KeyHash())}, sig...)
	return []byte(text + "\n— " + s.Name() + " " + base64.StdEncoding.EncodeToString(raw) + "\n")
}

func TestMethodsAndPaths(t *testing.T) {
	l := newSimLog(t, testOrigin)
	l.GrowTo(10)
	h := newHarness(t, l.WitnessLog())
	for _, tt := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/add-checkpoint", 405},
		{"PUT", "/add-checkpoint", 405},
		{"POST", "/checkpoint/" + testOrigin, 405},
		{"GET", "/", 404},
		{"GET", "/checkpoint/", 404},
		{"GET", checkpointPath(testOrigin), 404}, // known, nothing cosigned yet
		{"GET", checkpointPath("example.com/unknown"), 404},
		{"GET", "/metrics", 200},
	} {
		req, _ := http.NewRequest(tt.method, h.srv.URL+tt.path, nil)
		resp, err := h.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.code {
			t.Errorf("%s %s = %d, want %d", tt.method, tt.path, resp.StatusCode, tt.code)
		}
	}

	h.mustAdd(l, 0, 10)
	// Both the escaped and the literal form of an origin with a slash work.
	for _, p := range []string{checkpointPath(testOrigin), "/checkpoint/" + testOrigin} {
		r := h.get(p)
		if r.code != 200 || !bytes.HasPrefix(r.body, []byte(l.Text(10))) {
			t.Errorf("GET %s = %d %q, want the checkpoint of size 10", p, r.code, r.body)
		}
		if r.contentType != "text/plain; charset=utf-8" {
			t.Errorf("GET %s Content-Type = %q", p, r.contentType)
		}
	}
}

func TestOddOrigins(t *testing.T) {
	for _, origin := range []string{"example.com/a b", "example.com/a+b", "example.com/../x", "日本語 ログ", "a?b#c%2F"} {
		l := newSimLog(t, origin)
		l.GrowTo(4)
		h := newHarness(t, l.WitnessLog())
		h.mustAdd(l, 0, 4)
		if got := h.storedSize(origin); got != 4 {
			t.Errorf("origin %q: served size = %d, want 4", origin, got)
		}
	}
}

// TestSequence drives a witness the way a log does: start with old 0, learn
// the size from the 409, then send each new checkpoint with its proof.
func TestSequence(t *testing.T) {
	l := newSimLog(t, testOrigin)
	l.GrowTo(3000)
	h := newHarness(t, l.WitnessLog())
	h.mustAdd(l, 0, 1)
	var known uint64 // what the client believes
	for size := uint64(2); size <= 3000; size += size/7 + 1 {
		r := h.post(l.Request(known, size))
		if r.code == 409 {
			fmt.Sscan(string(r.body), &known)
			r = h.post(l.Request(known, size))
		}
		if r.code != 200 {
			t.Fatalf("size %d from %d: %d %q", size, known, r.code, r.body)
		}
		checkCosignature(t, h.cosigV, l.Checkpoint(size), r.body, time.Now())
		known = size
	}
	// Sizes only go up: every earlier size is now stale.
	for _, old := range []uint64{0, 1, known - 1} {
		if r := h.post(l.Request(old, known)); r.code != 409 || string(r.body) != fmt.Sprintf("%d\n", known) {
			t.Fatalf("replay from %d = %d %q, want 409 %d", old, r.code, r.body, known)
		}
	}
}

func TestSetLogs(t *testing.T) {
	a, b := newSimLog(t, "example.com/a"), newSimLog(t, "example.com/b")
	a.GrowTo(20)
	b.GrowTo(20)
	h := newHarness(t, a.WitnessLog())
	h.mustAdd(a, 0, 10)
	if r := h.post(b.Request(0, 10)); r.code != 404 {
		t.Fatalf("unknown log = %d, want 404", r.code)
	}
	if err := h.w.SetLogs([]witness.Log{b.WitnessLog()}); err != nil {
		t.Fatal(err)
	}
	h.mustAdd(b, 0, 10)
	if r := h.post(a.Request(10, 20)); r.code != 404 {
		t.Fatalf("removed log = %d, want 404", r.code)
	}
	if r := h.get(checkpointPath(a.Origin)); r.code != 404 {
		t.Fatalf("GET of a removed log = %d, want 404", r.code)
	}
	// A refused set leaves the current one.
	bad := []witness.Log{a.WitnessLog(), {Origin: "example.com/c", VKey: "not a key"}}
	if err := h.w.SetLogs(bad); err == nil {
		t.Fatal("SetLogs with an invalid key succeeded")
	}
	if err := h.w.SetLogs([]witness.Log{{Origin: "", VKey: a.VKey}}); err == nil {
		t.Fatal("SetLogs with an empty origin succeeded")
	}
	if got := h.w.Logs(); len(got) != 1 || got[0] != b.WitnessLog() {
		t.Fatalf("Logs after refused SetLogs = %v, want just b", got)
	}
	// Adding a log back continues from its state: it is not trusted anew.
	if err := h.w.SetLogs([]witness.Log{a.WitnessLog(), b.WitnessLog()}); err != nil {
		t.Fatal(err)
	}
	if r := h.post(a.Request(0, 20)); r.code != 409 || string(r.body) != "10\n" {
		t.Fatalf("re-added log from 0 = %d %q, want 409 10", r.code, r.body)
	}
	h.mustAdd(a, 10, 20)
}

func TestStoreFaults(t *testing.T) {
	l := newSimLog(t, testOrigin)
	l.GrowTo(40)
	h := newHarness(t, l.WitnessLog())
	h.mustAdd(l, 0, 10)

	// A failed write issues no cosignature, and the state is unchanged.
	h.store.setFaults(nil, errors.New("disk on fire"), nil)
	r := h.post(l.Request(10, 20))
	if r.code != 500 || bytes.Contains(r.body, []byte("—")) || bytes.Contains(r.body, []byte("fire")) {
		t.Fatalf("add-checkpoint with a failing store = %d %q, want 500 without details", r.code, r.body)
	}
	h.store.setFaults(nil, nil, nil)
	h.mustAdd(l, 10, 20)

	// A write whose outcome looks unknown: the witness reloads the state
	// before answering again, and finds the write landed.
	h.store.setFaults(nil, nil, errors.New("lost the acknowledgment"))
	if r := h.post(l.Request(20, 30)); r.code != 500 {
		t.Fatalf("add-checkpoint with an unknown outcome = %d, want 500", r.code)
	}
	h.store.setFaults(errors.New("still broken"), nil, nil)
	if r := h.post(l.Request(20, 30)); r.code != 500 {
		t.Fatalf("add-checkpoint while the store can't be read = %d, want 500", r.code)
	}
	if r := h.get(checkpointPath(testOrigin)); r.code != 500 {
		t.Fatalf("GET while the store can't be read = %d, want 500", r.code)
	}
	h.store.setFaults(nil, nil, nil)
	if r := h.post(l.Request(20, 35)); r.code != 409 || string(r.body) != "30\n" {
		t.Fatalf("add-checkpoint after recovery = %d %q, want 409 30", r.code, r.body)
	}
	h.mustAdd(l, 30, 35)

	// A store changed behind the witness's back: the compare-and-swap
	// fails, nothing is cosigned, and the next request sees the new state.
	other := h.store.reopen()
	stored, err := other.Load(context.Background(), testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.CompareAndSwap(context.Background(), testOrigin, stored, []byte(l.Text(36)+"\n— x AAAA\n")); err != nil {
		t.Fatal(err)
	}
	l.GrowTo(40)
	if r := h.post(l.Request(35, 40)); r.code != 500 {
		t.Fatalf("add-checkpoint over a changed store = %d %q, want 500", r.code, r.body)
	}
	if r := h.post(l.Request(35, 40)); r.code != 409 || string(r.body) != "36\n" {
		t.Fatalf("add-checkpoint after the store changed = %d %q, want 409 36", r.code, r.body)
	}

	// A corrupt stored value is refused, not trusted.
	stored, _ = other.Load(context.Background(), testOrigin)
	if err := other.CompareAndSwap(context.Background(), testOrigin, stored, []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	if r := h.post(l.Request(36, 40)); r.code != 500 {
		t.Fatalf("add-checkpoint over a corrupt store = %d %q, want 500", r.code, r.body)
	}
	if _, err := witness.New(context.Background(), witness.Config{Key: mustKey(t), Store: other, Logs: []witness.Log{l.WitnessLog()}, Logger: discardLogger()}); err == nil {
		t.Fatal("New over a corrupt store succeeded")
	}
}

func mustKey(tb testing.TB) string {
	skey, _, err := witness.GenerateKey("witness.example.com/w1")
	if err != nil {
		tb.Fatal(err)
	}
	return skey
}

// TestRestart checks that a new witness over the same store continues from
// the stored state.
func TestRestart(t *testing.T) {
	l := newSimLog(t, testOrigin)
	l.GrowTo(30)
	h := newHarness(t, l.WitnessLog())
	h.mustAdd(l, 0, 10)
	h.mustAdd(l, 10, 20)
	h2 := newHarnessWithStore(t, h.store.reopen(), l.WitnessLog())
	if r := h2.post(l.Request(0, 30)); r.code != 409 || string(r.body) != "20\n" {
		t.Fatalf("after restart, old 0 = %d %q, want 409 20", r.code, r.body)
	}
	if got := h2.storedSize(testOrigin); got != 20 {
		t.Fatalf("after restart, served size = %d, want 20", got)
	}
	h2.mustAdd(l, 20, 30)
}

func TestMetrics(t *testing.T) {
	l := newSimLog(t, `example.com/"quoted"\log`)
	l.GrowTo(30)
	h := newHarness(t, l.WitnessLog())
	h.mustAdd(l, 0, 10)
	h.mustAdd(l, 10, 20)
	h.post(l.Request(0, 30))                                   // 409
	h.post(witnesstest.RequestBody(10, nil, l.Checkpoint(5)))  // 400
	h.post(witnesstest.RequestBody(20, nil, l.Checkpoint(30))) // 422
	h.get(checkpointPath(l.Origin))
	r := h.get("/metrics")
	if r.code != 200 || !strings.HasPrefix(r.contentType, "text/plain; version=0.0.4") {
		t.Fatalf("GET /metrics = %d %q", r.code, r.contentType)
	}
	for _, want := range []string{
		`memtrail_witness_http_requests_total{code="200",endpoint="add-checkpoint"} 2`,
		`memtrail_witness_http_requests_total{code="409",endpoint="add-checkpoint"} 1`,
		`memtrail_witness_http_requests_total{code="400",endpoint="add-checkpoint"} 1`,
		`memtrail_witness_http_requests_total{code="422",endpoint="add-checkpoint"} 1`,
		`memtrail_witness_http_requests_total{code="200",endpoint="checkpoint"} 1`,
		`memtrail_witness_add_checkpoint_duration_seconds_count 5`,
		`memtrail_witness_add_checkpoint_duration_seconds_bucket{le="+Inf"} 5`,
		`memtrail_witness_cosignatures_total{origin="example.com/\"quoted\"\\log"} 2`,
		`memtrail_witness_inconsistent_checkpoints_total{origin="example.com/\"quoted\"\\log"} 1`,
		`memtrail_witness_checkpoint_size{origin="example.com/\"quoted\"\\log"} 20`,
		`memtrail_witness_known_logs 1`,
		`memtrail_witness_store_errors_total 0`,
		"# TYPE memtrail_witness_checkpoint_size gauge",
		"# TYPE memtrail_build_info gauge",
		"# TYPE go_goroutines gauge",
	} {
		if !strings.Contains(string(r.body), want+"\n") {
			t.Errorf("metrics lack %q; got:\n%s", want, r.body)
		}
	}
	promtest.Check(t, r.body)
}

// TestForbiddenNamesKeys: a 403 names the key the witness knows the origin
// by and the keys the checkpoint is signed by.
func TestForbiddenNamesKeys(t *testing.T) {
	l := newSimLog(t, testOrigin)
	l.GrowTo(10)
	impostor := newSimLog(t, testOrigin)
	impostor.GrowTo(10)
	h := newHarness(t, l.WitnessLog())
	r := h.post(impostor.Request(0, 10))
	want := []string{
		fmt.Sprintf("knows this origin by the key %s+%08x", l.Signer.Name(), l.Signer.KeyHash()),
		fmt.Sprintf("signed by %s+%08x", impostor.Signer.Name(), impostor.Signer.KeyHash()),
	}
	for _, w := range want {
		if r.code != 403 || !strings.Contains(string(r.body), w) {
			t.Errorf("add-checkpoint = %d %q; want 403 saying %q", r.code, r.body, w)
		}
	}
	r = h.post(alterSignature(l.Request(0, 10)))
	if w := fmt.Sprintf("signature by %s+%08x does not verify", l.Signer.Name(), l.Signer.KeyHash()); r.code != 403 || !strings.Contains(string(r.body), w) {
		t.Errorf("add-checkpoint with an altered signature = %d %q; want 403 saying %q", r.code, r.body, w)
	}
}
