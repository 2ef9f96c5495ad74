package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
)

// TestLookupHostileLog: what a log answers is read up to a cap, must be a
// memtrail answer, and is shown so that it cannot drive the terminal.
func TestLookupHostileLog(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/items/"):
			w.Write(bytes.Repeat([]byte(" "), maxListAnswer+10))
		case strings.HasPrefix(r.URL.Path, "/v1/projections/"):
			w.Write([]byte(`{"index": 1, "kind": "projection", "id": "urn:\u001b[2Jevil", "leaf_hash": "x\u0007", "receipt": {}}`))
		case strings.HasPrefix(r.URL.Path, "/v1/compactions/"):
			w.Write([]byte("<html>not json</html>"))
		case r.URL.Path == "/v1/log":
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("<html>\x1b[31mbad gateway</html>"))
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"code": "not_found", "detail": "no"}`))
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		args []string
		code int
		out  string
		err  string
	}{
		{[]string{"item", digest}, 1, "", "is over 16777216 bytes: not what a memtrail log answers"},
		{[]string{"compaction", "urn:c:1"}, 1, "", "is not what a memtrail log answers"},
		{[]string{"log"}, 1, "", `memtrail: error: 502 Bad Gateway: "<html>\x1b[31mbad gateway</html>"`},
		{[]string{"projection", "urn:p:1"}, 0, `projection "urn:\x1b[2Jevil"`, ""},
	} {
		code, out, errOut := runCLI(t, dir, append([]string{"lookup", "--log", srv.URL}, tc.args...)...)
		if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errOut, tc.err) {
			t.Errorf("lookup %v: exit %d\n%s%s\nwant exit %d, %q, %q", tc.args, code, out, errOut, tc.code, tc.out, tc.err)
		}
		if i := strings.IndexFunc(out+errOut, func(r rune) bool { return r != '\n' && !unicode.IsPrint(r) }); i >= 0 {
			t.Errorf("lookup %v wrote a control character:\n%q", tc.args, out+errOut)
		}
	}
}

// answerTransport answers every request with one body and status.
type answerTransport struct {
	status int
	body   []byte
}

func (a answerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: a.status, Status: http.StatusText(a.status), Body: io.NopCloser(bytes.NewReader(a.body)), Request: r}, nil
}

// FuzzLookupAnswer: whatever a log answers, every form of lookup returns
// an error or text with no control character but newlines.
func FuzzLookupAnswer(f *testing.F) {
	for _, s := range []string{
		`{"item":"sha256:00","state":"purged","compactions":[{"id":"urn:c:1","index":0,"state":"superseded","superseded_by":"urn:c:2"}],"tombstone":{"id":"urn:t:1","index":1,"purged_at":1796083200},"open_obligations":[]}`,
		`{"index":0,"leaf_hash":"AAAA","kind":"compaction","id":"urn:c:1","receipt":{"item_digest":"x","purged_at":-1},"proof":"","state":"awaiting_recompaction","manifest_root":"sha256:00","item_count":2,"purged_items":1}`,
		`{"obligations":[{"item":"i","tombstone_id":"t","tombstone_index":1,"purged_at":9007199254740993,"compaction_id":"c","compaction_index":0}],"count":5,"truncated":true}`,
		`{"origin":"o\u0000","verifier_key":"k","tree_size":1,"integrated_size":2}`,
		`{"code":"not_found","detail":"\u001b"}`,
	} {
		f.Add([]byte(s), 200)
		f.Add([]byte(s), 404)
	}
	f.Fuzz(func(t *testing.T, body []byte, status int) {
		if status < 100 || status > 599 {
			return
		}
		for _, run := range []func(lk *lookup) error{
			func(lk *lookup) error { return lk.entry("projection", "urn:p:1") },
			func(lk *lookup) error { return lk.entry("compaction", "urn:c:1") },
			func(lk *lookup) error { return lk.entry("tombstone", "urn:t:1") },
			func(lk *lookup) error { return lk.item("sha256:" + strings.Repeat("0", 64)) },
			func(lk *lookup) error { return lk.obligations(10) },
			func(lk *lookup) error { return lk.logInfo() },
		} {
			lk := &lookup{client: &http.Client{Transport: answerTransport{status, body}}, base: "http://log.test"}
			err := run(lk)
			text := lk.out.String()
			if err != nil {
				text += err.Error()
			}
			if i := strings.IndexFunc(text, func(r rune) bool { return r != '\n' && !unicode.IsPrint(r) }); i >= 0 {
				t.Fatalf("control character in %q", text)
			}
		}
	})
}
