package log

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/receipts"
)

// BenchmarkSubmit measures verified ingest of projection records through
// Log.Submit (no HTTP) with 4096 submissions in flight.
func BenchmarkSubmit(b *testing.B) {
	skey, _, _ := GenerateLogKey("bench.example/log")
	s := gen.Deterministic(1)
	l, err := Open(context.Background(), Config{Storage: openStorage(b, b.TempDir()), SigningKey: skey, Trust: s.Trust(time.Now().Add(-time.Hour))})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(context.Background())
	subs := make([]*receipts.Submission, b.N)
	prefix := fmt.Sprint(time.Now().UnixNano())
	var wg sync.WaitGroup
	var next atomic.Int64
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= b.N {
					return
				}
				r, _, _ := s.Projection(fmt.Sprint("urn:bench:", prefix, ":", i), time.Now().UTC(), 2, 200)
				// Submit what a client would send: re-parse the bytes.
				sub, _ := receipts.ParseSubmission(r.Canonical())
				subs[i] = sub
			}
		}()
	}
	wg.Wait()
	b.ResetTimer()
	next.Store(0)
	for w := 0; w < 4096; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= b.N {
					return
				}
				if _, err := l.Submit(context.Background(), subs[i]); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}
