package log

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/transparency-dev/tessera/api/layout"
)

func TestCheckTile(t *testing.T) {
	for _, tc := range []struct {
		size int
		p    uint8
		ok   bool
	}{
		{256 * 32, 0, true},
		{44 * 32, 44, true},
		{256 * 32, 44, true}, // the full tile that replaced a partial one
		{255 * 32, 0, false},
		{43 * 32, 44, false},
		{44*32 - 1, 44, false},
		{0, 1, false},
		{257 * 32, 0, false},
	} {
		err := CheckTile(make([]byte, tc.size), tc.p)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrTileDamaged) {
			t.Errorf("CheckTile(%d bytes, %d) = %v, want ok %v", tc.size, tc.p, err, tc.ok)
		}
	}
}

func TestCheckEntryBundle(t *testing.T) {
	bundle := func(sizes ...int) []byte {
		var b []byte
		for _, n := range sizes {
			b = binary.BigEndian.AppendUint16(b, uint16(n))
			b = append(b, make([]byte, n)...)
		}
		return b
	}
	three := bundle(10, 0, 300)
	for _, tc := range []struct {
		name string
		raw  []byte
		p    uint8
		ok   bool
	}{
		{"whole", three, 3, true},
		{"more than its width", three, 2, true},
		{"fewer than its width", three, 4, false},
		{"cut inside an entry", three[:len(three)-1], 3, false},
		{"cut inside a length", three[:13], 3, false},
		{"empty", nil, 1, false},
	} {
		err := CheckEntryBundle(tc.raw, tc.p)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrTileDamaged) {
			t.Errorf("CheckEntryBundle(%s) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// TestCheckRightEdge logs 300 entries (a full level-0 tile, a partial one,
// a level-1 tile), then damages each file at the right edge of the tree in
// turn: Open refuses every damaged one with ErrTileDamaged, and opens again
// once the file is restored.
func TestCheckRightEdge(t *testing.T) {
	skey, _, err := GenerateLogKey("memtrail.test/tiles")
	if err != nil {
		t.Fatal(err)
	}
	s := gen.Deterministic(5)
	dir := t.TempDir()
	tl := openTestLog(t, dir, skey, s)
	var wg sync.WaitGroup
	for i := 0; i < 300; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if _, err := tl.Submit(context.Background(), tl.projection(fmt.Sprint("urn:tiles:", i))); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	if err := tl.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	tiles := filepath.Join(dir, tilesDir)
	if err := checkRightEdge(context.Background(), tiles); err != nil {
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
		if err := checkRightEdge(context.Background(), tiles); !errors.Is(err, ErrTileDamaged) {
			t.Errorf("checkRightEdge with %s damaged = %v, want ErrTileDamaged", tc.rel, err)
		}
		if _, err := Open(context.Background(), Config{Dir: dir, SigningKey: skey}); !errors.Is(err, ErrTileDamaged) {
			t.Errorf("Open with %s damaged = %v, want ErrTileDamaged", tc.rel, err)
		}
		os.WriteFile(path, good, 0o644)
	}
	tl = openTestLog(t, dir, skey, s)
	tl.mustSubmit(tl.projection("urn:tiles:after"))
	tl.Close(context.Background())
}
