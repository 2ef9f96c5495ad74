package receipts_test

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/receipts"
)

// TestValueBudget: a submission of tiny values is refused after a bounded
// number of them (a 16 MiB body of zeros was parsed whole first, at some
// 45 times its size), while the largest legitimate submission, a
// compaction whose manifest has MaxManifestItems items, still parses.
func TestValueBudget(t *testing.T) {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; i < 128; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('[')
		b.WriteString(strings.Repeat("0,", 65535))
		b.WriteString("0]")
	}
	b.WriteByte(']')
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := receipts.ParseSubmission(b.Bytes())
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "values in one document") {
		t.Errorf("a %d-byte body of zeros: %v", b.Len(), err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 160<<20 {
		t.Errorf("refusing a %d MiB body of zeros allocated %d MiB", b.Len()>>20, grew>>20)
	}

	s := gen.Deterministic(7)
	c, mf, err := s.Compaction("urn:c:max", gen.Items("max", receipts.MaxManifestItems), "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := receipts.ParseSubmission(gen.CompactionSubmission(c, mf))
	if err != nil || sub.Manifest == nil || len(sub.Manifest.Items) != receipts.MaxManifestItems {
		t.Fatalf("the largest manifest: %v", err)
	}
}
