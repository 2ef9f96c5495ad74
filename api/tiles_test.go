package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	mlog "github.com/memtrail/memtrail/log"
	"github.com/transparency-dev/tessera/api/layout"
)

// TestTilesReadThroughReader: tiles and bundles are read through the log's
// reader, so a partial tile or bundle the storage no longer holds, because
// the full one replaced it, is served as the first hashes or entries of
// the full one: the partial resource's bytes.
func TestTilesReadThroughReader(t *testing.T) {
	dir := t.TempDir()
	skey, _, err := mlog.GenerateLogKey("memtrail.test/api")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := gen.NewSigners()
	l, err := mlog.Open(context.Background(), mlog.Config{Storage: openStorage(t, dir), SigningKey: skey,
		Trust: s.Trust(time.Now().Add(-time.Hour)), BatchMaxAge: time.Millisecond, CheckpointInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	srv := httptest.NewServer(New(l, Config{}).Handler())
	defer srv.Close()
	ts := &testServer{t: t, l: l, s: s, srv: srv}
	// One at a time, so that the tree has size 5 once: tile 0.p/5 and
	// bundle 0.p/5 are written.
	for i := 0; i < 5; i++ {
		if code, _, body := ts.do("POST", "/v1/projections", "application/json", ts.projection(fmt.Sprint("urn:p:", i))); code != 201 {
			t.Fatalf("submit %d: %d %s", i, code, body)
		}
	}
	tilePath, bundlePath := layout.TilePath(0, 0, 5), layout.EntriesPath(0, 5)
	code, _, partialTile := ts.do("GET", "/"+tilePath, "", nil)
	_, _, partialBundle := ts.do("GET", "/"+bundlePath, "", nil)
	if code != 200 || len(partialTile) != 5*32 {
		t.Fatalf("GET /%s = %d, %d bytes", tilePath, code, len(partialTile))
	}
	// Fill the tile, and remove the partial files as Tessera's garbage
	// collection does once the full ones are written.
	for i := 5; i < 260; i++ {
		ts.do("POST", "/v1/projections", "application/json", ts.projection(fmt.Sprint("urn:p:", i)))
	}
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := l.WaitPublished(wctx, 259); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{tilePath, bundlePath} {
		if err := os.Remove(filepath.Join(dir, "log", filepath.FromSlash(rel))); err != nil {
			t.Fatal(err)
		}
	}
	for rel, want := range map[string][]byte{tilePath: partialTile, bundlePath: partialBundle} {
		if code, _, got := ts.do("GET", "/"+rel, "", nil); code != 200 || !bytes.Equal(got, want) {
			t.Errorf("GET /%s once the full resource replaced it = %d, %d bytes; want 200 and the %d bytes served before", rel, code, len(got), len(want))
		}
	}
	// A partial resource beyond the tree is still not found.
	if code, _, _ := ts.do("GET", "/"+layout.TilePath(0, 1, 200), "", nil); code != 404 {
		t.Errorf("GET of a partial tile beyond the tree = %d, want 404", code)
	}
}
