package log

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/memtrail/memtrail/internal/datadir"
	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/log/posixstore"
	"github.com/transparency-dev/tessera/api/layout"
)

// fsckLog builds a closed log with projections, a compaction and a
// tombstone, and returns its directory.
func fsckLog(t *testing.T, n int) *testLog {
	tl := newTestLog(t)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if _, err := tl.Submit(context.Background(), tl.projection(fmt.Sprint("urn:p:", i))); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	items := gen.Items("f", 3)
	tl.mustSubmit(tl.compaction("urn:c:1", items, "", nil))
	tl.mustSubmit(tl.tombstone("urn:t:1", items[0].ItemDigest))
	if _, err := tl.WaitPublished(context.Background(), uint64(n+1)); err != nil {
		t.Fatal(err)
	}
	if err := tl.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tl
}

func kinds(r *FsckReport) map[string]int {
	m := map[string]int{}
	for _, p := range r.Problems {
		m[p.Kind]++
	}
	return m
}

func fsck(t *testing.T, tl *testLog, repair bool) *FsckReport {
	t.Helper()
	vkey, err := VerifierKey(tl.skey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := posixstore.OpenCheck(context.Background(), tl.dir, repair)
	if err != nil {
		t.Fatalf("OpenCheck: %v", err)
	}
	r, err := Fsck(context.Background(), c, FsckOptions{Repair: repair, VerifierKey: vkey})
	if err != nil {
		t.Fatalf("Fsck: %v", err)
	}
	return r
}

func TestFsckHealthy(t *testing.T) {
	tl := fsckLog(t, 600)
	r := fsck(t, tl, false)
	if !r.OK() || len(r.Problems) != 0 {
		t.Fatalf("healthy log: %+v", r.Problems)
	}
	if r.TreeSize != 602 || r.PublishedSize != 602 || r.Entries["projection"] != 600 || r.Entries["compaction"] != 1 {
		t.Errorf("report = %+v", r)
	}
}

func TestFsckRepairsIndex(t *testing.T) {
	tl := fsckLog(t, 300)
	db := filepath.Join(tl.dir, "index.db")
	// A wrong row: the index maps an id to another entry.
	// A wrong index: entry 7 indexed under an id it does not have.
	parts := openStorage(t, tl.dir)
	reader, err := parts.Driver.Reader(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	size, err := reader.IntegratedSize(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	entries, err := (&Log{manifests: parts.Manifests}).readEntriesFrom(context.Background(), reader, 0, size, size)
	if err != nil {
		t.Fatal(err)
	}
	entries[7].ID = "urn:p:not-entry-7"
	if err := parts.Index.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := parts.Index.Apply(context.Background(), 0, entries); err != nil {
		t.Fatal(err)
	}
	parts.Close()
	r := fsck(t, tl, false)
	if kinds(r)["index_mismatch"] != 1 || r.OK() {
		t.Fatalf("problems = %+v", r.Problems)
	}
	r = fsck(t, tl, true)
	if !r.OK() {
		t.Fatalf("after repair: %+v", r.Problems)
	}
	if r = fsck(t, tl, false); len(r.Problems) != 0 {
		t.Fatalf("after repair, fsck finds %+v", r.Problems)
	}
	// A destroyed index file.
	os.WriteFile(db, []byte("this is not a database, just garbage bytes to fail the header check"), 0o644)
	os.Remove(db + "-wal")
	os.Remove(db + "-shm")
	r = fsck(t, tl, false)
	if kinds(r)["index_damaged"] != 1 {
		t.Fatalf("problems = %+v", r.Problems)
	}
	if r = fsck(t, tl, true); !r.OK() {
		t.Fatalf("after repair: %+v", r.Problems)
	}
	// A missing index: reported, and not as fine; the check creates
	// nothing; --repair rebuilds it.
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(db + suffix)
	}
	r = fsck(t, tl, false)
	if kinds(r)["index_missing"] != 1 || r.OK() {
		t.Fatalf("missing index: OK %v, problems = %+v", r.OK(), r.Problems)
	}
	if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("fsck without --repair created the index: %v", err)
	}
	if r = fsck(t, tl, true); !r.OK() {
		t.Fatalf("after repair: %+v", r.Problems)
	}
	// The repaired log opens and refuses replays.
	tl2 := openTestLog(t, tl.dir, tl.skey, tl.s)
	defer tl2.Close(context.Background())
	tl2.wantRefused(tl2.projection("urn:p:7"), "projection_replay")
}

func TestFsckTornTile(t *testing.T) {
	tl := fsckLog(t, 600)
	tile := filepath.Join(tl.dir, datadir.Tiles, filepath.FromSlash(layout.TilePath(0, 1, 0)))
	b, err := os.ReadFile(tile)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(tile, b[:len(b)/2], 0o644)
	r := fsck(t, tl, false)
	if kinds(r)["tile_mismatch"] != 1 || r.OK() {
		t.Fatalf("problems = %+v", r.Problems)
	}
	if r = fsck(t, tl, true); !r.OK() {
		t.Fatalf("after repair: %+v", r.Problems)
	}
	if got, _ := os.ReadFile(tile); string(got) != string(b) {
		t.Errorf("repaired tile differs from the original")
	}
}

func TestFsckDamageItCannotRepair(t *testing.T) {
	tl := fsckLog(t, 10)
	ctx := context.Background()
	// A missing manifest is reported, with what to do.
	ms, err := posixstore.NewFileManifestStore(filepath.Join(tl.dir, datadir.Manifests))
	if err != nil {
		t.Fatal(err)
	}
	roots, _ := ms.Roots(ctx)
	if len(roots) != 1 {
		t.Fatalf("%d manifests", len(roots))
	}
	ms.Remove(ctx, roots[0])
	r := fsck(t, tl, true)
	if kinds(r)["manifest_missing"] != 1 || r.OK() {
		t.Fatalf("problems = %+v", r.Problems)
	}
	// An altered entry: the entries no longer hash to the signed root.
	bundle := filepath.Join(tl.dir, datadir.Tiles, filepath.FromSlash(layout.EntriesPath(0, 12)))
	b, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	b[100] ^= 1
	os.WriteFile(bundle, b, 0o644)
	r = fsck(t, tl, true)
	if kinds(r)["entries_do_not_match_tree"] == 0 || r.OK() {
		t.Fatalf("problems = %+v", r.Problems)
	}
}

// TestFsckLocatesDamagedEntry: one byte flipped in an entry bundle is
// named — the entry, its bundle and file — and the tiles, which hold what
// the log committed to, are not offered for rewriting.
func TestFsckLocatesDamagedEntry(t *testing.T) {
	for _, size := range []uint64{600, 10} { // a full bundle, and the partial one at the edge
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			tl := fsckLog(t, int(size))
			reader, _ := posixstore.NewDriver(filepath.Join(tl.dir, datadir.Tiles)).Reader(context.Background())
			size, err := reader.IntegratedSize(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			rel := filepath.FromSlash(layout.EntriesPath(0, layout.PartialTileSize(0, 0, size)))
			bundle := filepath.Join(tl.dir, datadir.Tiles, rel)
			b, err := os.ReadFile(bundle)
			if err != nil {
				t.Fatal(err)
			}
			b[100] ^= 1 // inside entry 0
			os.WriteFile(bundle, b, 0o644)
			for _, repair := range []bool{false, true} {
				r := fsck(t, tl, repair)
				var found *Problem
				for i, p := range r.Problems {
					if p.Kind == "entry_mismatch" {
						found = &r.Problems[i]
					}
					if (p.Kind == "tile_mismatch" || p.Kind == "tile_missing") && (p.Repairable || p.Repaired) {
						t.Errorf("repair %v: %s offered for repair although the entries are damaged: %s", repair, p.Kind, p.Detail)
					}
				}
				if found == nil || found.Index == nil || *found.Index != 0 || found.Repairable ||
					!strings.Contains(found.Detail, "entry bundle 0 (file "+filepath.ToSlash(filepath.Join(datadir.Tiles, rel))+")") || !strings.Contains(found.Detail, "restore that file") {
					t.Errorf("repair %v: entry_mismatch = %+v; problems %+v", repair, found, r.Problems)
				}
				if r.OK() {
					t.Errorf("repair %v: fsck is OK with a damaged entry", repair)
				}
			}
		})
	}
}
