package api

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	mlog "github.com/memtrail/memtrail/log"
	"github.com/transparency-dev/tessera/api/layout"
)

func FuzzTilePath(f *testing.F) {
	for _, s := range []string{"0/000", "1/x001/234.p/7", "63/x999/999", "0/001.p/44", "0/0", "64/000", "0/../x", "0/000.p/0", "0/000.p/256"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		level, index, partial, ok := parseTilePath(p)
		if !ok {
			return
		}
		again, index2, partial2, ok2 := parseTilePath(strings.TrimPrefix(layout.TilePath(level, index, partial), "tile/"))
		if !ok2 || again != level || index2 != index || partial2 != partial || strings.Contains(p, "..") {
			t.Fatalf("parseTilePath(%q) = %d %d %d, not canonical", p, level, index, partial)
		}
	})
}

var (
	fuzzOnce    sync.Once
	fuzzHandler http.Handler
)

// FuzzHTTP drives the handler with arbitrary methods, paths, queries and
// bodies: no panic, no 500, and every error answer is a JSON refusal.
func FuzzHTTP(f *testing.F) {
	fuzzOnce.Do(func() {
		dir, _ := mkdirTemp()
		skey, _, _ := mlog.GenerateLogKey("memtrail.test/fuzz")
		s := gen.Deterministic(3)
		l, err := mlog.Open(context.Background(), mlog.Config{Storage: openStorage(f, dir), SigningKey: skey, Trust: s.Trust(time.Now().Add(-time.Hour)), BatchMaxAge: time.Millisecond, CheckpointInterval: 100 * time.Millisecond})
		if err != nil {
			f.Fatal(err)
		}
		fuzzHandler = New(l, Config{WaitTimeout: time.Second}).Handler()
	})
	seeds := []struct{ method, target, ctype, body string }{
		{"GET", "/v1/projections?id=urn:x", "", ""},
		{"GET", "/v1/proof/0?size=1", "", ""},
		{"GET", "/v1/consistency?from=0&to=99999999999999999999", "", ""},
		{"GET", "/v1/items/sha256:00", "", ""},
		{"GET", "/v1/manifests/..%2Flog.key", "", ""},
		{"GET", "/tile/0/x001/002.p/3", "", ""},
		{"POST", "/v1/batch?wait=proof", "application/x-ndjson", "{}\n\n{\"@version\":1}\n"},
		{"POST", "/v1/projections", "application/json", `{"a":1e1000}`},
		{"POST", "/v1/compactions", "application/json", `{"eccr":{},"manifest":[]}`},
		{"GET", "/v1/checkpoints/18446744073709551615", "", ""},
		{"GET", "/v1/compactions/x/sources/y/proof", "", ""},
	}
	for _, s := range seeds {
		f.Add(s.method, s.target, s.ctype, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, method, target, ctype string, body []byte) {
		if !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \r\n\t#") || len(target) > 4096 {
			return
		}
		switch method {
		case "GET", "POST", "PUT", "DELETE", "HEAD":
		default:
			return
		}
		req, err := http.NewRequest(method, "http://memtrail.test"+target, bytes.NewReader(body))
		if err != nil {
			return
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		w := httptest.NewRecorder()
		fuzzHandler.ServeHTTP(w, req.WithContext(ctx))
		if w.Code >= 500 && w.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s: %d %s", method, target, w.Code, w.Body.Bytes())
		}
		if w.Code >= 400 && method != "HEAD" && !bytes.HasPrefix(w.Body.Bytes(), []byte(`{"code":`)) {
			t.Fatalf("%s %s: %d without a JSON refusal: %q", method, target, w.Code, w.Body.Bytes())
		}
	})
}

func mkdirTemp() (string, error) { return os.MkdirTemp("", "memtrail-fuzz-") }
