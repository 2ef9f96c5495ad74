package backend

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestHTTPCapsAnswers: a hostile log answering more than a checkpoint, a
// hash tile or an entry bundle can hold gets an error naming the resource
// and the cap, never a buffer of whatever it sent.
func TestHTTPCapsAnswers(t *testing.T) {
	const huge = 64 << 20
	var size int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), size))
	}))
	defer srv.Close()
	h, err := NewHTTP(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cases := []struct {
		name string
		cap  int
		read func() ([]byte, error)
	}{
		{"checkpoint", 512 << 10, func() ([]byte, error) { return h.ReadCheckpoint(ctx) }},
		{"tile", 256 * 32, func() ([]byte, error) { return h.ReadTile(ctx, 0, 0, 0) }},
		{"tile", 256 * 32, func() ([]byte, error) { return h.ReadTile(ctx, 1, 3, 17) }},
		{"entry bundle", 256 * (2 + 65535), func() ([]byte, error) { return h.ReadEntryBundle(ctx, 0, 0) }},
		{"entry bundle", 256 * (2 + 65535), func() ([]byte, error) { return h.ReadEntryBundle(ctx, 5, 200) }},
	}
	for _, c := range cases {
		for _, n := range []int{c.cap + 1, huge} {
			size = n
			b, err := c.read()
			if err == nil {
				t.Errorf("%s: an answer of %d bytes was accepted (%d bytes read)", c.name, n, len(b))
				continue
			}
			if msg := err.Error(); !strings.Contains(msg, c.name) || !strings.Contains(msg, strconv.Itoa(c.cap)) {
				t.Errorf("%s: error %q does not name the resource and the cap %d", c.name, msg, c.cap)
			}
			if errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: an oversized answer reads as a missing resource: %v", c.name, err)
			}
		}
		size = c.cap
		if b, err := c.read(); err != nil || len(b) != c.cap {
			t.Errorf("%s: an answer of exactly the cap: %d bytes, %v", c.name, len(b), err)
		}
	}

	// The caps hold for the decoded answer: a small gzip answer that
	// inflates to 64 MiB is refused too.
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(make([]byte, huge))
	zw.Close()
	zsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb.Bytes())
	}))
	defer zsrv.Close()
	zh, err := NewHTTP(zsrv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := zh.ReadEntryBundle(ctx, 0, 0); err == nil || !strings.Contains(err.Error(), "entry bundle") {
		t.Errorf("gzip answer inflating to %d bytes: %d bytes read, %v", huge, len(b), err)
	}
}

// TestHTTPFetches: 404s are fs.ErrNotExist, a missing partial tile or
// bundle falls back to the full one, other statuses are errors, and a
// gzip-encoded answer is decoded.
func TestHTTPFetches(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/log/checkpoint", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("cp")) })
	mux.HandleFunc("/log/tile/0/000", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("full tile")) })
	mux.HandleFunc("/log/tile/entries/001.p/7", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("partial bundle")) })
	mux.HandleFunc("/log/tile/entries/002", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) })
	mux.HandleFunc("/log/tile/entries/004", func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Write([]byte("plain bundle"))
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		zw.Write([]byte("gzip bundle"))
		zw.Close()
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	h, err := NewHTTP(srv.URL+"/log", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if b, err := h.ReadCheckpoint(ctx); err != nil || string(b) != "cp" {
		t.Errorf("checkpoint: %q, %v", b, err)
	}
	if b, err := h.ReadTile(ctx, 0, 0, 9); err != nil || string(b) != "full tile" {
		t.Errorf("partial tile falling back to the full one: %q, %v", b, err)
	}
	if b, err := h.ReadEntryBundle(ctx, 1, 7); err != nil || string(b) != "partial bundle" {
		t.Errorf("partial bundle: %q, %v", b, err)
	}
	if _, err := h.ReadEntryBundle(ctx, 3, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing bundle: %v, want fs.ErrNotExist", err)
	}
	if _, err := h.ReadTile(ctx, 0, 4, 5); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing partial and full tile: %v, want fs.ErrNotExist", err)
	}
	if b, err := h.ReadEntryBundle(ctx, 4, 0); err != nil || string(b) != "gzip bundle" {
		t.Errorf("gzip bundle: %q, %v", b, err)
	}
	if _, err := h.ReadEntryBundle(ctx, 2, 0); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a 500 answer: %v, want an error that is not fs.ErrNotExist", err)
	}
}
