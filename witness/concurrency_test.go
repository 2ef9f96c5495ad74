package witness_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memtrail/memtrail/witness"
	"github.com/memtrail/memtrail/witness/sqlitestore"
	fnote "github.com/transparency-dev/formats/note"
)

// TestConcurrent races many clients over many origins against a witness on
// the SQLite store. Each origin has two forks signed by the same key, and
// clients push both: the first cosigned one wins the origin, and from then
// on the other must never be cosigned. Sizes acknowledged must end up as
// the served state.
func TestConcurrent(t *testing.T) {
	const (
		origins        = 24
		clientsPerFork = 3
		steps          = 25
		maxSize        = 2000
	)
	type pair struct{ a, b *simLog }
	var logs []witness.Log
	pairs := make([]pair, origins)
	for i := range pairs {
		a := newSimLog(t, fmt.Sprintf("example.com/concurrent/%d", i))
		a.growTo(maxSize)
		b := a.fork(0, "fork")
		b.growTo(maxSize)
		pairs[i] = pair{a, b}
		logs = append(logs, a.witnessLog())
	}
	store, err := sqlitestore.Open(filepath.Join(t.TempDir(), "witness.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	skey, vkey, err := witness.GenerateKey("witness.example.com/w1")
	if err != nil {
		t.Fatal(err)
	}
	w, err := witness.New(context.Background(), witness.Config{Key: skey, Store: store, Logs: logs, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	cosigV, err := fnote.NewVerifierForCosignatureV1(vkey)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: origins * 2 * clientsPerFork}}

	type ack struct {
		fork string
		size uint64
	}
	var mu sync.Mutex
	acks := make(map[string][]ack)
	var wg sync.WaitGroup
	for i, p := range pairs {
		for _, l := range []*simLog{p.a, p.b} {
			for c := range clientsPerFork {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(i), uint64(c)))
					var known uint64
					for range steps {
						size := min(known+1+rng.Uint64N(40), maxSize)
						r := httpPost(t, client, srv.URL, l.request(known, size))
						switch r.code {
						case http.StatusOK:
							checkCosignature(t, cosigV, l.checkpoint(size), r.body, time.Now())
							mu.Lock()
							acks[l.origin] = append(acks[l.origin], ack{l.tag, size})
							mu.Unlock()
							known = size
						case http.StatusConflict:
							n, err := strconv.ParseUint(strings.TrimSpace(string(r.body)), 10, 64)
							if err != nil {
								t.Errorf("409 body %q: %v", r.body, err)
								return
							}
							known = n
						case http.StatusUnprocessableEntity:
							// This fork lost the origin; keep pushing it anyway.
						default:
							t.Errorf("%s %s: old %d size %d = %d %q", l.origin, l.tag, known, size, r.code, r.body)
							return
						}
					}
				})
			}
		}
	}
	wg.Wait()

	for _, p := range pairs {
		as := acks[p.a.origin]
		var maxAck uint64
		winner := ""
		for _, a := range as {
			if a.size == 0 {
				continue
			}
			if winner == "" {
				winner = a.fork
			}
			if a.fork != winner {
				t.Errorf("%s: cosigned checkpoints of both forks: %v", p.a.origin, as)
				break
			}
			maxAck = max(maxAck, a.size)
		}
		cp, err := w.Checkpoint(context.Background(), p.a.origin)
		if err != nil {
			t.Errorf("%s: %v", p.a.origin, err)
			continue
		}
		_, size, root := parseServed(t, cp)
		if size != maxAck {
			t.Errorf("%s: served size %d, want the largest acknowledged %d", p.a.origin, size, maxAck)
		}
		want := p.a
		if winner == p.b.tag {
			want = p.b
		}
		if string(root) != string(want.root(size)) {
			t.Errorf("%s: served root is not the winning fork's", p.a.origin)
		}
	}
}
