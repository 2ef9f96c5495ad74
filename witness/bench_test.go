package witness_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/memtrail/memtrail/witness"
	"github.com/memtrail/memtrail/witness/internal/witnesstest"
	"github.com/memtrail/memtrail/witness/sqlitestore"
)

// BenchmarkAddCheckpoint measures add-checkpoint throughput with 50 logs
// updated in parallel, each by its own client, one leaf per checkpoint. The
// requests are prepared before the timer starts. The "http" variants go
// through the HTTP handler over loopback; the others call AddCheckpoint.
func BenchmarkAddCheckpoint(b *testing.B) {
	for _, bc := range []struct {
		name   string
		sqlite bool
		http   bool
	}{
		{"memory", false, false},
		{"sqlite", true, false},
		{"sqlite-http", true, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			const logs = 50
			per := b.N/logs + 1
			sims := make([]*witnesstest.Log, logs)
			var known []witness.Log
			reqs := make([][][]byte, logs)
			for i := range sims {
				sims[i] = newSimLog(b, fmt.Sprintf("example.com/bench/%d", i))
				sims[i].GrowTo(uint64(per + 1))
				known = append(known, sims[i].WitnessLog())
				for k := range per {
					reqs[i] = append(reqs[i], sims[i].Request(uint64(k), uint64(k+1)))
				}
			}
			var store witness.Store = newMemStore()
			if bc.sqlite {
				s, err := sqlitestore.Open(filepath.Join(b.TempDir(), "witness.db"))
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				store = s
			}
			skey, _, err := witness.GenerateKey("witness.example.com/w1")
			if err != nil {
				b.Fatal(err)
			}
			w, err := witness.New(context.Background(), witness.Config{Key: skey, Store: store, Logs: known, Logger: discardLogger()})
			if err != nil {
				b.Fatal(err)
			}
			add := func(body []byte) error {
				_, err := w.AddCheckpoint(context.Background(), body)
				return err
			}
			if bc.http {
				srv := httptest.NewServer(w.Handler())
				defer srv.Close()
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: logs}}
				add = func(body []byte) error {
					resp, err := client.Post(srv.URL+"/add-checkpoint", "text/plain", bytes.NewReader(body))
					if err != nil {
						return err
					}
					defer resp.Body.Close()
					var buf bytes.Buffer
					buf.ReadFrom(resp.Body)
					if resp.StatusCode != http.StatusOK {
						return fmt.Errorf("status %d: %q", resp.StatusCode, buf.Bytes())
					}
					return nil
				}
			}
			b.ResetTimer()
			var wg sync.WaitGroup
			for i := range logs {
				wg.Go(func() {
					for k := range per {
						if i*per+k >= b.N {
							return
						}
						if err := add(reqs[i][k]); err != nil {
							b.Errorf("log %d request %d: %v", i, k, err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
		})
	}
}
