package witness_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
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
	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"
)

// A simLog is a simulated transparency log: a real RFC 6962 tree and a
// signed-note key. It is not safe for concurrent use while it grows.
type simLog struct {
	origin string
	vkey   string
	signer note.Signer
	tree   *testonly.Tree
	tag    string // makes this log's leaves differ from a fork's
}

func newSimLog(tb testing.TB, origin string) *simLog {
	tb.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, keyNameFor(origin))
	if err != nil {
		tb.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		tb.Fatal(err)
	}
	return &simLog{origin: origin, vkey: vkey, signer: signer, tree: testonly.New(rfc6962.DefaultHasher), tag: "main"}
}

// keyNameFor makes a valid key name from an origin, which may contain
// spaces or '+'.
func keyNameFor(origin string) string {
	return strings.NewReplacer(" ", "_", "+", "_", "\t", "_").Replace(origin)
}

// fork returns a log with the same origin and key whose tree has the first
// shared leaves of l and then different ones.
func (l *simLog) fork(shared uint64, tag string) *simLog {
	f := &simLog{origin: l.origin, vkey: l.vkey, signer: l.signer, tree: testonly.New(rfc6962.DefaultHasher), tag: tag}
	for i := range shared {
		f.tree.Append(l.tree.LeafHash(i))
	}
	return f
}

func (l *simLog) witnessLog() witness.Log { return witness.Log{Origin: l.origin, VKey: l.vkey} }

// growTo appends leaves until the tree has size leaves.
func (l *simLog) growTo(size uint64) {
	for l.tree.Size() < size {
		l.tree.AppendData([]byte(fmt.Sprintf("%s %s leaf %d", l.origin, l.tag, l.tree.Size())))
	}
}

func (l *simLog) root(size uint64) []byte { return l.tree.HashAt(size) }

func (l *simLog) text(size uint64) string {
	return fmt.Sprintf("%s\n%d\n%s\n", l.origin, size, base64.StdEncoding.EncodeToString(l.root(size)))
}

func (l *simLog) checkpoint(size uint64) []byte { return signText(l.text(size), l.signer) }

func signText(text string, signers ...note.Signer) []byte {
	b, err := note.Sign(&note.Note{Text: text}, signers...)
	if err != nil {
		panic(err)
	}
	return b
}

func (l *simLog) proof(old, size uint64) [][]byte {
	if old == 0 || old == size {
		return nil
	}
	p, err := l.tree.ConsistencyProof(old, size)
	if err != nil {
		panic(err)
	}
	return p
}

// request is the add-checkpoint body for the checkpoint of size with the
// proof from old.
func (l *simLog) request(old, size uint64) []byte {
	return requestBody(old, l.proof(old, size), l.checkpoint(size))
}

func requestBody(old uint64, proof [][]byte, checkpoint []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", old)
	for _, h := range proof {
		b.WriteString(base64.StdEncoding.EncodeToString(h) + "\n")
	}
	b.WriteString("\n")
	b.Write(checkpoint)
	return b.Bytes()
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
func (h *harness) mustAdd(l *simLog, old, size uint64) []byte {
	h.t.Helper()
	r := h.post(l.request(old, size))
	if r.code != http.StatusOK {
		h.t.Fatalf("add-checkpoint old %d size %d = %d %q, want 200", old, size, r.code, r.body)
	}
	checkCosignature(h.t, h.cosigV, l.checkpoint(size), r.body, time.Now())
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
