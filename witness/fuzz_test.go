package witness_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memtrail/memtrail/witness"
	"github.com/memtrail/memtrail/witness/internal/witnesstest"
	"golang.org/x/mod/sumdb/note"
)

// fuzzSeeds are add-checkpoint bodies from a simulated log: a chain of
// valid requests, and the refusals of TestAddCheckpoint's kinds.
func fuzzSeeds(tb testing.TB) (*witnesstest.Log, [][]byte) {
	l := newSimLog(tb, testOrigin)
	l.GrowTo(300)
	fork := l.Fork(3, "fork")
	fork.GrowTo(300)
	seeds := [][]byte{
		l.Request(0, 1), l.Request(1, 2), l.Request(2, 5), l.Request(5, 64), l.Request(64, 300),
		l.Request(0, 0), l.Request(300, 300), fork.Request(64, 300), fork.Request(5, 5),
		witnesstest.RequestBody(0, l.Proof(5, 64), l.Checkpoint(64)),
		witnesstest.RequestBody(0, nil, witnesstest.SignText(l.Text(10)+"ext\n", l.Signer)),
		[]byte("old 0\n\n"), []byte("old 01\n\n" + l.Text(1)), []byte(""),
	}
	return l, seeds
}

// FuzzAddCheckpoint feeds arbitrary bodies to a witness that holds a
// chain of checkpoints. It must never fail internally, never panic, and
// only cosign a checkpoint signed by the log, with a valid cosignature.
func FuzzAddCheckpoint(f *testing.F) {
	l, seeds := fuzzSeeds(f)
	for _, s := range seeds {
		f.Add(s)
	}
	h := newHarness(f, l.WitnessLog())
	logV, err := note.NewVerifier(l.VKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		line, err := h.w.AddCheckpoint(context.Background(), body)
		if code := witness.StatusCode(err); code == http.StatusInternalServerError {
			t.Fatalf("AddCheckpoint(%q) = %v, an internal error", body, err)
		}
		if err != nil {
			if line != nil {
				t.Fatalf("AddCheckpoint returned a cosignature with error %v", err)
			}
			return
		}
		cp := body[bytes.Index(body, []byte("\n\n"))+2:]
		if _, err := note.Open(cp, note.VerifierList(logV)); err != nil {
			t.Fatalf("cosigned a checkpoint the log did not sign: %q", body)
		}
		checkCosignature(t, h.cosigV, cp, line, time.Now())
	})
}

// FuzzParseRequest checks that the request parser reads exactly one
// encoding of each request: what parses encodes back to the same bytes.
func FuzzParseRequest(f *testing.F) {
	_, seeds := fuzzSeeds(f)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		again, err := witness.ReformatAddCheckpoint(body)
		if err != nil {
			if !errors.Is(err, witness.ErrMalformed) && !errors.Is(err, witness.ErrTooLarge) {
				t.Fatalf("parse error %v is neither ErrMalformed nor ErrTooLarge", err)
			}
			return
		}
		if !bytes.Equal(again, body) {
			t.Fatalf("request %q re-encodes as %q", body, again)
		}
	})
}

// FuzzParseCheckpoint checks the same of checkpoint text.
func FuzzParseCheckpoint(f *testing.F) {
	l, _ := fuzzSeeds(f)
	for _, s := range []string{l.Text(0), l.Text(1), l.Text(300), l.Text(7) + "ext 1\next 2\n", "o\n0\n\n", "o\n1\nAAAA\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		again, ok := witness.ReformatCheckpoint(text)
		if ok && again != text {
			t.Fatalf("checkpoint %q re-encodes as %q", text, again)
		}
	})
}

// FuzzParseLogs checks that any list ParseLogs accepts survives FormatLogs.
func FuzzParseLogs(f *testing.F) {
	for _, s := range []string{
		exampleLogs,
		"logs/v0\n",
		"# comment\n\nlogs/v0\nvkey " + sumdbVKey + "\norigin go.sum database tree\nqpd 86400\ncontact x@example.com\n",
		"logs/v0\nvkey " + sumdbVKey + "\norigin a\norigin b\n",
		"logs/v1\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		logs, err := witness.ParseLogs(data)
		if err != nil {
			return
		}
		again, err := witness.ParseLogs(witness.FormatLogs(logs))
		if err != nil {
			t.Fatalf("FormatLogs output does not parse: %v\n%s", err, witness.FormatLogs(logs))
		}
		if !slices.Equal(logs, again) {
			t.Fatalf("logs %v round-trip as %v", logs, again)
		}
		for _, l := range logs {
			if l.Origin == "" || strings.ContainsAny(l.Origin, "\n\r") {
				t.Fatalf("ParseLogs accepted origin %q", l.Origin)
			}
		}
	})
}
