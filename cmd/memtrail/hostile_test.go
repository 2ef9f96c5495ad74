package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memtrail/memtrail/api"
	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/receipts"
)

// The abusive-HTTP suite (docs/RELIABILITY.md, "Abusive HTTP"): hostile
// requests against a running "memtrail serve", each of which must get a
// clear 4xx with its code in a JSON body and log nothing, while a steady
// legitimate load keeps being served.

// hostileReadTimeout is the --read-timeout of the server under attack:
// short, so that slow clients are cut off within the test, and shorter
// than a ?wait=proof wait (see hostileCheckpoint), which must not be cut.
const (
	hostileReadTimeout = 2 * time.Second
	hostileCheckpoint  = 3500 * time.Millisecond
)

// hostileCase is one abusive request and the answer it must get. Requests
// that never become HTTP requests (headers that do not arrive in time, a
// malformed request target) are answered by Go's HTTP server itself, before
// any memtrail handler runs, in plain text: those cases have plain set and
// no code.
type hostileCase struct {
	name    string
	method  string
	target  string // request target, sent as is (no cleaning, no escaping)
	ctype   string
	body    func() io.Reader // nil: no body
	length  int64            // Content-Length; -1: chunked
	slow    bool             // runs for about hostileReadTimeout
	status  int
	code    string
	lines   []batchLineWant // for batches answered 200: each line's status and code
	maxSent int64           // if not 0, the server must stop reading the body before this many bytes
	plain   bool            // answered by Go's HTTP server, not as JSON
	// slowOK also accepts 408 request_timeout: a body so large that a busy
	// machine may not deliver it within the read timeout.
	slowOK bool
}

type batchLineWant struct {
	status int
	code   string
}

// hostileCases builds the abusive requests from one valid record, so that
// each mutation is the only thing wrong with it.
func hostileCases(t *testing.T, valid []byte) []hostileCase {
	mutate := func(old, new string) []byte {
		if !bytes.Contains(valid, []byte(old)) {
			t.Fatalf("the valid record has no %q to mutate", old)
		}
		return bytes.Replace(valid, []byte(old), []byte(new), 1)
	}
	projectionID := string(valid[bytes.Index(valid, []byte(`"projection_id":`)):])
	projectionID = projectionID[:strings.Index(projectionID, `","`)+1]
	fixed := func(b []byte) func() io.Reader { return func() io.Reader { return bytes.NewReader(b) } }
	repeat := func(prefix string, unit byte, n int, suffix string) []byte {
		b := make([]byte, 0, len(prefix)+n+len(suffix))
		b = append(b, prefix...)
		b = append(b, bytes.Repeat([]byte{unit}, n)...)
		return append(b, suffix...)
	}
	deepArrays := append(bytes.Repeat([]byte("["), 100000), bytes.Repeat([]byte("]"), 100000)...)
	deepObjects := append(bytes.Repeat([]byte(`{"a":`), 100000), '1')
	deepObjects = append(deepObjects, bytes.Repeat([]byte("}"), 100000)...)
	wide := manyMembers(100000)
	longArray := append([]byte(`{"delivered":[`), bytes.Repeat([]byte("0,"), 99999)...)
	longArray = append(longArray, "0]}"...)
	string10MB := repeat(`{"@version":"`, 'a', 10<<20, `"}`)
	string900KB := mutate(`"source_profile":"draft-ferro-apertomemory-02"`, `"source_profile":"`+strings.Repeat("a", 900<<10)+`"`)
	extra900KB := mutate(`"@version":`, `"comment":"`+strings.Repeat("a", 900<<10)+`","@version":`)
	tooManyLines := bytes.Repeat([]byte("{}\n"), 100001)

	const (
		projCap  = receipts.MaxProjectionRecordSize
		batchCap = 64 << 20
	)
	json := "application/json"
	c := []hostileCase{
		// Bodies over the cap, with and without Content-Length, and endless.
		{name: "projection over the cap, Content-Length", method: "POST", target: "/v1/projections", ctype: json, body: fixed(repeat(`{"a":"`, 'a', 2<<20, `"}`)), length: 2<<20 + 8, status: 413, code: "too_large"},
		{name: "projection over the cap, chunked", method: "POST", target: "/v1/projections", ctype: json, body: fixed(repeat(`{"a":"`, 'a', 2<<20, `"}`)), length: -1, status: 413, code: "too_large"},
		{name: "projection, endless chunked body", method: "POST", target: "/v1/projections", ctype: json, body: endlessJSON, length: -1, status: 413, code: "too_large", maxSent: 64 << 20},
		{name: "projection, Content-Length of a terabyte", method: "POST", target: "/v1/projections", ctype: json, body: endlessJSON, length: 1 << 40, status: 413, code: "too_large", maxSent: 64 << 20},
		{name: "tombstone over its 16 KiB cap", method: "POST", target: "/v1/tombstones", ctype: json, body: fixed(repeat(`{"a":"`, 'a', 20<<10, `"}`)), length: -1, status: 413, code: "too_large"},
		{name: "compaction, endless chunked body", method: "POST", target: "/v1/compactions", ctype: json, body: endlessJSON, length: -1, status: 413, code: "too_large", maxSent: 128 << 20},
		// Slow clients.
		{name: "headers dribbled byte by byte", method: "POST", target: "/v1/projections", slow: true, status: 400, plain: true},
		{name: "body dribbled byte by byte", method: "POST", target: "/v1/projections", ctype: json, body: func() io.Reader { return &dribble{data: valid, every: 50 * time.Millisecond} }, length: int64(len(valid)), slow: true, status: 408, code: "request_timeout"},
		// JSON bombs.
		{name: "arrays nested 100,000 deep", method: "POST", target: "/v1/projections", ctype: json, body: fixed(deepArrays), length: int64(len(deepArrays)), status: 400, code: "record_invalid"},
		{name: "objects nested 100,000 deep", method: "POST", target: "/v1/projections", ctype: json, body: fixed(deepObjects), length: int64(len(deepObjects)), status: 400, code: "record_invalid"},
		{name: "compaction nested 100,000 deep", method: "POST", target: "/v1/compactions", ctype: json, body: fixed(deepObjects), length: -1, status: 400, code: "record_invalid"},
		{name: "object with 100,000 members", method: "POST", target: "/v1/projections", ctype: json, body: fixed(wide), length: int64(len(wide)), status: 400, code: "record_invalid"},
		{name: "compaction with 100,000 members", method: "POST", target: "/v1/compactions", ctype: json, body: fixed(wide), length: int64(len(wide)), status: 400, code: "record_invalid"},
		{name: "array of 100,000 elements", method: "POST", target: "/v1/projections", ctype: json, body: fixed(longArray), length: int64(len(longArray)), status: 400, code: "record_invalid"},
		{name: "10 MB string, Content-Length", method: "POST", target: "/v1/projections", ctype: json, body: fixed(string10MB), length: int64(len(string10MB)), status: 413, code: "too_large"},
		{name: "10 MB string, chunked", method: "POST", target: "/v1/projections", ctype: json, body: fixed(string10MB), length: -1, status: 413, code: "too_large"},
		{name: "900 KB string in a projection member", method: "POST", target: "/v1/projections", ctype: json, body: fixed(string900KB), length: int64(len(string900KB)), status: 400, code: "record_invalid"},
		{name: "900 KB string in an extra member", method: "POST", target: "/v1/projections", ctype: json, body: fixed(extra900KB), length: int64(len(extra900KB)), status: 400, code: "record_invalid"},
		// Strict I-JSON, each in an otherwise valid signed record.
		{name: "invalid UTF-8", method: "POST", target: "/v1/projections", ctype: json, body: fixed(mutate(`"draft-ferro`, "\"draft-\xff\xfeferro")), length: -1, status: 400, code: "record_invalid"},
		{name: "lone surrogate", method: "POST", target: "/v1/projections", ctype: json, body: fixed(mutate(`"draft-ferro`, `"draft-\ud800ferro`)), length: -1, status: 400, code: "record_invalid"},
		{name: "duplicate key, same value", method: "POST", target: "/v1/projections", ctype: json, body: fixed(mutate(projectionID, projectionID+","+projectionID)), length: -1, status: 400, code: "record_invalid"},
		{name: "duplicate key, other value", method: "POST", target: "/v1/projections", ctype: json, body: fixed(mutate(projectionID, `"projection_id":"urn:hostile:other",`+projectionID)), length: -1, status: 400, code: "record_invalid"},
		{name: "1e1000", method: "POST", target: "/v1/projections", ctype: json, body: fixed(mutate(`"total":3`, `"total":1e1000`)), length: -1, status: 400, code: "record_invalid"},
		{name: "-0", method: "POST", target: "/v1/projections", ctype: json, body: fixed(mutate(`"authentication_failed":0`, `"authentication_failed":-0`)), length: -1, status: 400, code: "record_invalid"},
		{name: "NaN", method: "POST", target: "/v1/projections", ctype: json, body: fixed(mutate(`"total":3`, `"total":NaN`)), length: -1, status: 400, code: "record_invalid"},
		{name: "2^53+1", method: "POST", target: "/v1/projections", ctype: json, body: fixed(mutate(`"byte_length":`, `"byte_length":9007199254740993,"x":`)), length: -1, status: 400, code: "record_invalid"},
		{name: "2^64", method: "POST", target: "/v1/projections", ctype: json, body: fixed(mutate(`"total":3`, `"total":18446744073709551616`)), length: -1, status: 400, code: "record_invalid"},
		{name: "unknown member", method: "POST", target: "/v1/projections", ctype: json, body: fixed(mutate(`"@version":`, `"extra":1,"@version":`)), length: -1, status: 400, code: "record_invalid"},
		{name: "trailing data", method: "POST", target: "/v1/projections", ctype: json, body: fixed(append(slices.Clone(valid), "{}"...)), length: -1, status: 400, code: "record_invalid"},
		{name: "empty body", method: "POST", target: "/v1/projections", ctype: json, body: fixed(nil), length: 0, status: 400, code: "record_invalid"},
		{name: "bare ECCR", method: "POST", target: "/v1/compactions", ctype: json, body: fixed([]byte(`{"eccr_version":"1.0"}`)), length: -1, status: 400, code: "record_invalid"},
		// Content types.
		{name: "no Content-Type", method: "POST", target: "/v1/projections", body: fixed(valid), length: int64(len(valid)), status: 415, code: "unsupported_media_type"},
		{name: "text/plain", method: "POST", target: "/v1/projections", ctype: "text/plain", body: fixed(valid), length: int64(len(valid)), status: 415, code: "unsupported_media_type"},
		{name: "form", method: "POST", target: "/v1/projections", ctype: "application/x-www-form-urlencoded", body: fixed(valid), length: int64(len(valid)), status: 415, code: "unsupported_media_type"},
		{name: "multipart", method: "POST", target: "/v1/projections", ctype: "multipart/form-data; boundary=x", body: fixed(valid), length: int64(len(valid)), status: 415, code: "unsupported_media_type"},
		{name: "JSON in Latin-1", method: "POST", target: "/v1/projections", ctype: "application/json; charset=iso-8859-1", body: fixed(valid), length: int64(len(valid)), status: 415, code: "unsupported_media_type"},
		{name: "malformed media type", method: "POST", target: "/v1/projections", ctype: "application/json;;;", body: fixed(valid), length: int64(len(valid)), status: 415, code: "unsupported_media_type"},
		{name: "batch as CSV", method: "POST", target: "/v1/batch", ctype: "text/csv", body: fixed(valid), length: int64(len(valid)), status: 415, code: "unsupported_media_type"},
		// Methods and query parameters.
		{name: "DELETE a collection", method: "DELETE", target: "/v1/projections", status: 405, code: "method_not_allowed"},
		{name: "PUT a record", method: "PUT", target: "/v1/projections", ctype: json, body: fixed(valid), length: int64(len(valid)), status: 405, code: "method_not_allowed"},
		{name: "wait=forever", method: "POST", target: "/v1/projections?wait=forever", ctype: json, body: fixed(valid), length: int64(len(valid)), status: 400, code: "bad_request"},
		{name: "proof of index 2^64", method: "GET", target: "/v1/proof/18446744073709551616", status: 400, code: "bad_request"},
		{name: "proof at size -1", method: "GET", target: "/v1/proof/0?size=-1", status: 400, code: "bad_request"},
		{name: "consistency from=a", method: "GET", target: "/v1/consistency?from=a&to=1", status: 400, code: "bad_request"},
		{name: "malformed escape in an id", method: "GET", target: "/v1/projections/%zz", status: 400, plain: true},
		// Path traversal in ids, manifest roots and tile paths.
		{name: "manifest root ../../log.key", method: "GET", target: "/v1/manifests/..%2F..%2Flog.key", status: 400, code: "bad_request"},
		{name: "manifest root sha256:../../log.key", method: "GET", target: "/v1/manifests/sha256:..%2F..%2Flog.key", status: 400, code: "bad_request"},
		{name: "manifest ?root=../../log.key", method: "GET", target: "/v1/manifests/?root=../../log.key", status: 404, code: "not_found"},
		{name: "tile ../log.key", method: "GET", target: "/tile/../log.key", status: 404, code: "not_found"},
		{name: "tile ../../log.key escaped", method: "GET", target: "/tile/0/..%2F..%2F..%2Flog.key", status: 404, code: "not_found"},
		{name: "tile .state/treeState", method: "GET", target: "/tile/.state/treeState", status: 404, code: "not_found"},
		{name: "entries ../../log.key", method: "GET", target: "/tile/entries/../../log.key", status: 404, code: "not_found"},
		{name: "entries 000.p/../../../log.key", method: "GET", target: "/tile/entries/000.p/..%2F..%2F..%2Flog.key", status: 404, code: "not_found"},
		{name: "projection id ..", method: "GET", target: "/v1/projections/%2e%2e", status: 404, code: "not_found"},
		{name: "projection id ../../log.key", method: "GET", target: "/v1/projections/..%2F..%2Flog.key", status: 404, code: "not_found"},
		{name: "projection ?id=../../index.db", method: "GET", target: "/v1/projections?id=../../index.db", status: 404, code: "not_found"},
		{name: "compaction id ../../log.key", method: "GET", target: "/v1/compactions/..%2F..%2Flog.key", status: 404, code: "not_found"},
		{name: "item ../../log.key", method: "GET", target: "/v1/items/..%2F..%2Flog.key", status: 400, code: "bad_request"},
		{name: "source proof of ../log.key", method: "GET", target: "/v1/compactions/x/sources/..%2Flog.key/proof", status: 400, code: "bad_request"},
		{name: "checkpoint ../log.key", method: "GET", target: "/v1/checkpoints/..%2Flog.key", status: 400, code: "bad_request"},
		{name: "/log.key", method: "GET", target: "/log.key", status: 404, code: "not_found"},
		{name: "/log/.state/treeState", method: "GET", target: "/log/.state/treeState", status: 404, code: "not_found"},
		{name: "/index.db", method: "GET", target: "/index.db", status: 404, code: "not_found"},
		// Batches.
		{name: "batch of 100,001 lines", method: "POST", target: "/v1/batch", ctype: "application/x-ndjson", body: fixed(tooManyLines), length: int64(len(tooManyLines)), status: 413, code: "too_large"},
		{name: "batch, Content-Length over 64 MiB", method: "POST", target: "/v1/batch", ctype: "application/x-ndjson", body: endlessJSON, length: batchCap + 1, status: 413, code: "too_large", maxSent: 64 << 20},
		{name: "batch, endless chunked body", method: "POST", target: "/v1/batch", ctype: "application/x-ndjson", body: endlessJSON, length: -1, status: 413, code: "too_large", maxSent: 192 << 20, slowOK: true},
	}
	// One batch whose every line is abusive (and one empty line).
	var lines [][]byte
	var want []batchLineWant
	add := func(line []byte, status int, code string) {
		lines = append(lines, line)
		want = append(want, batchLineWant{status, code})
	}
	add(deepArrays, 400, "record_invalid")
	add(deepObjects, 400, "record_invalid")
	add(wide, 400, "record_invalid")
	add(mutate(`"draft-ferro`, "\"draft-\xffferro"), 400, "record_invalid")
	add(mutate(`"draft-ferro`, `"draft-\udc00ferro`), 400, "record_invalid")
	add(mutate(projectionID, projectionID+","+projectionID), 400, "record_invalid")
	add(mutate(`"total":3`, `"total":1e1000`), 400, "record_invalid")
	add(mutate(`"authentication_failed":0`, `"authentication_failed":-0`), 400, "record_invalid")
	add(mutate(`"total":3`, `"total":NaN`), 400, "record_invalid")
	add(mutate(`"byte_length":`, `"byte_length":9007199254740993,"x":`), 400, "record_invalid")
	add(nil, 204, "")
	add([]byte(`{"eccr_version":"1.0"}`), 400, "record_invalid")
	add([]byte(`}{`), 400, "record_invalid")
	add(string900KB, 400, "record_invalid")
	add(repeat(`{"a":"`, 'a', 2<<20, `"}`), 413, "too_large")
	add(string10MB, 413, "too_large")
	batch := append(bytes.Join(lines, []byte("\n")), '\n')
	c = append(c, hostileCase{name: "batch of abusive lines", method: "POST", target: "/v1/batch", ctype: "application/x-ndjson", body: fixed(batch), length: int64(len(batch)), status: 200, lines: want})
	return c
}

// manyMembers returns an object with n distinct members, each "xxxx":0.
func manyMembers(n int) []byte {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 0, n*9+2)
	b = append(b, '{')
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"', digits[i/36/36/36%36], digits[i/36/36%36], digits[i/36%36], digits[i%36], '"', ':', '0')
	}
	return append(b, '}')
}

// endlessJSON is a body that never ends: {"a":"aaaa…
func endlessJSON() io.Reader {
	return io.MultiReader(strings.NewReader(`{"a":"`), endless{})
}

type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// dribble sends data one byte at a time, every so often.
type dribble struct {
	data  []byte
	every time.Duration
}

func (d *dribble) Read(p []byte) (int, error) {
	if len(d.data) == 0 {
		return 0, io.EOF
	}
	time.Sleep(d.every)
	p[0] = d.data[0]
	d.data = d.data[1:]
	return 1, nil
}

// hostileResult is what the server did with one abusive request.
type hostileResult struct {
	status  int
	code    string
	detail  string
	lines   []api.BatchResult
	sent    int64 // body bytes the server took before it answered or closed
	elapsed time.Duration
	err     error
}

// send makes one abusive request on a fresh connection, writing the body
// while it reads the answer, as a real client would.
func (c *hostileCase) send(addr string) hostileResult {
	start := time.Now()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return hostileResult{err: err}
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	var sent atomic.Int64
	wrote := make(chan struct{})
	if c.slow && c.body == nil {
		// Headers, one byte at a time, never finished.
		head := c.method + " " + c.target + " HTTP/1.1\r\nHost: memtrail\r\nX-Slow: "
		go func() {
			defer close(wrote)
			for i := 0; ; i++ {
				b := byte('a')
				if i < len(head) {
					b = head[i]
				}
				if _, err := conn.Write([]byte{b}); err != nil {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		return c.answer(conn, start, wrote, &sent)
	}
	var head strings.Builder
	fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: memtrail\r\n", c.method, c.target)
	if c.ctype != "" {
		fmt.Fprintf(&head, "Content-Type: %s\r\n", c.ctype)
	}
	switch {
	case c.body == nil:
	case c.length < 0:
		head.WriteString("Transfer-Encoding: chunked\r\n")
	default:
		fmt.Fprintf(&head, "Content-Length: %d\r\n", c.length)
	}
	head.WriteString("Connection: close\r\n\r\n")
	if _, err := io.WriteString(conn, head.String()); err != nil {
		return hostileResult{err: err}
	}
	if c.body != nil {
		go func() {
			defer close(wrote)
			var w io.Writer = &countWriter{w: conn, n: &sent}
			if c.length < 0 {
				cw := httputil.NewChunkedWriter(w)
				if _, err := io.Copy(cw, c.body()); err == nil {
					cw.Close()
					io.WriteString(w, "\r\n")
				}
				return
			}
			io.Copy(w, io.LimitReader(c.body(), c.length))
		}()
	} else {
		close(wrote)
	}
	return c.answer(conn, start, wrote, &sent)
}

// answer reads the answer to c from conn, then closes conn and waits for
// the body's writer to stop.
func (c *hostileCase) answer(conn net.Conn, start time.Time, wrote chan struct{}, sent *atomic.Int64) hostileResult {
	var res hostileResult
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		conn.Close()
		<-wrote
		var ne net.Error
		if c.plain && !(errors.As(err, &ne) && ne.Timeout()) {
			// Cut off, the answer lost to the reset of a connection the
			// client was still writing.
			return hostileResult{elapsed: time.Since(start), detail: "connection closed: " + err.Error()}
		}
		return hostileResult{err: fmt.Errorf("no answer: %w", err), elapsed: time.Since(start)}
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	res.elapsed = time.Since(start)
	res.status = resp.StatusCode
	conn.Close() // stops an endless body
	<-wrote
	res.sent = sent.Load()
	if c.plain {
		// Go's server answers and closes while the client still writes:
		// the connection may be reset before the text is read.
		res.detail = string(bytes.TrimSpace(raw))
		return res
	}
	if err != nil {
		res.err = fmt.Errorf("reading the answer: %w", err)
		return res
	}
	if resp.StatusCode == http.StatusOK && c.lines != nil {
		for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
			var br api.BatchResult
			if err := json.Unmarshal(line, &br); err != nil {
				res.err = fmt.Errorf("batch answer line %q: %w", line, err)
				return res
			}
			res.lines = append(res.lines, br)
		}
		return res
	}
	var ref api.Refusal
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		res.err = fmt.Errorf("answer has Content-Type %q: %.200s", ct, raw)
		return res
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		res.err = fmt.Errorf("answer is not a JSON refusal: %w: %.200s", err, raw)
		return res
	}
	res.code, res.detail = ref.Code, ref.Detail
	return res
}

type countWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// check reports how res differs from what c must get, or "".
func (c *hostileCase) check(res hostileResult) string {
	if res.err != nil {
		return res.err.Error()
	}
	if c.plain && res.status == 0 {
		// Closed without an answer (see answer); only the time matters.
	} else if c.slowOK && res.status == http.StatusRequestTimeout && res.code == "request_timeout" {
		// Cut off by the read timeout before the cap was reached.
	} else if res.status != c.status || res.code != c.code {
		return fmt.Sprintf("answer %d %q (%s), want %d %q", res.status, res.code, res.detail, c.status, c.code)
	}
	if c.status >= 400 && res.detail == "" {
		return "refusal without detail"
	}
	if c.maxSent > 0 && res.sent >= c.maxSent {
		return fmt.Sprintf("the server read %d body bytes before answering (cap far below %d)", res.sent, c.maxSent)
	}
	if c.slow && res.elapsed > hostileReadTimeout+3*time.Second {
		return fmt.Sprintf("answered after %s, want about %s", res.elapsed.Round(time.Millisecond), hostileReadTimeout)
	}
	if c.lines != nil {
		if len(res.lines) != len(c.lines) {
			return fmt.Sprintf("batch answered %d lines, want %d", len(res.lines), len(c.lines))
		}
		for i, w := range c.lines {
			got := res.lines[i]
			code := ""
			if got.Refusal != nil {
				code = got.Refusal.Code
			}
			if got.Line != i+1 || got.Status != w.status || code != w.code {
				return fmt.Sprintf("batch line %d: %d %q, want line %d: %d %q", got.Line, got.Status, code, i+1, w.status, w.code)
			}
		}
	}
	return ""
}

// legitRequest is one submission of the legitimate load.
type legitRequest struct {
	start   time.Duration // since the load began
	latency time.Duration
	acked   *api.Accepted // nil if it failed
	failure string
}

// legitLoad submits valid projection records from workers clients for d,
// each waiting for its answer before sending the next.
func legitLoad(t *testing.T, base string, signers *gen.Signers, prefix string, workers int, d time.Duration) []legitRequest {
	var mu sync.Mutex
	var out []legitRequest
	var seq atomic.Int64
	var wg sync.WaitGroup
	begin := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 30 * time.Second}
			for time.Since(begin) < d {
				r, _, err := signers.Projection(fmt.Sprintf("urn:%s:%d", prefix, seq.Add(1)), time.Now().UTC(), 2, 200)
				if err != nil {
					t.Error(err)
					return
				}
				t0 := time.Now()
				req := legitRequest{start: t0.Sub(begin)}
				resp, err := client.Post(base+"/v1/projections", "application/json", bytes.NewReader(r.Canonical()))
				if err != nil {
					req.failure = err.Error()
				} else {
					raw, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					var a api.Accepted
					if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &a) != nil {
						req.failure = fmt.Sprintf("%d %.200s", resp.StatusCode, raw)
					} else {
						req.acked = &a
					}
				}
				req.latency = time.Since(t0)
				mu.Lock()
				out = append(out, req)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

// loadStats summarises the legitimate requests started in some windows.
type loadStats struct {
	ok, failed int
	failures   []string
	span       time.Duration
	latencies  []time.Duration
}

func (s *loadStats) add(r legitRequest) {
	if r.acked == nil {
		s.failed++
		if len(s.failures) < 5 {
			s.failures = append(s.failures, r.failure)
		}
		return
	}
	s.ok++
	s.latencies = append(s.latencies, r.latency)
}

func (s *loadStats) rate() float64 { return float64(s.ok) / s.span.Seconds() }

func (s *loadStats) percentile(p float64) time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	l := slices.Clone(s.latencies)
	slices.Sort(l)
	return l[min(len(l)-1, int(float64(len(l))*p))]
}

// TestHostileHTTP attacks a running "memtrail serve" with every abusive
// request of hostileCases: each once on its own, then eight endless bodies
// at once, then all of them over and over from two clients and 32 slow
// clients while legitimate clients submit valid records, the attack on in
// every other second. Each abusive request must get its 4xx and code (late
// headers: the connection cut), nothing abusive may be logged, memory must
// stay bounded, every legitimate submission must succeed, and their rate
// under attack must not collapse. A ?wait=proof submission must outlive
// the short --read-timeout.
func TestHostileHTTP(t *testing.T) {
	bin := buildMemtrail(t)
	dir := t.TempDir()
	signers := gen.Deterministic(11)
	trustFile := filepath.Join(dir, "trust.json")
	if err := os.WriteFile(trustFile, receipts.MarshalTrust(signers.Trust(time.Now().Add(-time.Hour).UTC().Truncate(time.Second))), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, bin, filepath.Join(dir, "data"), trustFile,
		"--read-timeout", hostileReadTimeout.String(), "--checkpoint-interval", hostileCheckpoint.String())
	defer srv.stop(t)
	addr := strings.TrimPrefix(srv.url, "http://")

	valid, _, err := signers.Projection("urn:hostile:template", time.Now().UTC(), 1, 20)
	if err != nil {
		t.Fatal(err)
	}
	cases := hostileCases(t, valid.Canonical())
	size0 := integratedSize(t, srv.url)

	// ?wait=proof outlives --read-timeout: submit just after a checkpoint
	// is published, so the wait is about a whole checkpoint interval. (It
	// runs while the cases below are sent.)
	first, _, err := signers.Projection("urn:hostile:first", time.Now().UTC(), 1, 20)
	if err != nil {
		t.Fatal(err)
	}
	if _, st, err := post(t.Context(), http.DefaultClient, srv.url+"/v1/projections", first.Canonical()); err != nil || st != http.StatusCreated {
		t.Fatalf("a valid record: %d %v", st, err)
	}
	waitDone := make(chan struct{})
	go func() {
		defer close(waitDone)
		waitStart, err := waitForNewCheckpoint(srv.url)
		if err != nil {
			t.Error(err)
			return
		}
		r, _, err := signers.Projection("urn:hostile:wait", time.Now().UTC(), 1, 20)
		if err != nil {
			t.Error(err)
			return
		}
		resp, err := http.Post(srv.url+"/v1/projections?wait=proof", "application/json", bytes.NewReader(r.Canonical()))
		if err != nil {
			t.Error(err)
			return
		}
		var waited api.Accepted
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &waited) != nil || waited.Proof == "" {
			t.Errorf("?wait=proof with --read-timeout %s: %d %s", hostileReadTimeout, resp.StatusCode, raw)
			return
		}
		t.Logf("?wait=proof answered with its proof after %s (--read-timeout %s)", time.Since(waitStart).Round(time.Millisecond), hostileReadTimeout)
	}()

	// Every case once, on its own (the slow ones alongside the others).
	var slowWG sync.WaitGroup
	for i := range cases {
		c := &cases[i]
		run := func() {
			res := c.send(addr)
			if msg := c.check(res); msg != "" {
				t.Errorf("%s: %s", c.name, msg)
				return
			}
			t.Logf("%-40s %3d %-22s %6s  %s", c.name, res.status, res.code, res.elapsed.Round(time.Millisecond), res.detail)
		}
		if c.slow {
			slowWG.Add(1)
			go func() {
				defer slowWG.Done()
				run()
			}()
			continue
		}
		run()
	}
	slowWG.Wait()

	// Many endless bodies at once: each is cut off, at its cap (413), at
	// the read timeout (408), or once the large bodies held at once reach
	// the server's budget (503 pushback); memory stays bounded.
	var endlessWG sync.WaitGroup
	var endlessMu sync.Mutex
	endlessSeen := map[string]int{}
	for i := 0; i < 8; i++ {
		endlessWG.Add(1)
		go func(i int) {
			defer endlessWG.Done()
			c := hostileCase{method: "POST", target: "/v1/batch", ctype: "application/x-ndjson", body: endlessJSON, length: -1}
			if i%2 == 1 {
				c.target, c.ctype = "/v1/compactions", "application/json"
			}
			res := c.send(addr)
			key := fmt.Sprintf("%d %s", res.status, res.code)
			if res.err != nil {
				key = res.err.Error()
			}
			endlessMu.Lock()
			endlessSeen[key]++
			endlessMu.Unlock()
		}(i)
	}
	endlessWG.Wait()
	for k, n := range endlessSeen {
		if k != "413 too_large" && k != "408 request_timeout" && k != "503 pushback" {
			t.Errorf("8 endless bodies at once: %d answered %s, want 413 too_large, 408 request_timeout or 503 pushback", n, k)
		}
	}
	t.Logf("8 endless bodies at once: %v", endlessSeen)

	<-waitDone

	// The legitimate load runs throughout; the attack is on in every other
	// window. Interleaving the two conditions in one run keeps whatever
	// else the machine is doing from favouring either.
	const (
		workers = 8
		windows = 6
		window  = time.Second
	)
	var attacking, stopAbuse atomic.Bool
	var abuseWG sync.WaitGroup
	var abusive atomic.Int64
	var badMu sync.Mutex
	var bad []string
	attack := func(c *hostileCase) {
		if !attacking.Load() {
			time.Sleep(10 * time.Millisecond)
			return
		}
		res := c.send(addr)
		abusive.Add(1)
		if msg := c.check(res); msg != "" {
			badMu.Lock()
			if len(bad) < 10 {
				bad = append(bad, c.name+": "+msg)
			}
			badMu.Unlock()
		}
	}
	var fast, slow []*hostileCase
	for i := range cases {
		switch {
		case cases[i].slow:
			slow = append(slow, &cases[i])
		case cases[i].maxSent > 64<<20, cases[i].name == "batch of 100,001 lines":
			// Each of these makes the server buffer up to 64 MiB; they
			// ran above, once.
		default:
			fast = append(fast, &cases[i])
		}
	}
	const abusers, slowClients = 2, 32
	for a := 0; a < abusers; a++ {
		abuseWG.Add(1)
		go func(a int) {
			defer abuseWG.Done()
			for i := a; !stopAbuse.Load(); i++ {
				attack(fast[i%len(fast)])
			}
		}(a)
	}
	for a := 0; a < slowClients; a++ {
		abuseWG.Add(1)
		go func(a int) {
			defer abuseWG.Done()
			for !stopAbuse.Load() {
				attack(slow[a%len(slow)])
			}
		}(a)
	}
	go func() {
		for w := 0; w < windows; w++ {
			attacking.Store(w%2 == 1)
			time.Sleep(window)
		}
		attacking.Store(false)
	}()
	load := legitLoad(t, srv.url, signers, "hostile:legit", workers, windows*window)
	stopAbuse.Store(true)
	abuseWG.Wait()

	for _, msg := range bad {
		t.Errorf("under attack: %s", msg)
	}
	alone := &loadStats{span: windows / 2 * window}
	under := &loadStats{span: windows / 2 * window}
	acked := map[string]api.Accepted{}
	var lastID string
	for _, r := range load {
		if int(r.start/window)%2 == 1 {
			under.add(r)
		} else {
			alone.add(r)
		}
		if r.acked != nil {
			acked[r.acked.ID] = *r.acked
			lastID = r.acked.ID
		}
	}
	for name, st := range map[string]*loadStats{"alone": alone, "under attack": under} {
		if st.failed > 0 || st.ok == 0 {
			t.Errorf("legitimate load %s: %d succeeded, %d failed: %v", name, st.ok, st.failed, st.failures)
		}
	}
	ratio := under.rate() / alone.rate()
	t.Logf("legitimate load alone:        %d in %s, %.0f/s, p50 %s, p99 %s", alone.ok, alone.span, alone.rate(), alone.percentile(0.5), alone.percentile(0.99))
	t.Logf("legitimate load under attack: %d in %s, %.0f/s, p50 %s, p99 %s (%d abusive requests from %d clients, %d slow clients)", under.ok, under.span, under.rate(), under.percentile(0.5), under.percentile(0.99), abusive.Load(), abusers, slowClients)
	t.Logf("throughput ratio under attack: %.2f; p50 latency ratio %.2f", ratio, float64(under.percentile(0.5))/float64(alone.percentile(0.5)))
	if ratio < 0.1 {
		t.Errorf("legitimate throughput under attack is %.2f of its rate alone", ratio)
	}

	// Nothing abusive was logged: the log grew by exactly the legitimate
	// submissions, each where it was acknowledged.
	want := size0 + 2 + uint64(len(acked))
	if got := integratedSize(t, srv.url); got != want {
		t.Errorf("integrated size %d, want %d (%d before, 2 single, %d legitimate)", got, want, size0, len(acked))
	}
	waitIndexed(t, srv.url, lastID)
	checkAcked(t, srv.url, acked)
	if s := srv.stderr.tail(1 << 20); strings.Contains(s, "level=ERROR") || strings.Contains(s, "panic") {
		t.Errorf("the server logged errors under attack:\n%s", s)
	}
	hwm, err := peakRSS(srv.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server peak resident memory: %d MiB", hwm>>20)
	if hwm > 384<<20 {
		t.Errorf("server peak resident memory %d MiB: large bodies are not bounded", hwm>>20)
	}
}

// integratedSize returns the log's integrated size from GET /v1/log.
func integratedSize(t *testing.T, base string) uint64 {
	t.Helper()
	resp, err := http.Get(base + "/v1/log")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info api.LogInfo
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	return info.IntegratedSize
}

// waitForNewCheckpoint returns the moment the published checkpoint
// changes; something must have been sequenced since the last one.
func waitForNewCheckpoint(base string) (time.Time, error) {
	read := func() (string, error) {
		resp, err := http.Get(base + "/checkpoint")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	first, err := read()
	if err != nil {
		return time.Time{}, err
	}
	deadline := time.Now().Add(3 * hostileCheckpoint)
	for time.Now().Before(deadline) {
		cp, err := read()
		if err != nil {
			return time.Time{}, err
		}
		if cp != first {
			return time.Now(), nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("no new checkpoint within %s", 3*hostileCheckpoint)
}

// waitIndexed waits until a projection id is visible to lookups (the
// index trails the log by milliseconds).
func waitIndexed(t *testing.T, base, id string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/v1/projections?id=" + id)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is not indexed after 10s", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
