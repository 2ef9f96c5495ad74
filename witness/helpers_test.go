package witness_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memtrail/memtrail/witness"
	"github.com/memtrail/memtrail/witness/internal/witnesstest"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

func newSimLog(tb testing.TB, origin string) *witnesstest.Log {
	tb.Helper()
	l, err := witnesstest.NewLog(origin)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// memStore is an in-memory witness.Store with fault hooks. Stores opened
// from one memBackend share their state, like files reopened.
type memBackend struct {
	mu sync.Mutex
	m  map[string][]byte
}

type memStore struct {
	b      *memBackend
	mu     sync.Mutex
	closed bool

	// failLoad and failSwap, if set, are returned by Load and CompareAndSwap
	// without touching the state. failAfterSwap is returned after a
	// successful swap, which makes its outcome look unknown to the caller.
	failLoad, failSwap, failAfterSwap error
}

func newMemStore() *memStore { return &memStore{b: &memBackend{m: make(map[string][]byte)}} }

func (s *memStore) reopen() *memStore { return &memStore{b: s.b} }

func (s *memStore) setFaults(load, swap, afterSwap error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failLoad, s.failSwap, s.failAfterSwap = load, swap, afterSwap
}

var errStoreClosed = errors.New("memstore: closed")

func (s *memStore) Load(ctx context.Context, origin string) ([]byte, error) {
	s.mu.Lock()
	closed, fail := s.closed, s.failLoad
	s.mu.Unlock()
	if closed {
		return nil, errStoreClosed
	}
	if fail != nil {
		return nil, fail
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	v, ok := s.b.m[origin]
	if !ok {
		return nil, witness.ErrNotFound
	}
	return bytes.Clone(v), nil
}

func (s *memStore) CompareAndSwap(ctx context.Context, origin string, old, new []byte) error {
	s.mu.Lock()
	closed, fail, failAfter := s.closed, s.failSwap, s.failAfterSwap
	s.mu.Unlock()
	if closed {
		return errStoreClosed
	}
	if fail != nil {
		return fail
	}
	if len(new) == 0 {
		return errors.New("memstore: empty value")
	}
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	cur, ok := s.b.m[origin]
	if ok != (old != nil) || !bytes.Equal(cur, old) {
		return witness.ErrConflict
	}
	s.b.m[origin] = bytes.Clone(new)
	return failAfter
}

func (s *memStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

func TestMemStoreContract(t *testing.T) {
	var last *memStore
	witness.TestStore(t, context.Background(), func() (witness.Store, error) {
		if last == nil {
			last = newMemStore()
		} else {
			last = last.reopen()
		}
		return last, nil
	})
}

// harness is a witness served over HTTP, with its store and logs.
type harness struct {
	t      testing.TB
	w      *witness.Witness
	store  *memStore
	srv    *httptest.Server
	cosigV note.Verifier
}

func newHarness(tb testing.TB, logs ...witness.Log) *harness {
	tb.Helper()
	return newHarnessWithStore(tb, newMemStore(), logs...)
}

func newHarnessWithStore(tb testing.TB, store *memStore, logs ...witness.Log) *harness {
	tb.Helper()
	skey, vkey, err := witness.GenerateKey("witness.example.com/w1")
	if err != nil {
		tb.Fatal(err)
	}
	w, err := witness.New(context.Background(), witness.Config{
		Key: skey, Store: store, Logs: logs, Logger: discardLogger(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	if w.VerifierKey() != vkey {
		tb.Fatalf("VerifierKey() = %q, want %q", w.VerifierKey(), vkey)
	}
	v, err := fnote.NewVerifierForCosignatureV1(vkey)
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(w.Handler())
	tb.Cleanup(srv.Close)
	return &harness{t: tb, w: w, store: store, srv: srv, cosigV: v}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

type response struct {
	code        int
	contentType string
	body        []byte
}

func (h *harness) post(body []byte) response {
	h.t.Helper()
	return httpPost(h.t, h.srv.Client(), h.srv.URL, body)
}

func httpPost(tb testing.TB, c *http.Client, base string, body []byte) response {
	tb.Helper()
	resp, err := c.Post(base+"/add-checkpoint", "text/plain", bytes.NewReader(body))
	if err != nil {
		tb.Fatalf("POST /add-checkpoint: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("reading response: %v", err)
	}
	return response{resp.StatusCode, resp.Header.Get("Content-Type"), b}
}

func (h *harness) get(path string) response {
	h.t.Helper()
	resp, err := h.srv.Client().Get(h.srv.URL + path)
	if err != nil {
		h.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("reading response: %v", err)
	}
	return response{resp.StatusCode, resp.Header.Get("Content-Type"), b}
}

func checkpointPath(origin string) string { return "/checkpoint/" + url.PathEscape(origin) }

// mustAdd submits a request that must succeed and checks its cosignature.
func (h *harness) mustAdd(l *witnesstest.Log, old, size uint64) []byte {
	h.t.Helper()
	r := h.post(l.Request(old, size))
	if r.code != http.StatusOK {
		h.t.Fatalf("add-checkpoint old %d size %d = %d %q, want 200", old, size, r.code, r.body)
	}
	checkCosignature(h.t, h.cosigV, l.Checkpoint(size), r.body, time.Now())
	return r.body
}

// checkCosignature checks that line is one valid cosignature/v1 line by v
// on the checkpoint, made around now.
func checkCosignature(tb testing.TB, v note.Verifier, checkpoint, line []byte, now time.Time) {
	tb.Helper()
	if bytes.Count(line, []byte("\n")) != 1 || !bytes.HasSuffix(line, []byte("\n")) || !bytes.HasPrefix(line, []byte("— ")) {
		tb.Fatalf("cosignature %q is not one signature line", line)
	}
	n, err := note.Open(append(bytes.Clone(checkpoint), line...), note.VerifierList(v))
	if err != nil {
		tb.Fatalf("cosignature %q does not verify: %v", line, err)
	}
	if len(n.Sigs) != 1 || n.Sigs[0].Name != v.Name() {
		tb.Fatalf("cosignature signers = %v, want just %s", n.Sigs, v.Name())
	}
	ts, err := fnote.CoSigV1Timestamp(n.Sigs[0])
	if err != nil {
		tb.Fatalf("cosignature timestamp: %v", err)
	}
	if d := ts.Sub(now); d < -time.Minute || d > time.Minute {
		tb.Fatalf("cosignature timestamp %v, want about %v", ts, now)
	}
}

// storedSize returns the size of the checkpoint the witness serves for l,
// or -1 if it serves none.
func (h *harness) storedSize(origin string) int64 {
	h.t.Helper()
	r := h.get(checkpointPath(origin))
	if r.code == http.StatusNotFound {
		return -1
	}
	if r.code != http.StatusOK {
		h.t.Fatalf("GET checkpoint = %d %q", r.code, r.body)
	}
	_, size, _ := parseServed(h.t, r.body)
	return int64(size)
}

// parseServed splits a served checkpoint into origin, size and root hash.
func parseServed(tb testing.TB, b []byte) (string, uint64, []byte) {
	tb.Helper()
	lines := strings.SplitN(string(b), "\n", 4)
	if len(lines) < 4 {
		tb.Fatalf("served checkpoint %q is malformed", b)
	}
	size, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil {
		tb.Fatalf("served checkpoint %q: %v", b, err)
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil {
		tb.Fatalf("served checkpoint %q: %v", b, err)
	}
	return lines[0], size, root
}
