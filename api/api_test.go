package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/internal/promtest"
	mlog "github.com/memtrail/memtrail/log"
	"github.com/memtrail/memtrail/log/posixstore"
	"github.com/memtrail/memtrail/log/store"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
	"github.com/memtrail/memtrail/witness"
	"github.com/transparency-dev/tessera"
)

type testServer struct {
	t    *testing.T
	l    *mlog.Log
	srv  *httptest.Server
	s    *gen.Signers
	vkey string
}

func newTestServer(t *testing.T) *testServer {
	t.Helper()
	return newTestServerWith(t, 100*time.Millisecond, Config{})
}

func newTestServerWith(t *testing.T, cpInterval time.Duration, cfg Config) *testServer {
	t.Helper()
	skey, vkey, err := mlog.GenerateLogKey("memtrail.test/api")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := gen.NewSigners()
	l, err := mlog.Open(context.Background(), mlog.Config{
		Storage: openStorage(t, t.TempDir()), SigningKey: skey, Trust: s.Trust(time.Now().Add(-time.Hour)),
		BatchMaxAge: 5 * time.Millisecond, CheckpointInterval: cpInterval,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(l, cfg).Handler())
	t.Cleanup(func() {
		srv.Close()
		// Close waits for a checkpoint covering every entry; with a long
		// interval it is cut short (the entries are durable all the same).
		ctx, cancel := context.WithTimeout(context.Background(), 2*cpInterval)
		defer cancel()
		l.Close(ctx)
	})
	return &testServer{t: t, l: l, srv: srv, s: s, vkey: vkey}
}

func (ts *testServer) do(method, path, ctype string, body []byte) (int, http.Header, []byte) {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// batch posts lines to /v1/batch and decodes its answer lines.
func (ts *testServer) batch(lines ...[]byte) (int, []BatchResult, []byte) {
	ts.t.Helper()
	var body bytes.Buffer
	for _, line := range lines {
		body.Write(line)
		body.WriteByte('\n')
	}
	code, _, raw := ts.do("POST", "/v1/batch", "application/x-ndjson", body.Bytes())
	var results []BatchResult
	dec := json.NewDecoder(bytes.NewReader(raw))
	for dec.More() {
		var r BatchResult
		if err := dec.Decode(&r); err != nil {
			ts.t.Fatal(err)
		}
		results = append(results, r)
	}
	return code, results, raw
}

func (ts *testServer) projection(id string) []byte {
	r, _, err := ts.s.Projection(id, time.Now().UTC(), 2, 50)
	if err != nil {
		ts.t.Fatal(err)
	}
	return r.Canonical()
}

func refusalOf(t *testing.T, b []byte) Refusal {
	var r Refusal
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("refusal body %q: %v", b, err)
	}
	return r
}

func TestSubmitStatuses(t *testing.T) {
	ts := newTestServer(t)
	p := ts.projection("urn:p:1")
	code, _, body := ts.do("POST", "/v1/projections", "application/json", p)
	if code != 201 {
		t.Fatalf("first submission: %d %s", code, body)
	}
	var acc Accepted
	json.Unmarshal(body, &acc)
	lh := verifier.LeafHash(p)
	if acc.Index != 0 || acc.Kind != "projection" || acc.ID != "urn:p:1" || acc.LeafHash != base64.StdEncoding.EncodeToString(lh) {
		t.Errorf("accepted = %+v", acc)
	}
	other, _ := gen.NewSigners()
	foreign, _, _ := other.Projection("urn:p:foreign", time.Now(), 1, 10)
	ts2, _ := ts.s.Tombstone("urn:t:1", receipts.Digest(nil), time.Now())
	cases := []struct {
		name, path, ctype string
		body              []byte
		status            int
		code              string
	}{
		{"replay", "/v1/projections", "application/json", p, 409, "projection_replay"},
		{"foreign signature", "/v1/projections", "application/json", foreign.Canonical(), 400, "signature_invalid"},
		{"not json", "/v1/projections", "application/json", []byte("{"), 400, "record_invalid"},
		{"duplicate key", "/v1/projections", "application/json", []byte(`{"@version":"x","@version":"y"}`), 400, "record_invalid"},
		{"number beyond 2^53", "/v1/tombstones", "application/json", []byte(`{"purged_at":9007199254740993}`), 400, "record_invalid"},
		{"wrong kind for endpoint", "/v1/projections", "application/json", ts2.Canonical(), 400, "record_invalid"},
		{"bare ECCR", "/v1/compactions", "application/json", []byte(`{"eccr_version":"1.0"}`), 400, "record_invalid"},
		{"content type", "/v1/projections", "text/plain", p, 415, "unsupported_media_type"},
		{"no content type", "/v1/projections", "", p, 415, "unsupported_media_type"},
		{"batch without content type", "/v1/batch", "", append(p, '\n'), 415, "unsupported_media_type"},
		{"too large", "/v1/tombstones", "application/json", bytes.Repeat([]byte(" "), receipts.MaxTombstoneSize+1), 413, "too_large"},
		{"bad wait", "/v1/projections?wait=forever", "application/json", p, 400, "bad_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := ts.do("POST", tc.path, tc.ctype, tc.body)
			r := refusalOf(t, body)
			if code != tc.status || r.Code != tc.code {
				t.Errorf("%s %s = %d %+v, want %d %s", "POST", tc.path, code, r, tc.status, tc.code)
			}
		})
	}
	code, _, body = ts.do("POST", "/v1/projections", "application/json", p)
	if r := refusalOf(t, body); code != 409 || r.FirstIndex == nil || *r.FirstIndex != 0 {
		t.Errorf("replay refusal %d %+v, want first_index 0", code, r)
	}
	// Key codes are 403.
	tr := *ts.l.Trust()
	tr.Adapters = nil
	ts.l.SetTrust(&tr)
	code, _, body = ts.do("POST", "/v1/projections", "application/json", ts.projection("urn:p:unpinned"))
	if r := refusalOf(t, body); code != 403 || r.Code != "adapter_key_not_pinned" {
		t.Errorf("unpinned adapter: %d %+v", code, r)
	}
	// Nothing refused was logged.
	if size, _ := ts.l.IntegratedSize(context.Background()); size != 1 {
		t.Errorf("tree size %d, want 1", size)
	}
}

func TestWaitProofAndLookups(t *testing.T) {
	ts := newTestServer(t)
	p := ts.projection("urn:p:wait")
	code, _, body := ts.do("POST", "/v1/projections?wait=proof", "application/json", p)
	if code != 201 {
		t.Fatalf("%d %s", code, body)
	}
	var acc Accepted
	json.Unmarshal(body, &acc)
	policy, err := verifier.ParsePolicy([]byte("log " + ts.vkey + "\nquorum none\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := verifier.VerifyProof(policy, []byte(acc.Proof), verifier.LeafHash(p)); err != nil {
		t.Fatalf("proof in the answer: %v\n%s", err, acc.Proof)
	}
	// Lookup by escaped path and by query.
	for _, path := range []string{"/v1/projections/" + url.PathEscape("urn:p:wait"), "/v1/projections?id=urn:p:wait"} {
		code, _, body = ts.do("GET", path, "", nil)
		var e Entry
		json.Unmarshal(body, &e)
		if code != 200 || e.Index != 0 || !bytes.Equal(e.Receipt, p) || e.Proof == "" {
			t.Errorf("GET %s = %d %s", path, code, body)
		}
	}
	code, _, body = ts.do("GET", "/v1/proof/0", "", nil)
	if _, _, err := verifier.VerifyProof(policy, body, verifier.LeafHash(p)); code != 200 || err != nil {
		t.Errorf("GET /v1/proof/0 = %d %v", code, err)
	}
	// An id holding an escape of its own is found by its escaped path,
	// with or without its colons escaped, and by ?id=.
	pct := ts.projection("urn:p:a%20b")
	if code, _, body := ts.do("POST", "/v1/projections", "application/json", pct); code != 201 {
		t.Fatalf("%d %s", code, body)
	}
	for _, path := range []string{"/v1/projections/urn:p:a%2520b", "/v1/projections/" + url.PathEscape("urn:p:a%20b"), "/v1/projections?id=" + url.QueryEscape("urn:p:a%20b")} {
		code, _, body = ts.do("GET", path, "", nil)
		var e Entry
		json.Unmarshal(body, &e)
		if code != 200 || e.ID != "urn:p:a%20b" {
			t.Errorf("GET %s = %d %s", path, code, body)
		}
	}
	code, _, _ = ts.do("GET", "/v1/projections?id=urn:p:none", "", nil)
	if code != 404 {
		t.Errorf("unknown projection: %d", code)
	}
	// Requests that can never be answered say so, apart from "not yet".
	code, _, body = ts.do("GET", "/v1/proof/5", "", nil)
	if r := refusalOf(t, body); code != 404 || r.Code != "not_found" || !strings.Contains(r.Detail, "does not exist: the log has 2 entries") {
		t.Errorf("proof beyond the log: %d %s", code, body)
	}
	code, _, body = ts.do("GET", "/v1/proof/5?size=1", "", nil)
	if r := refusalOf(t, body); code != 400 || !strings.Contains(r.Detail, "not in a tree of size 1") {
		t.Errorf("proof beyond the size asked: %d %s", code, body)
	}
	code, _, body = ts.do("GET", "/v1/consistency?from=1&to=9", "", nil)
	if r := refusalOf(t, body); code != 404 || r.Code != "not_found" || !strings.Contains(r.Detail, "the log has only 2 entries") {
		t.Errorf("consistency to a size beyond the log: %d %s", code, body)
	}
	code, _, body = ts.do("GET", "/v1/proof/0?size=7", "", nil)
	if r := refusalOf(t, body); code != 404 || !strings.Contains(r.Detail, "no checkpoint of size 7 was published") || !strings.Contains(r.Detail, "latest is of size") {
		t.Errorf("proof at a size never published: %d %s", code, body)
	}
}

func TestLineageEndpoints(t *testing.T) {
	ts := newTestServer(t)
	items := gen.Items("api", 4)
	c1, mf1, _ := ts.s.Compaction("urn:c:1", items, "", nil, nil)
	tomb, _ := ts.s.Tombstone("urn:t:1", items[1].ItemDigest, time.Now())
	rest := []receipts.ManifestItem{items[0], items[2], items[3]}
	c2, mf2, _ := ts.s.Compaction("urn:c:2", rest, "urn:c:1", []string{items[1].ItemDigest}, nil)
	again, mfa, _ := ts.s.Compaction("urn:c:again", items[1:2], "", nil, nil)
	// One batch: lines are decided in order, so the re-inclusion after the
	// tombstone is refused and the supersession accepted.
	code, results, body := ts.batch(gen.CompactionSubmission(c1, mf1), ts.projection("urn:p:b1"), tomb.Canonical(), gen.CompactionSubmission(again, mfa), gen.CompactionSubmission(c2, mf2), []byte("{not json"), nil)
	if code != 200 {
		t.Fatalf("batch: %d %s", code, body)
	}
	want := []int{201, 201, 201, 400, 201, 400, 204}
	if len(results) != len(want) {
		t.Fatalf("%d results, want %d: %s", len(results), len(want), body)
	}
	for i, r := range results {
		if r.Line != i+1 || r.Status != want[i] {
			t.Errorf("line %d: %+v, want status %d", i+1, r, want[i])
		}
	}
	if results[3].Refusal == nil || results[3].Refusal.Code != "item_purged" {
		t.Errorf("re-inclusion refusal: %+v", results[3])
	}
	// Wait for the last entry to be indexed.
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, _, body = ts.do("GET", "/v1/compactions?id=urn:c:2", "", nil)
		if code == 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, _, body = ts.do("GET", "/v1/compactions?id=urn:c:1", "", nil)
	var cs CompactionState
	json.Unmarshal(body, &cs)
	if cs.State != "superseded" || cs.SupersededBy != "urn:c:2" {
		t.Errorf("urn:c:1 = %s", body)
	}
	code, _, body = ts.do("GET", "/v1/items/"+items[1].ItemDigest, "", nil)
	var is ItemState
	json.Unmarshal(body, &is)
	if code != 200 || is.State != "purged" || is.Tombstone == nil || len(is.Compactions) != 1 {
		t.Errorf("purged item = %d %s", code, body)
	}
	code, _, body = ts.do("GET", "/v1/items/"+items[0].ItemDigest, "", nil)
	json.Unmarshal(body, &is)
	if is.State != "retained" || len(is.Compactions) != 2 {
		t.Errorf("retained item = %s", body)
	}
	// The tombstone by its id, in both spellings, with its record; an
	// unknown id is 404, and a projection's id is not a tombstone's.
	for _, path := range []string{"/v1/tombstones/urn:t:1", "/v1/tombstones?id=urn:t:1"} {
		code, _, body = ts.do("GET", path, "", nil)
		var e Entry
		if err := json.Unmarshal(body, &e); err != nil || code != 200 || e.Kind != "tombstone" || e.ID != "urn:t:1" ||
			!bytes.Equal(e.Receipt, tomb.Canonical()) || results[2].Accepted == nil || e.Index != results[2].Accepted.Index {
			t.Errorf("GET %s = %d %s", path, code, body)
		}
	}
	for _, id := range []string{"urn:t:none", "urn:p:b1"} {
		if code, _, body = ts.do("GET", "/v1/tombstones?id="+id, "", nil); code != 404 {
			t.Errorf("tombstone %s: %d %s", id, code, body)
		}
	}
	code, hdr, body := ts.do("GET", "/v1/manifests/"+mf2.Root(), "", nil)
	if code != 200 || !bytes.Equal(body, mf2.Canonical()) || !strings.Contains(hdr.Get("Cache-Control"), "immutable") {
		t.Errorf("manifest = %d %s", code, hdr)
	}
	// The source proof verifies against the logged ECCR.
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := ts.l.WaitPublished(wctx, 3); err != nil {
		t.Fatal(err)
	}
	code, _, body = ts.do("GET", "/v1/compactions/urn:c:2/sources/"+items[2].ItemDigest+"/proof", "", nil)
	var sp SourceProofAnswer
	if err := json.Unmarshal(body, &sp); err != nil || code != 200 {
		t.Fatalf("source proof: %d %s", code, body)
	}
	doc, err := receipts.ParseSourceProof(sp.SourceProof)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := receipts.ParseCompaction(sp.Compaction)
	if err := doc.Verify(c); err != nil || doc.TreeSize != 3 || doc.Index != 1 {
		t.Errorf("source proof %+v: %v", doc, err)
	}
	if sp.CompactionProof == "" {
		t.Errorf("source proof answer lacks the compaction's tlog-proof")
	}
	code, _, _ = ts.do("GET", "/v1/compactions/urn:c:2/sources/"+items[1].ItemDigest+"/proof", "", nil)
	if code != 404 {
		t.Errorf("source proof of an excluded item: %d", code)
	}
	code, _, body = ts.do("GET", "/v1/consistency?from=1&to=4", "", nil)
	if code != 200 {
		t.Errorf("consistency: %d %s", code, body)
	}
}

func TestTilesReadPath(t *testing.T) {
	ts := newTestServer(t)
	var wg sync.WaitGroup
	for i := 0; i < 300; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ts.do("POST", "/v1/projections", "application/json", ts.projection(fmt.Sprint("urn:p:", i)))
		}(i)
	}
	wg.Wait()
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := ts.l.WaitPublished(wctx, 299); err != nil {
		t.Fatal(err)
	}
	code, hdr, _ := ts.do("GET", "/checkpoint", "", nil)
	if code != 200 || hdr.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("checkpoint: %d %v", code, hdr)
	}
	code, hdr, body := ts.do("GET", "/tile/0/000", "", nil)
	if code != 200 || len(body) != 8192 || hdr.Get("Content-Type") != "application/octet-stream" || !strings.Contains(hdr.Get("Cache-Control"), "immutable") {
		t.Errorf("full tile: %d %d %v", code, len(body), hdr)
	}
	code, _, body = ts.do("GET", "/tile/0/001.p/44", "", nil)
	if code != 200 || len(body) != 44*32 {
		t.Errorf("partial tile: %d %d", code, len(body))
	}
	code, _, _ = ts.do("GET", "/tile/entries/000", "", nil)
	if code != 200 {
		t.Errorf("entry bundle: %d", code)
	}
	for _, bad := range []string{"/tile/0/../../.state/treeState", "/tile/0/0", "/tile/0/x000", "/tile/64/000", "/tile/0/001.p/0", "/tile/0/001.p/256", "/tile/entries/../index.db", "/tile/0/%2e%2e/%2e%2e/log.key", "/tile/01/000"} {
		code, _, body := ts.do("GET", bad, "", nil)
		if code != 404 {
			t.Errorf("GET %s = %d %s, want 404", bad, code, body)
		}
	}
	code, _, body = ts.do("GET", "/metrics", "", nil)
	if code != 200 || !bytes.Contains(body, []byte(`memtrail_submissions_accepted_total{kind="projection"} 300`)) {
		t.Errorf("metrics: %d %s", code, body)
	}
	if code, _, _ = ts.do("GET", "/healthz", "", nil); code != 200 {
		t.Errorf("healthz: %d", code)
	}
	for path, allow := range map[string]string{"/v1/projections": "GET, HEAD, POST", "/v1/log": "GET, HEAD", "/v1/batch": "POST", "/tile/0/000.p/9": "GET, HEAD"} {
		if code, hdr, body := ts.do("DELETE", path, "", nil); code != 405 || hdr.Get("Allow") != allow || refusalOf(t, body).Code != "method_not_allowed" {
			t.Errorf("DELETE %s: %d, Allow %q, %s; want 405 with Allow %q", path, code, hdr.Get("Allow"), body, allow)
		}
	}
	// HEAD is answered wherever GET is, with GET's headers and no body.
	for _, path := range []string{"/checkpoint", "/v1/log", "/tile/0/000.p/9"} {
		get, ghdr, _ := ts.do("GET", path, "", nil)
		code, hdr, body := ts.do("HEAD", path, "", nil)
		if code != get || len(body) != 0 || hdr.Get("Content-Type") != ghdr.Get("Content-Type") {
			t.Errorf("HEAD %s: %d %q %d bytes; GET: %d %q", path, code, hdr.Get("Content-Type"), len(body), get, ghdr.Get("Content-Type"))
		}
	}
}

// TestHTTPSingleUse: 1,000 concurrent HTTP submissions of one id give
// exactly one 201, and every other answer is a 409 naming the same index.
func TestHTTPSingleUse(t *testing.T) {
	ts := newTestServer(t)
	p := ts.projection("urn:p:contested")
	const n = 1000
	codes := make([]int, n)
	bodies := make([][]byte, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			codes[i], _, bodies[i] = ts.do("POST", "/v1/projections", "application/json", p)
		}(i)
	}
	wg.Wait()
	created := -1
	for i, c := range codes {
		if c == 201 {
			if created >= 0 {
				t.Fatalf("two 201 answers")
			}
			created = i
		}
	}
	if created < 0 {
		t.Fatal("no 201 answer")
	}
	var acc Accepted
	json.Unmarshal(bodies[created], &acc)
	for i, c := range codes {
		if i == created {
			continue
		}
		r := refusalOf(t, bodies[i])
		if c != 409 || r.Code != "projection_replay" || r.FirstIndex == nil || *r.FirstIndex != acc.Index {
			t.Fatalf("answer %d: %d %+v, want 409 naming index %d", i, c, r, acc.Index)
		}
	}
}

func TestAppendAcceptedMatchesEncodingJSON(t *testing.T) {
	for _, id := range []string{"urn:p:1", "urn:x:<&>\u2028\"\\é😀", ""} {
		r := BatchResult{Line: 7, Status: 201, Accepted: &Accepted{Index: 1 << 40, LeafHash: "AbC+/=", Kind: "projection", ID: id}}
		var want bytes.Buffer
		json.NewEncoder(&want).Encode(r)
		if got := appendAccepted(nil, &r); string(got) != want.String() {
			t.Errorf("appendAccepted = %s, want %s", got, want.Bytes())
		}
	}
}

func TestWaitProofTimeoutSaysLogged(t *testing.T) {
	// A checkpoint that does not come in time must not turn a logged
	// entry into an error: the client would retry and meet a replay.
	ts := newTestServerWith(t, time.Second, Config{WaitTimeout: time.Nanosecond})
	code, _, body := ts.do("POST", "/v1/projections?wait=proof", "application/json", ts.projection("urn:p:slow"))
	var acc Accepted
	json.Unmarshal(body, &acc)
	if code != 201 || acc.Proof != "" || !strings.Contains(acc.ProofPending, "/v1/proof/0") {
		t.Fatalf("wait=proof past its timeout = %d %s; want 201 with proof_pending", code, body)
	}
	code, _, body = ts.do("GET", "/v1/consistency?from=5&to=2", "", nil)
	if code != 400 || refusalOf(t, body).Code != "bad_request" {
		t.Errorf("consistency from > to = %d %s, want 400", code, body)
	}
}

// TestCheckpointZeroArchived: the size-0 checkpoint a fresh log publishes is
// served by size like any other, also once the log has grown.
func TestCheckpointZeroArchived(t *testing.T) {
	ts := newTestServer(t)
	waitCode := func(path string) (int, []byte) {
		deadline := time.Now().Add(5 * time.Second)
		for {
			code, _, body := ts.do("GET", path, "", nil)
			if code == 200 || time.Now().After(deadline) {
				return code, body
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	code, zero := waitCode("/v1/checkpoints/0")
	if code != 200 || !bytes.Contains(zero, []byte("\n0\n")) {
		t.Fatalf("GET /v1/checkpoints/0 = %d %s", code, zero)
	}
	if code, _, body := ts.do("POST", "/v1/projections?wait=proof", "application/json", ts.projection("urn:p:after-zero")); code != 201 {
		t.Fatalf("%d %s", code, body)
	}
	if code, _ := waitCode("/v1/checkpoints/1"); code != 200 {
		t.Fatalf("GET /v1/checkpoints/1 = %d", code)
	}
	code, hdr, body := ts.do("GET", "/v1/checkpoints/0", "", nil)
	if code != 200 || !bytes.Equal(body, zero) {
		t.Errorf("GET /v1/checkpoints/0 after growth = %d %s", code, body)
	}
	// An older size never changes; the latest may be published again
	// (re-signed, re-witnessed), so it is not cached.
	if cc := hdr.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
		t.Errorf("GET /v1/checkpoints/0 below the latest: Cache-Control %q, want immutable", cc)
	}
	if _, hdr, _ := ts.do("GET", "/v1/checkpoints/1", "", nil); hdr.Get("Cache-Control") != "no-cache" {
		t.Errorf("GET /v1/checkpoints/1, the latest: Cache-Control %q, want no-cache", hdr.Get("Cache-Control"))
	}
}

// TestBatchOfNewlines: a batch body of newlines over the line cap is
// refused without a slice header per line (16 Mi lines would cost 384 MiB).
func TestBatchOfNewlines(t *testing.T) {
	ts := newTestServer(t)
	body := bytes.Repeat([]byte("\n"), 16<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	code, _, resp := ts.do("POST", "/v1/batch", "application/x-ndjson", body)
	runtime.ReadMemStats(&after)
	if r := refusalOf(t, resp); code != 413 || r.Code != "too_large" || !strings.Contains(r.Detail, "16777216 lines") {
		t.Errorf("a batch of 16 Mi newlines: %d %s", code, resp)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 128<<20 {
		t.Errorf("refusing a 16 MiB batch of newlines allocated %d MiB", grew>>20)
	}
}

// TestBatchOrderWithEscapedNames: a tombstone whose member names are
// spelled with \u escapes still takes its lineage decision in line order.
func TestBatchOrderWithEscapedNames(t *testing.T) {
	ts := newTestServer(t)
	for i := 0; i < 5; i++ {
		items := gen.Items(fmt.Sprint("esc", i), 2)
		tomb, err := ts.s.Tombstone(fmt.Sprint("urn:t:esc:", i), items[0].ItemDigest, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		escaped := bytes.Replace(tomb.Canonical(), []byte(`"tombstone_version"`), []byte(`"tombstone\u005fversion"`), 1)
		c, mf, err := ts.s.Compaction(fmt.Sprint("urn:c:esc:", i), items, "", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		code, results, body := ts.batch(escaped, gen.CompactionSubmission(c, mf))
		if code != 200 || len(results) != 2 || results[0].Status != 201 || results[1].Refusal == nil || results[1].Refusal.Code != "item_purged" {
			t.Fatalf("trial %d: %d %s", i, code, body)
		}
	}
}

// TestWaitProofWithoutQuorum: a ?wait=proof answer of a fail-open log
// whose witness is down carries the proof and says that it lacks the
// quorum; a log without a witness policy never says so.
func TestWaitProofWithoutQuorum(t *testing.T) {
	skey, vkey, err := mlog.GenerateLogKey("memtrail.test/api")
	if err != nil {
		t.Fatal(err)
	}
	_, wvkey, err := witness.GenerateKey("witness.test/down")
	if err != nil {
		t.Fatal(err)
	}
	wg, err := tessera.NewWitnessGroupFromPolicy([]byte("log " + vkey + "\nwitness w " + wvkey + " http://127.0.0.1:9\nquorum w\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := gen.NewSigners()
	l, err := mlog.Open(context.Background(), mlog.Config{
		Storage: openStorage(t, t.TempDir()), SigningKey: skey, Trust: s.Trust(time.Now().Add(-time.Hour)),
		BatchMaxAge: 5 * time.Millisecond, CheckpointInterval: 100 * time.Millisecond,
		Witnesses: &wg, WitnessTimeout: 200 * time.Millisecond, WitnessFailOpen: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(l, Config{}).Handler())
	defer func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		l.Close(ctx)
	}()
	ts := &testServer{t: t, l: l, srv: srv, s: s, vkey: vkey}
	code, _, body := ts.do("POST", "/v1/projections?wait=proof", "application/json", ts.projection("urn:p:fail-open"))
	var acc Accepted
	if err := json.Unmarshal(body, &acc); code != 201 || err != nil {
		t.Fatalf("?wait=proof = %d %s", code, body)
	}
	if acc.Proof == "" || !strings.Contains(acc.ProofWithoutQuorum, "lacks the witness quorum") || !strings.Contains(acc.ProofWithoutQuorum, "/v1/proof/0") {
		t.Errorf("?wait=proof of a fail-open log without its witness = %s; want the proof and proof_without_quorum", body)
	}

	plain := newTestServer(t)
	code, _, body = plain.do("POST", "/v1/projections?wait=proof", "application/json", plain.projection("urn:p:plain"))
	if code != 201 || !bytes.Contains(body, []byte(`"proof":`)) || bytes.Contains(body, []byte("proof_without_quorum")) {
		t.Errorf("?wait=proof of an unwitnessed log = %d %s", code, body)
	}
}

// TestItemAnswer pins the bytes of GET /v1/items/{digest}: every member is
// present, lists are [] rather than null, and a missing tombstone is null.
func TestItemAnswer(t *testing.T) {
	ts := newTestServer(t)
	item := receipts.Digest([]byte("never logged"))
	code, _, body := ts.do("GET", "/v1/items/"+item, "", nil)
	want := `{"item":"` + item + `","state":"unknown","compactions":[],"output_of":[],"tombstone":null,"open_obligations":[]}`
	if code != 200 || strings.TrimSpace(string(body)) != want {
		t.Errorf("GET /v1/items/%s = %d %s, want 200 %s", item, code, body, want)
	}
}

// TestMetricsPromtool checks the whole of /metrics with promtool: the log's
// metrics after submissions and refusals, Tessera's, the process's and
// memtrail_build_info.
func TestMetricsPromtool(t *testing.T) {
	ts := newTestServerWith(t, 100*time.Millisecond, Config{Version: "v1.2.3-test"})
	for i := range 3 {
		if code, _, body := ts.do("POST", "/v1/projections?wait=proof", "application/json", ts.projection(fmt.Sprint("urn:p:m", i))); code != 201 {
			t.Fatalf("submit: %d %s", code, body)
		}
	}
	ts.do("POST", "/v1/projections", "application/json", ts.projection("urn:p:m0")) // a replay
	ts.do("POST", "/v1/projections", "application/json", []byte("{"))
	code, hdr, body := ts.do("GET", "/metrics", "", nil)
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("GET /metrics = %d %q", code, hdr.Get("Content-Type"))
	}
	for _, want := range []string{
		`memtrail_submissions_accepted_total{kind="projection"} 3`,
		`memtrail_submissions_refused_total{code="projection_replay",kind="projection"} 1`,
		`memtrail_ingest_seconds_count 3`,
		`memtrail_tree_size 3`,
		`memtrail_storage_writable 1`,
		`memtrail_build_info{goversion="` + runtime.Version() + `",revision="`,
		`version="v1.2.3-test"} 1`,
		"# TYPE tessera_appender_add_calls_total counter",
		"# TYPE go_goroutines gauge",
		"# TYPE process_open_fds gauge",
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
	promtest.Check(t, body)
}

// TestErasureLookups: the lookups show a compaction whose every item was
// purged as awaiting_erasure, and once its output is tombstoned as erased,
// from the compaction, its items and its output digest.
func TestErasureLookups(t *testing.T) {
	ts := newTestServer(t)
	items := gen.Items("erase-api", 2)
	c, mf, _ := ts.s.Compaction("urn:c:e", items, "", nil, nil)
	t0, _ := ts.s.Tombstone("urn:t:e0", items[0].ItemDigest, time.Now())
	t1, _ := ts.s.Tombstone("urn:t:e1", items[1].ItemDigest, time.Now())
	out, _ := ts.s.Tombstone("urn:t:eo", c.CompactedOutputHash, time.Now())
	get := func(path string, v any) {
		t.Helper()
		code, _, body := ts.do("GET", path, "", nil)
		if code != 200 {
			t.Fatalf("GET %s = %d %s", path, code, body)
		}
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatal(err)
		}
	}
	code, results, body := ts.batch(gen.CompactionSubmission(c, mf), t0.Canonical(), t1.Canonical())
	if code != 200 || len(results) != 3 || results[2].Status != 201 {
		t.Fatalf("batch: %d %s", code, body)
	}
	var cs CompactionState
	get("/v1/compactions/urn:c:e", &cs)
	if cs.State != "awaiting_erasure" || cs.OutputHash != c.CompactedOutputHash || cs.ErasedBy != "" {
		t.Errorf("fully purged compaction = %+v", cs)
	}
	var is ItemState
	get("/v1/items/"+c.CompactedOutputHash, &is)
	if is.State != "retained" || len(is.OutputOf) != 1 || is.OutputOf[0].ID != "urn:c:e" || is.Tombstone != nil {
		t.Errorf("output before its erasure = %+v", is)
	}
	get("/v1/items/"+items[0].ItemDigest, &is)
	if is.State != "awaiting_recompaction" || len(is.Obligations) != 1 || is.Obligations[0].State != "awaiting_erasure" {
		t.Errorf("purged item of an unerased compaction = %+v", is)
	}

	code, results, body = ts.batch(out.Canonical())
	if code != 200 || len(results) != 1 || results[0].Status != 201 {
		t.Fatalf("output tombstone: %d %s", code, body)
	}
	get("/v1/compactions/urn:c:e", &cs)
	if cs.State != "erased" || cs.ErasedBy != "urn:t:eo" || cs.ErasedAt != results[0].Accepted.Index {
		t.Errorf("erased compaction = %+v", cs)
	}
	get("/v1/items/"+items[1].ItemDigest, &is)
	if is.State != "purged" || len(is.Obligations) != 0 || is.Compactions[0].ErasedBy != "urn:t:eo" {
		t.Errorf("purged item of an erased compaction = %+v", is)
	}
	get("/v1/items/"+c.CompactedOutputHash, &is)
	if is.State != "purged" || is.Tombstone == nil || is.Tombstone.ID != "urn:t:eo" || len(is.OutputOf) != 1 || is.OutputOf[0].State != "erased" {
		t.Errorf("erased output = %+v", is)
	}
}

// openStorage opens the embedded storage of the data directory dir.
func openStorage(t testing.TB, dir string) store.Parts {
	t.Helper()
	p, err := posixstore.Open(context.Background(), posixstore.Config{Dir: dir})
	if err != nil {
		t.Fatalf("posixstore.Open(%s): %v", dir, err)
	}
	return p
}
