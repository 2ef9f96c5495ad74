package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memtrail/memtrail/api"
	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/receipts"
)

// TestReplayAcrossRestartsAndReloads: for each of several ids, 1,000
// concurrent submissions give exactly one 201 and 999 409s naming its index;
// then, after a SIGKILL and restart, and again across a SIGHUP reload of the
// trust file, 1,000 concurrent submissions of each id all get 409 naming
// that same index.
func TestReplayAcrossRestartsAndReloads(t *testing.T) {
	bin := buildMemtrail(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	signers := gen.Deterministic(11)
	trust := signers.Trust(time.Now().Add(-time.Hour).UTC().Truncate(time.Second))
	trustFile := filepath.Join(dir, "trust.json")
	os.WriteFile(trustFile, receipts.MarshalTrust(trust), 0o644)

	const ids, per = 4, 1000
	bodies := make([][]byte, ids)
	for i := range bodies {
		r, _, err := signers.Projection(fmt.Sprint("urn:replay:", i), time.Now().UTC(), 1, 40)
		if err != nil {
			t.Fatal(err)
		}
		bodies[i] = r.Canonical()
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	// storm sends per concurrent copies of each body and returns, per id,
	// the statuses and the indexes named.
	storm := func(base string, during func()) (created [ids]int, conflicts [ids]int, index [ids]map[uint64]int) {
		for i := range index {
			index[i] = map[uint64]int{}
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < ids; i++ {
			for c := 0; c < per; c++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					<-start
					resp, err := client.Post(base+"/v1/projections", "application/json", bytes.NewReader(bodies[i]))
					if err != nil {
						t.Error(err)
						return
					}
					defer resp.Body.Close()
					mu.Lock()
					defer mu.Unlock()
					switch resp.StatusCode {
					case 201:
						var a api.Accepted
						json.NewDecoder(resp.Body).Decode(&a)
						created[i]++
						index[i][a.Index]++
					case 409:
						var ref api.Refusal
						json.NewDecoder(resp.Body).Decode(&ref)
						if ref.Code != "projection_replay" || ref.FirstIndex == nil {
							t.Errorf("409 %+v", ref)
							return
						}
						conflicts[i]++
						index[i][*ref.FirstIndex]++
					default:
						t.Errorf("status %d", resp.StatusCode)
					}
				}(i)
			}
		}
		close(start)
		if during != nil {
			during()
		}
		wg.Wait()
		return
	}
	srv := startServe(t, bin, data, trustFile)
	created, conflicts, index := storm(srv.url, nil)
	first := map[int]uint64{}
	for i := 0; i < ids; i++ {
		if created[i] != 1 || conflicts[i] != per-1 || len(index[i]) != 1 {
			t.Fatalf("id %d: %d created, %d conflicts, indexes %v", i, created[i], conflicts[i], index[i])
		}
		for idx := range index[i] {
			first[i] = idx
		}
	}
	srv.kill()
	srv = startServe(t, bin, data, trustFile)
	check := func(phase string, created, conflicts [ids]int, index [ids]map[uint64]int) {
		for i := 0; i < ids; i++ {
			if created[i] != 0 || conflicts[i] != per || len(index[i]) != 1 || index[i][first[i]] != per {
				t.Errorf("%s, id %d: %d created, %d conflicts, indexes %v; want every answer 409 naming %d", phase, i, created[i], conflicts[i], index[i], first[i])
			}
		}
	}
	created, conflicts, index = storm(srv.url, nil)
	check("after SIGKILL and restart", created, conflicts, index)
	created, conflicts, index = storm(srv.url, func() {
		time.Sleep(20 * time.Millisecond)
		srv.cmd.Process.Signal(syscall.SIGHUP)
	})
	check("across a trust reload", created, conflicts, index)
	srv.stop(t)
}
