package sqliteindex

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memtrail/memtrail/log/store"
	"github.com/memtrail/memtrail/receipts"
)

// powerLossEntries is a log of n entries for the index: projections, and
// now and then a compaction (superseding the one before, or not) or a
// tombstone of an item or of a compaction's output.
func powerLossEntries(n int) []store.Entry {
	r := rand.New(rand.NewPCG(7, 7))
	item := func(i int) string { return receipts.Digest(fmt.Appendf(nil, "item %d", i)) }
	var out []store.Entry
	lastCompaction, compactions, items := "", 0, 0
	for i := 0; i < n; i++ {
		e := store.Entry{Index: uint64(i)}
		switch k := r.IntN(20); {
		case k == 0:
			compactions++
			e.Kind, e.ID = receipts.KindCompaction, fmt.Sprint("urn:c:", compactions)
			for j := 0; j < 1+r.IntN(5); j++ {
				e.Items = append(e.Items, item(items))
				items++
			}
			e.ManifestRoot = receipts.Digest([]byte(e.ID))
			e.Output = receipts.Digest(fmt.Appendf(nil, "output of %s", e.ID))
			if lastCompaction != "" && r.IntN(2) == 0 {
				e.Supersedes = lastCompaction
			}
			lastCompaction = e.ID
		case k == 1 && items > 0:
			e.Kind, e.ID = receipts.KindTombstone, fmt.Sprint("urn:t:", i)
			e.Item, e.PurgedAt = item(r.IntN(items)), int64(i)
		case k == 2 && compactions > 0:
			e.Kind, e.ID = receipts.KindTombstone, fmt.Sprint("urn:t:", i)
			e.Item, e.PurgedAt = receipts.Digest(fmt.Appendf(nil, "output of urn:c:%d", 1+r.IntN(compactions))), int64(i)
		default:
			e.Kind, e.ID = receipts.KindProjection, fmt.Sprint("urn:p:", i)
		}
		out = append(out, e)
	}
	return out
}

// indexState is everything an index answers about a log.
func indexState(t *testing.T, x store.Index, entries []store.Entry) string {
	t.Helper()
	ctx := context.Background()
	var b bytes.Buffer
	wm, err := x.Watermark(ctx)
	fmt.Fprintf(&b, "watermark %d %v\n", wm, err)
	c, err := x.Counts(ctx)
	fmt.Fprintf(&b, "counts %v %v\n", c, err)
	obs, total, err := x.OpenObligations(ctx, 1<<20)
	fmt.Fprintf(&b, "obligations %d %v %v\n", total, obs, err)
	for _, e := range entries {
		idx, err := x.LookupID(ctx, e.Kind, e.ID)
		fmt.Fprintf(&b, "id %s %s: %d %v\n", e.Kind, e.ID, idx, errors.Is(err, store.ErrNotFound))
		switch e.Kind {
		case receipts.KindCompaction:
			ci, err := x.Compaction(ctx, e.ID)
			fmt.Fprintf(&b, "compaction %+v %v\n", ci, err)
			for _, it := range e.Items {
				cs, err := x.CompactionsIncluding(ctx, it)
				fmt.Fprintf(&b, "including %s: %d %v\n", it, len(cs), err)
				for _, c := range cs {
					fmt.Fprintf(&b, "  %+v\n", *c)
				}
				ts, err := x.Tombstone(ctx, it)
				fmt.Fprintf(&b, "tombstone %s: %+v %v\n", it, ts, errors.Is(err, store.ErrNotFound))
			}
			cs, err := x.CompactionsProducing(ctx, e.Output)
			fmt.Fprintf(&b, "producing %s: %d %v\n", e.Output, len(cs), err)
		}
	}
	return b.String()
}

// applyRuns applies entries[from:to] to x in runs of random sizes.
func applyRuns(t *testing.T, r *rand.Rand, x store.Index, entries []store.Entry, from, to int) {
	t.Helper()
	for from < to {
		n := min(to-from, 1+r.IntN(300))
		if err := x.Apply(context.Background(), uint64(from), entries[from:from+n]); err != nil {
			t.Fatalf("Apply(%d, %d entries) = %v", from, n, err)
		}
		from += n
	}
}

// TestPowerLoss drops the writes the embedded index had not synced, as a
// power loss does (a SIGKILL loses none: the kernel has them), and checks
// that the index opens, that its watermark is at most what was applied and
// everything below it is intact, and that applying the rest of the log
// from the watermark gives the index of the whole log.
//
// What a power loss can leave follows from when each file is synced. The
// database runs with synchronous=NORMAL in WAL mode: the WAL is synced only
// before a checkpoint, so any frame written since the last checkpoint may
// be lost, and since frames are checksummed in a chain, what SQLite recovers
// is the WAL cut at some frame: the test cuts it at a random frame (and
// drops the shared-memory file, rebuilt at open). The id table file is
// written only when it syncs: its pages, a sync, then its header; a power
// loss during or after a sync may leave the header of the sync before with
// any mixture of the two syncs' sectors, which the test builds from two
// snapshots of the file taken as the syncs happen.
func TestPowerLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("the power-loss trials take about ten seconds")
	}
	ctx := context.Background()
	entries := powerLossEntries(3000)
	r := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	path := filepath.Join(dir, "index.db")
	x, err := OpenSQLiteIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()

	// The id table's file as of the last two syncs seen.
	var prevIDs, curIDs []byte
	watchIDs := func() {
		b, err := os.ReadFile(path + "-ids")
		if errors.Is(err, fs.ErrNotExist) {
			return // an index without an id table file: only the WAL is cut
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 36 || curIDs != nil && bytes.Equal(b[:36], curIDs[:36]) {
			return
		}
		prevIDs, curIDs = curIDs, b
	}

	applied := 0
	const trials = 8
	for trial := 0; trial < trials; trial++ {
		// Apply more of the log, letting the id table sync now and then.
		to := min(len(entries), applied+100+r.IntN(500))
		for applied < to {
			next := min(to, applied+1+r.IntN(200))
			applyRuns(t, r, x, entries, applied, next)
			applied = next
			if r.IntN(3) == 0 {
				time.Sleep(time.Duration(900+r.IntN(400)) * time.Millisecond)
			}
			watchIDs()
		}
		watchIDs()

		// The crash: the files as they are, then what was not synced
		// dropped.
		crash := filepath.Join(t.TempDir(), "index.db")
		copyFile(t, path, crash)
		var cut string
		if wal, err := os.ReadFile(path + "-wal"); err == nil && len(wal) >= 32 {
			pageSize := int(binary.BigEndian.Uint32(wal[8:12]))
			frames := (len(wal) - 32) / (24 + pageSize)
			k := r.IntN(frames + 1)
			os.WriteFile(crash+"-wal", wal[:32+k*(24+pageSize)], 0o644)
			cut = fmt.Sprintf("WAL cut at frame %d of %d", k, frames)
		}
		if ids, err := os.ReadFile(path + "-ids"); err == nil {
			if prevIDs != nil && len(prevIDs) == len(ids) && r.IntN(3) != 0 {
				mixed := append([]byte(nil), ids...)
				copy(mixed[:4096], prevIDs[:4096]) // the header of the sync before
				n := 0
				for s := 4096; s < len(mixed); s += 512 {
					if r.IntN(2) == 0 && !bytes.Equal(mixed[s:s+512], prevIDs[s:s+512]) {
						copy(mixed[s:s+512], prevIDs[s:s+512])
						n++
					}
				}
				ids = mixed
				cut += fmt.Sprintf(", id table with the previous header and %d sectors of the previous sync", n)
			}
			os.WriteFile(crash+"-ids", ids, 0o644)
		}

		y, err := OpenSQLiteIndex(crash)
		if err != nil {
			t.Fatalf("trial %d (%s): the index does not open after a power loss: %v", trial, cut, err)
		}
		wm, err := y.Watermark(ctx)
		if err != nil || wm > uint64(applied) {
			t.Fatalf("trial %d (%s): watermark %d, %v after a power loss; %d were applied", trial, cut, wm, err, applied)
		}
		// What is below the watermark is intact: the index of that prefix.
		ref, err := OpenSQLiteIndex(filepath.Join(t.TempDir(), "index.db"))
		if err != nil {
			t.Fatal(err)
		}
		applyRuns(t, r, ref, entries, 0, int(wm))
		if got, want := indexState(t, y, entries[:wm]), indexState(t, ref, entries[:wm]); got != want {
			t.Fatalf("trial %d (%s): after a power loss the index at watermark %d differs from the index of the first %d entries", trial, cut, wm, wm)
		}
		// And the log's rest applies on top of it.
		applyRuns(t, r, y, entries, int(wm), applied)
		applyRuns(t, r, ref, entries, int(wm), applied)
		if got, want := indexState(t, y, entries), indexState(t, ref, entries); got != want {
			t.Fatalf("trial %d (%s): the index caught up from watermark %d to %d differs from the index of the %d entries", trial, cut, wm, applied, applied)
		}
		t.Logf("trial %d: %s; watermark %d of %d applied", trial, cut, wm, applied)
		y.Close()
		ref.Close()
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
