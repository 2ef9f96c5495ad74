package posixstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/datadir"
	"github.com/memtrail/memtrail/internal/gen"
	mlog "github.com/memtrail/memtrail/log"
	"github.com/memtrail/memtrail/log/store"
	"github.com/memtrail/memtrail/receipts"
	"github.com/transparency-dev/tessera/api/layout"
)

// openLog opens a log on the data directory dir.
func openLog(t *testing.T, dir, skey string, s *gen.Signers) (*mlog.Log, error) {
	t.Helper()
	parts, err := Open(context.Background(), Config{Dir: dir})
	if err != nil {
		return nil, err
	}
	return mlog.Open(context.Background(), mlog.Config{Storage: parts, SigningKey: skey, Trust: s.Trust(time.Now().Add(-time.Hour)),
		BatchMaxAge: 5 * time.Millisecond, CheckpointInterval: 100 * time.Millisecond})
}

// fill logs n projections, concurrently.
func fill(t *testing.T, l *mlog.Log, s *gen.Signers, prefix string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r, _, err := s.Projection(fmt.Sprint(prefix, i), time.Now().UTC(), 2, 64)
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := l.Submit(context.Background(), &receipts.Submission{Receipt: r}); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
}

// TestCheckRightEdge logs 300 entries (a full level-0 tile, a partial one,
// a level-1 tile), then damages each file at the right edge of the tree in
// turn: the driver refuses to open on every damaged one with
// ErrTileDamaged (and so does the log), and opens again once the file is
// restored.
func TestCheckRightEdge(t *testing.T) {
	skey, _, err := mlog.GenerateLogKey("memtrail.test/tiles")
	if err != nil {
		t.Fatal(err)
	}
	s := gen.Deterministic(5)
	dir := t.TempDir()
	l, err := openLog(t, dir, skey, s)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, l, s, "urn:tiles:", 300)
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	tiles := filepath.Join(dir, datadir.Tiles)
	rd, _ := NewDriver(tiles).Reader(context.Background())
	r := rd.(*Reader)
	if err := checkRightEdge(context.Background(), r); err != nil {
		t.Fatalf("checkRightEdge of a sound log: %v", err)
	}
	for _, tc := range []struct {
		rel    string
		damage func([]byte) []byte
	}{
		{layout.TilePath(0, 1, 44), func(b []byte) []byte { return b[:len(b)/2] }},
		{layout.TilePath(0, 1, 44), func(b []byte) []byte { return make([]byte, len(b)) }},
		{layout.TilePath(1, 0, 1), func(b []byte) []byte { return make([]byte, len(b)) }},
		{layout.TilePath(1, 0, 1), func(b []byte) []byte { return nil }},
		{layout.EntriesPath(1, 44), func(b []byte) []byte { return b[:len(b)-1] }},
		{layout.EntriesPath(1, 44), func(b []byte) []byte { b[len(b)-1] ^= 1; return b }},
	} {
		path := filepath.Join(tiles, filepath.FromSlash(tc.rel))
		good, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, tc.damage(append([]byte(nil), good...)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := checkRightEdge(context.Background(), r); !errors.Is(err, store.ErrTileDamaged) {
			t.Errorf("checkRightEdge with %s damaged = %v, want ErrTileDamaged", tc.rel, err)
		}
		if _, err := NewDriver(tiles).Open(context.Background(), store.DriverOptions{}); !errors.Is(err, store.ErrTileDamaged) {
			t.Errorf("Driver.Open with %s damaged = %v, want ErrTileDamaged", tc.rel, err)
		}
		if _, err := openLog(t, dir, skey, s); !errors.Is(err, mlog.ErrTileDamaged) {
			t.Errorf("log.Open with %s damaged = %v, want ErrTileDamaged", tc.rel, err)
		}
		os.WriteFile(path, good, 0o644)
	}
	l, err = openLog(t, dir, skey, s)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, l, s, "urn:tiles:after:", 1)
	l.Close(context.Background())
}
