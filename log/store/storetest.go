package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/memtrail/memtrail/receipts"
)

// TestIndex runs the contract of Index against the implementation that
// open returns (a new, empty index on each call). Every Index
// implementation's tests call it.
func TestIndex(t *testing.T, open func(t *testing.T) Index) {
	ctx := context.Background()
	proj := func(i uint64) Entry {
		return Entry{Index: i, Kind: receipts.KindProjection, ID: fmt.Sprint("urn:p:", i)}
	}
	t.Run("empty", func(t *testing.T) {
		x := open(t)
		if wm, err := x.Watermark(ctx); err != nil || wm != 0 {
			t.Fatalf("Watermark() = %d, %v; want 0", wm, err)
		}
		if _, err := x.LookupID(ctx, receipts.KindProjection, "urn:none"); !errors.Is(err, ErrNotFound) {
			t.Errorf("LookupID of an unknown id = %v, want ErrNotFound", err)
		}
		if _, err := x.Compaction(ctx, "urn:none"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Compaction of an unknown id = %v, want ErrNotFound", err)
		}
		if _, err := x.Tombstone(ctx, receipts.Digest(nil)); !errors.Is(err, ErrNotFound) {
			t.Errorf("Tombstone of an unknown item = %v, want ErrNotFound", err)
		}
	})
	t.Run("apply in order", func(t *testing.T) {
		x := open(t)
		var run []Entry
		for i := uint64(0); i < 1000; i++ {
			run = append(run, proj(i))
		}
		if err := x.Apply(ctx, 0, run); err != nil {
			t.Fatal(err)
		}
		if err := x.Apply(ctx, 5, []Entry{proj(5)}); !errors.Is(err, ErrOutOfOrder) {
			t.Errorf("Apply before the watermark = %v, want ErrOutOfOrder", err)
		}
		if err := x.Apply(ctx, 1001, []Entry{proj(1001)}); !errors.Is(err, ErrOutOfOrder) {
			t.Errorf("Apply after a gap = %v, want ErrOutOfOrder", err)
		}
		if wm, _ := x.Watermark(ctx); wm != 1000 {
			t.Errorf("watermark %d, want 1000 (refused applies change nothing)", wm)
		}
		for _, i := range []uint64{0, 1, 499, 999} {
			if got, err := x.LookupID(ctx, receipts.KindProjection, fmt.Sprint("urn:p:", i)); err != nil || got != i {
				t.Errorf("LookupID(urn:p:%d) = %d, %v", i, got, err)
			}
		}
		if _, err := x.LookupID(ctx, receipts.KindTombstone, "urn:p:1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("ids are per kind: %v", err)
		}
		if c, _ := x.Counts(ctx); c[receipts.KindProjection] != 1000 {
			t.Errorf("Counts = %v", c)
		}
	})
	t.Run("apply is atomic", func(t *testing.T) {
		x := open(t)
		if err := x.Apply(ctx, 0, []Entry{proj(0)}); err != nil {
			t.Fatal(err)
		}
		// An id already indexed, in the middle of a run: the whole run is
		// refused and nothing of it is visible.
		dup := []Entry{proj(1), proj(2), {Index: 3, Kind: receipts.KindProjection, ID: "urn:p:0"}, proj(4)}
		if err := x.Apply(ctx, 1, dup); err == nil {
			t.Fatal("Apply of an id already indexed succeeded")
		}
		if wm, _ := x.Watermark(ctx); wm != 1 {
			t.Errorf("watermark %d after a refused run, want 1", wm)
		}
		if _, err := x.LookupID(ctx, receipts.KindProjection, "urn:p:1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("part of a refused run is visible: %v", err)
		}
	})
	t.Run("lineage", func(t *testing.T) {
		x := open(t)
		a, b, c := receipts.Digest([]byte("a")), receipts.Digest([]byte("b")), receipts.Digest([]byte("c"))
		run := []Entry{
			{Index: 0, Kind: receipts.KindCompaction, ID: "urn:c:1", ManifestRoot: receipts.Digest([]byte("m1")), Items: []string{a, b, c}},
			{Index: 1, Kind: receipts.KindTombstone, ID: "urn:t:1", Item: b, PurgedAt: 100},
		}
		if err := x.Apply(ctx, 0, run); err != nil {
			t.Fatal(err)
		}
		ci, err := x.Compaction(ctx, "urn:c:1")
		if err != nil || ci.State() != "awaiting_recompaction" || ci.PurgedItems != 1 || ci.PurgedSinceAt != 1 || ci.ItemCount != 3 {
			t.Fatalf("compaction after a purge = %+v, %v", ci, err)
		}
		if err := x.Apply(ctx, 2, []Entry{{Index: 2, Kind: receipts.KindCompaction, ID: "urn:c:2", ManifestRoot: receipts.Digest([]byte("m2")), Items: []string{a, c}, Supersedes: "urn:c:1"}}); err != nil {
			t.Fatal(err)
		}
		ci, _ = x.Compaction(ctx, "urn:c:1")
		if ci.State() != "superseded" || ci.SupersededBy != "urn:c:2" || ci.SupersededAt != 2 {
			t.Errorf("superseded compaction = %+v", ci)
		}
		inc, err := x.CompactionsIncluding(ctx, a)
		if err != nil || len(inc) != 2 || inc[0].ID != "urn:c:1" || inc[1].ID != "urn:c:2" {
			t.Errorf("CompactionsIncluding(a) = %+v, %v", inc, err)
		}
		ts, err := x.TombstonesOf(ctx, []string{a, b, c})
		if err != nil || len(ts) != 1 || ts[b] == nil || ts[b].Index != 1 || ts[b].PurgedAt != 100 {
			t.Errorf("TombstonesOf = %+v, %v", ts, err)
		}
		if tb, err := x.Tombstone(ctx, b); err != nil || tb.ID != "urn:t:1" {
			t.Errorf("Tombstone(b) = %+v, %v", tb, err)
		}
	})
	t.Run("output erasure", func(t *testing.T) {
		x := open(t)
		a, out := receipts.Digest([]byte("a")), receipts.Digest([]byte("summary"))
		run := []Entry{
			{Index: 0, Kind: receipts.KindCompaction, ID: "urn:c:1", ManifestRoot: receipts.Digest([]byte("m1")), Items: []string{a}, Output: out},
			{Index: 1, Kind: receipts.KindTombstone, ID: "urn:t:1", Item: a, PurgedAt: 100},
		}
		if err := x.Apply(ctx, 0, run); err != nil {
			t.Fatal(err)
		}
		ci, err := x.Compaction(ctx, "urn:c:1")
		if err != nil || ci.State() != "awaiting_erasure" || ci.OutputHash != out || ci.ErasedBy != "" {
			t.Fatalf("compaction with every item purged = %+v, %v", ci, err)
		}
		if err := x.Apply(ctx, 2, []Entry{{Index: 2, Kind: receipts.KindTombstone, ID: "urn:t:2", Item: out, PurgedAt: 101}}); err != nil {
			t.Fatal(err)
		}
		ci, _ = x.Compaction(ctx, "urn:c:1")
		if ci.State() != "erased" || ci.ErasedBy != "urn:t:2" || ci.ErasedAt != 2 {
			t.Errorf("compaction after its output's tombstone = %+v", ci)
		}
		cs, err := x.CompactionsProducing(ctx, out)
		if err != nil || len(cs) != 1 || cs[0].ID != "urn:c:1" || cs[0].ErasedBy != "urn:t:2" {
			t.Errorf("CompactionsProducing(out) = %+v, %v", cs, err)
		}
		if obs, total, err := x.OpenObligations(ctx, 10); err != nil || total != 0 || len(obs) != 0 {
			t.Errorf("OpenObligations after the output's erasure = %v, %d, %v; want none", obs, total, err)
		}
		if cs, err := x.CompactionsProducing(ctx, a); err != nil || len(cs) != 0 {
			t.Errorf("CompactionsProducing(item) = %+v, %v", cs, err)
		}
	})
	t.Run("open obligations", func(t *testing.T) {
		x := open(t)
		a, b, c := receipts.Digest([]byte("a")), receipts.Digest([]byte("b")), receipts.Digest([]byte("c"))
		run := []Entry{
			{Index: 0, Kind: receipts.KindCompaction, ID: "urn:c:1", ManifestRoot: receipts.Digest([]byte("m1")), Items: []string{a, b, c}},
			{Index: 1, Kind: receipts.KindCompaction, ID: "urn:c:2", ManifestRoot: receipts.Digest([]byte("m2")), Items: []string{b}},
			{Index: 2, Kind: receipts.KindTombstone, ID: "urn:t:c", Item: c, PurgedAt: 200},
			{Index: 3, Kind: receipts.KindTombstone, ID: "urn:t:b", Item: b, PurgedAt: 100},
		}
		if err := x.Apply(ctx, 0, run); err != nil {
			t.Fatal(err)
		}
		obs, total, err := x.OpenObligations(ctx, 10)
		want := []Obligation{
			{Item: c, TombstoneID: "urn:t:c", TombstoneIndex: 2, PurgedAt: 200, CompactionID: "urn:c:1", CompactionIndex: 0},
			{Item: b, TombstoneID: "urn:t:b", TombstoneIndex: 3, PurgedAt: 100, CompactionID: "urn:c:1", CompactionIndex: 0},
			{Item: b, TombstoneID: "urn:t:b", TombstoneIndex: 3, PurgedAt: 100, CompactionID: "urn:c:2", CompactionIndex: 1},
		}
		if err != nil || total != 3 || fmt.Sprint(obs) != fmt.Sprint(want) {
			t.Fatalf("OpenObligations = %v, %d, %v; want %v, 3", obs, total, err, want)
		}
		if obs, total, err := x.OpenObligations(ctx, 1); err != nil || total != 3 || len(obs) != 1 || obs[0] != want[0] {
			t.Errorf("OpenObligations(limit 1) = %v, %d, %v", obs, total, err)
		}
		// Superseding urn:c:1 discharges its two.
		if err := x.Apply(ctx, 4, []Entry{{Index: 4, Kind: receipts.KindCompaction, ID: "urn:c:3", ManifestRoot: receipts.Digest([]byte("m3")), Items: []string{a}, Supersedes: "urn:c:1"}}); err != nil {
			t.Fatal(err)
		}
		if obs, total, err := x.OpenObligations(ctx, 10); err != nil || total != 1 || len(obs) != 1 || obs[0] != want[2] {
			t.Errorf("OpenObligations after a supersession = %v, %d, %v; want %v", obs, total, err, want[2:])
		}
	})
	t.Run("reset", func(t *testing.T) {
		x := open(t)
		x.Apply(ctx, 0, []Entry{proj(0)})
		if err := x.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if wm, _ := x.Watermark(ctx); wm != 0 {
			t.Errorf("watermark after Reset = %d", wm)
		}
		if _, err := x.LookupID(ctx, receipts.KindProjection, "urn:p:0"); !errors.Is(err, ErrNotFound) {
			t.Errorf("id after Reset: %v", err)
		}
	})
	t.Run("concurrent lookups during apply", func(t *testing.T) {
		x := open(t)
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for r := 0; r < 4; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					wm, err := x.Watermark(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					// Everything below a watermark read is visible.
					if wm > 0 {
						if _, err := x.LookupID(ctx, receipts.KindProjection, fmt.Sprint("urn:p:", wm-1)); err != nil {
							t.Errorf("entry %d below watermark %d not visible: %v", wm-1, wm, err)
							return
						}
					}
				}
			}()
		}
		for b := uint64(0); b < 50; b++ {
			var run []Entry
			for i := b * 20; i < (b+1)*20; i++ {
				run = append(run, proj(i))
			}
			if err := x.Apply(ctx, b*20, run); err != nil {
				t.Fatal(err)
			}
		}
		close(stop)
		wg.Wait()
	})
}

// TestManifestStore runs the contract of ManifestStore against the
// implementation open returns (empty on each call).
func TestManifestStore(t *testing.T, open func(t *testing.T) ManifestStore) {
	ctx := context.Background()
	mf, err := receipts.NewManifest([]receipts.ManifestItem{{ItemDigest: receipts.Digest([]byte("x")), Sensitivity: "PUBLIC"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("put get", func(t *testing.T) {
		s := open(t)
		if _, err := s.Get(ctx, mf.Root()); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get before Put = %v, want ErrNotFound", err)
		}
		if err := s.Put(ctx, mf.Root(), mf.Canonical()); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, mf.Root(), mf.Canonical()); err != nil {
			t.Errorf("second Put = %v, want a no-op", err)
		}
		got, err := s.Get(ctx, mf.Root())
		if err != nil || string(got) != string(mf.Canonical()) {
			t.Errorf("Get = %q, %v", got, err)
		}
		roots, err := s.Roots(ctx)
		if err != nil || len(roots) != 1 || roots[0] != mf.Root() {
			t.Errorf("Roots = %v, %v", roots, err)
		}
	})
	t.Run("never under another root", func(t *testing.T) {
		s := open(t)
		other := receipts.Digest([]byte("not the root"))
		// Whether Put refuses it or Get catches it, bytes are never served
		// under a root they do not hash to.
		if err := s.Put(ctx, other, mf.Canonical()); err == nil {
			if _, err := s.Get(ctx, other); !errors.Is(err, ErrManifestCorrupt) {
				t.Errorf("Get of bytes stored under another root = %v, want ErrManifestCorrupt", err)
			}
		}
	})
	t.Run("malformed root", func(t *testing.T) {
		s := open(t)
		if _, err := s.Get(ctx, "../../log.key"); err == nil {
			t.Errorf("Get of a malformed root succeeded")
		}
	})
}

// TestCheckpointArchive runs the contract of CheckpointArchive against the
// implementation open returns (empty on each call).
func TestCheckpointArchive(t *testing.T, open func(t *testing.T) CheckpointArchive) {
	ctx := context.Background()
	// The archive judges the note text, not the signatures.
	cp := func(size uint64, root, sig string) []byte {
		return fmt.Appendf(nil, "archive.test/log\n%d\n%s\n\n\u2014 archive.test/log %s\n", size, root, sig)
	}
	root := "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
	other := "bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0="
	t.Run("empty", func(t *testing.T) {
		a := open(t)
		if _, err := a.Get(ctx, 0); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get of an empty archive = %v, want ErrNotFound", err)
		}
		if _, _, err := a.Latest(ctx); !errors.Is(err, ErrNotFound) {
			t.Errorf("Latest of an empty archive = %v, want ErrNotFound", err)
		}
	})
	t.Run("put get latest", func(t *testing.T) {
		a := open(t)
		sizes := []uint64{1000, 0, 999, 1234567, 1001, 5, 2000000}
		for _, s := range sizes {
			if err := a.Put(ctx, s, cp(s, root, "A")); err != nil {
				t.Fatalf("Put(%d) = %v", s, err)
			}
		}
		for _, s := range sizes {
			if got, err := a.Get(ctx, s); err != nil || string(got) != string(cp(s, root, "A")) {
				t.Errorf("Get(%d) = %q, %v", s, got, err)
			}
		}
		if _, err := a.Get(ctx, 6); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get of a size never put = %v, want ErrNotFound", err)
		}
		if s, got, err := a.Latest(ctx); err != nil || s != 2000000 || string(got) != string(cp(2000000, root, "A")) {
			t.Errorf("Latest = %d %q %v, want 2000000", s, got, err)
		}
	})
	t.Run("range", func(t *testing.T) {
		a := open(t)
		for _, s := range []uint64{2500, 0, 1000, 5, 999, 1001} {
			if err := a.Put(ctx, s, cp(s, root, "A")); err != nil {
				t.Fatalf("Put(%d) = %v", s, err)
			}
		}
		collect := func(from, to uint64) []uint64 {
			var got []uint64
			err := a.Range(ctx, from, to, func(size uint64, signed []byte) error {
				if string(signed) != string(cp(size, root, "A")) {
					t.Errorf("Range gave %q for size %d", signed, size)
				}
				got = append(got, size)
				return nil
			})
			if err != nil {
				t.Errorf("Range(%d, %d) = %v", from, to, err)
			}
			return got
		}
		for _, tc := range []struct {
			from, to uint64
			want     string
		}{
			{0, 1001, "[0 5 999 1000]"},
			{1000, 3000, "[1000 1001 2500]"},
			{6, 999, "[]"},
			{0, ^uint64(0), "[0 5 999 1000 1001 2500]"},
			{7, 7, "[]"},
		} {
			if got := fmt.Sprint(collect(tc.from, tc.to)); got != tc.want {
				t.Errorf("Range(%d, %d) gave sizes %s, want %s", tc.from, tc.to, got, tc.want)
			}
		}
		stop := errors.New("stop")
		n := 0
		if err := a.Range(ctx, 0, 3000, func(uint64, []byte) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
			t.Errorf("Range with fn failing = %v after %d calls, want fn's error after 1", err, n)
		}
	})
	t.Run("one checkpoint per size", func(t *testing.T) {
		a := open(t)
		if err := a.Put(ctx, 7, cp(7, root, "A")); err != nil {
			t.Fatal(err)
		}
		if err := a.Put(ctx, 7, cp(7, root, "A")); err != nil {
			t.Errorf("Put of the same bytes = %v, want a no-op", err)
		}
		// The same tree with other signatures replaces it.
		if err := a.Put(ctx, 7, cp(7, root, "B")); err != nil {
			t.Errorf("Put of the same text with other signatures = %v", err)
		}
		if got, _ := a.Get(ctx, 7); string(got) != string(cp(7, root, "B")) {
			t.Errorf("Get after a re-signed Put = %q", got)
		}
		// Another tree of the same size is a conflict and changes nothing.
		if err := a.Put(ctx, 7, cp(7, other, "C")); !errors.Is(err, ErrCheckpointConflict) {
			t.Errorf("Put of another tree at the same size = %v, want ErrCheckpointConflict", err)
		}
		if got, _ := a.Get(ctx, 7); string(got) != string(cp(7, root, "B")) {
			t.Errorf("Get after a refused Put = %q", got)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		a := open(t)
		for name, b := range map[string][]byte{
			"another size":    cp(8, root, "A"),
			"no signatures":   []byte("archive.test/log\n9\n" + root + "\n"),
			"one line":        []byte("archive.test/log\n\n\u2014 x y\n"),
			"size with a +":   []byte("archive.test/log\n+9\n" + root + "\n\n\u2014 x y\n"),
			"size with zeros": []byte("archive.test/log\n09\n" + root + "\n\n\u2014 x y\n"),
		} {
			if err := a.Put(ctx, 9, b); !errors.Is(err, ErrCheckpointMalformed) {
				t.Errorf("Put(9, %s) = %v, want ErrCheckpointMalformed", name, err)
			}
		}
		if _, err := a.Get(ctx, 9); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get after refused Puts = %v, want ErrNotFound", err)
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		a := open(t)
		var wg sync.WaitGroup
		for w := uint64(0); w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := uint64(0); i < 50; i++ {
					s := i*4 + w
					if err := a.Put(ctx, s, cp(s, root, "A")); err != nil {
						t.Errorf("Put(%d) = %v", s, err)
						return
					}
					if got, err := a.Get(ctx, s); err != nil || string(got) != string(cp(s, root, "A")) {
						t.Errorf("Get(%d) after its Put = %q, %v", s, got, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if s, _, err := a.Latest(ctx); err != nil || s != 199 {
			t.Errorf("Latest = %d %v, want 199", s, err)
		}
	})
}
