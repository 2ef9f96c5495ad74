package sqliteindex

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/memtrail/memtrail/log/store"
	"github.com/memtrail/memtrail/receipts"
)

// BenchmarkIndexApply measures the index's cost per projection entry,
// applied in runs of 300 (a typical group).
func BenchmarkIndexApply(b *testing.B) {
	x, err := OpenSQLiteIndex(b.TempDir() + "/index.db")
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	ctx := context.Background()
	run := 300
	if v, err := strconv.Atoi(os.Getenv("MEMTRAIL_APPLY_RUN")); err == nil {
		run = v
	}
	entries := make([]store.Entry, run)
	next := uint64(0)
	b.ResetTimer()
	for done := 0; done < b.N; done += run {
		for i := range entries {
			entries[i] = store.Entry{Index: next + uint64(i), Kind: receipts.KindProjection, ID: fmt.Sprint("urn:bench:apply:", next+uint64(i))}
		}
		if err := x.Apply(ctx, next, entries); err != nil {
			b.Fatal(err)
		}
		next += uint64(run)
	}
}
