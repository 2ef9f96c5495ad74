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
	"github.com/memtrail/memtrail/witness/internal/witnesstest"
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
	type pair struct{ a, b *witnesstest.Log }
	var logs []witness.Log
	pairs := make([]pair, origins)
	for i := range pairs {
		a := newSimLog(t, fmt.Sprintf("example.com/concurrent/%d", i))
		a.GrowTo(maxSize)
		b := a.Fork(0, "fork")
		b.GrowTo(maxSize)
		pairs[i] = pair{a, b}
		logs = append(logs, a.WitnessLog())
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
		for _, l := range []*witnesstest.Log{p.a, p.b} {
			for c := range clientsPerFork {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(i), uint64(c)))
					var known uint64
					for range steps {
						size := min(known+1+rng.Uint64N(40), maxSize)
						r := httpPost(t, client, srv.URL, l.Request(known, size))
						switch r.code {
						case http.StatusOK:
							checkCosignature(t, cosigV, l.Checkpoint(size), r.body, time.Now())
							mu.Lock()
							acks[l.Origin] = append(acks[l.Origin], ack{l.Tag(), size})
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
							t.Errorf("%s %s: old %d size %d = %d %q", l.Origin, l.Tag(), known, size, r.code, r.body)
							return
						}
					}
				})
			}
		}
	}
	wg.Wait()

	for _, p := range pairs {
		as := acks[p.a.Origin]
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
				t.Errorf("%s: cosigned checkpoints of both forks: %v", p.a.Origin, as)
				break
			}
			maxAck = max(maxAck, a.size)
		}
		cp, err := w.Checkpoint(context.Background(), p.a.Origin)
		if err != nil {
			t.Errorf("%s: %v", p.a.Origin, err)
			continue
		}
		_, size, root := parseServed(t, cp)
		if size != maxAck {
			t.Errorf("%s: served size %d, want the largest acknowledged %d", p.a.Origin, size, maxAck)
		}
		want := p.a
		if winner == p.b.Tag() {
			want = p.b
		}
		if string(root) != string(want.Root(size)) {
			t.Errorf("%s: served root is not the winning fork's", p.a.Origin)
		}
	}
}

// TestPerOriginLock holds one request between cosigning and storing, and
// checks that a request for another origin completes meanwhile while a
// request for the same origin waits, and then sees the first one's state.
func TestPerOriginLock(t *testing.T) {
	a, b := newSimLog(t, "example.com/a"), newSimLog(t, "example.com/b")
	a.GrowTo(20)
	b.GrowTo(20)
	h := newHarness(t, a.WitnessLog(), b.WitnessLog())
	reached, release := make(chan struct{}), make(chan struct{})
	witness.SetTestingOnlyBeforeStore(h.w, func(origin string) {
		if origin == a.Origin {
			witness.SetTestingOnlyBeforeStore(h.w, nil)
			close(reached)
			<-release
		}
	})
	first := make(chan response, 1)
	go func() { first <- httpPost(t, h.srv.Client(), h.srv.URL, a.Request(0, 10)) }()
	<-reached

	// Another origin proceeds.
	if r := h.post(b.Request(0, 10)); r.code != 200 {
		t.Fatalf("other origin while one is held = %d %q", r.code, r.body)
	}
	// The same origin waits: without the lock it would also be cosigned as
	// a first checkpoint, a fork of the held one.
	second := make(chan response, 1)
	go func() { second <- httpPost(t, h.srv.Client(), h.srv.URL, a.Fork(0, "fork").Request(0, 0)) }()
	go func() {
		f := a.Fork(0, "fork")
		f.GrowTo(20)
		second <- httpPost(t, h.srv.Client(), h.srv.URL, f.Request(0, 20))
	}()
	select {
	case r := <-second:
		t.Fatalf("a request for the held origin completed: %d %q", r.code, r.body)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if r := <-first; r.code != 200 {
		t.Fatalf("held request = %d %q", r.code, r.body)
	}
	for range 2 {
		if r := <-second; r.code != 409 || string(r.body) != "10\n" {
			t.Fatalf("request that waited = %d %q, want 409 10", r.code, r.body)
		}
	}
}
