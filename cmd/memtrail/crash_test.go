package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/memtrail/memtrail/api"
	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/receipts"
)

// TestCrashRecovery kills "memtrail serve" with SIGKILL at random moments
// under sustained load, many times, and checks after every crash that
//
//   - fsck finds the data directory sound: the entries hash to the tiles,
//     the tree root and the signed checkpoint, no id is logged twice, and
//     the index agrees with the log (it may only be behind);
//   - after restart, every acknowledged receipt is in the log at the index
//     it was given, with the same leaf hash;
//   - every id submitted again is refused naming that same index.
//
// MEMTRAIL_CRASH_TRIALS sets the number of kills (default 5; "make
// test-crash" runs 150).
func TestCrashRecovery(t *testing.T) {
	trials := 5
	if v := os.Getenv("MEMTRAIL_CRASH_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("MEMTRAIL_CRASH_TRIALS=%q", v)
		}
		trials = n
	}
	bin := buildMemtrail(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	signers := gen.Deterministic(7)
	trustFile := filepath.Join(dir, "trust.json")
	if err := os.WriteFile(trustFile, receipts.MarshalTrust(signers.Trust(time.Now().Add(-time.Hour).UTC().Truncate(time.Second))), 0o644); err != nil {
		t.Fatal(err)
	}
	acked := map[string]api.Accepted{} // id → where it was logged
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	seq := 0
	totalAcked := 0
	for trial := 0; trial < trials; trial++ {
		srv := startServe(t, bin, data, trustFile)
		// Everything acknowledged so far is still there, at its index.
		checkAcked(t, srv.url, acked)
		// Load: projections, replays of acknowledged ids, compactions and
		// tombstones, from many clients, until the kill.
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var sent atomic.Int64
		for c := 0; c < 16; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				client := &http.Client{}
				for ctx.Err() == nil {
					mu.Lock()
					seq++
					n := seq
					mu.Unlock()
					var body []byte
					var path, id string
					switch {
					case n%50 == 0:
						items := gen.Items(fmt.Sprint("crash-", n), 3)
						comp, mf, err := signers.Compaction(fmt.Sprint("urn:crash:c:", n), items, "", nil, nil)
						if err != nil {
							t.Error(err)
							return
						}
						body, path, id = gen.CompactionSubmission(comp, mf), "/v1/compactions", comp.EventID
					case n%50 == 1:
						ts, err := signers.Tombstone(fmt.Sprint("urn:crash:t:", n), receipts.Digest([]byte(fmt.Sprint(n))), time.Now())
						if err != nil {
							t.Error(err)
							return
						}
						body, path, id = ts.Canonical(), "/v1/tombstones", ts.TombstoneID
					default:
						r, _, err := signers.Projection(fmt.Sprint("urn:crash:p:", n), time.Now().UTC(), 2, 100)
						if err != nil {
							t.Error(err)
							return
						}
						body, path, id = r.Canonical(), "/v1/projections", r.ProjectionID
					}
					acc, status, err := post(ctx, client, srv.url+path, body)
					sent.Add(1)
					if err != nil || status != http.StatusCreated {
						continue // killed mid-request, or pushback: not acknowledged
					}
					mu.Lock()
					acked[id] = *acc
					mu.Unlock()
				}
			}(c)
		}
		time.Sleep(time.Duration(100+rng.IntN(900)) * time.Millisecond)
		srv.kill()
		cancel()
		wg.Wait()
		// The killed server's directory passes fsck.
		out, err := exec.Command(bin, "fsck", "--data", data, "--json").CombinedOutput()
		if err != nil {
			t.Fatalf("trial %d: fsck after SIGKILL: %v\n%s", trial, err, out)
		}
		t.Logf("trial %d: %d requests, %d acknowledged in all", trial, sent.Load(), len(acked))
		totalAcked = len(acked)
	}
	srv := startServe(t, bin, data, trustFile)
	checkAcked(t, srv.url, acked)
	// Every acknowledged id, submitted again, is refused naming its index.
	n := 0
	for id, a := range acked {
		if a.Kind != "projection" || n >= 200 {
			continue
		}
		n++
		r, _, err := signers.Projection(id, time.Now().UTC(), 2, 100)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(srv.url+"/v1/projections", "application/json", bytes.NewReader(r.Canonical()))
		if err != nil {
			t.Fatal(err)
		}
		var ref api.Refusal
		json.NewDecoder(resp.Body).Decode(&ref)
		resp.Body.Close()
		if resp.StatusCode != http.StatusConflict || ref.Code != "projection_replay" || ref.FirstIndex == nil || *ref.FirstIndex != a.Index {
			t.Errorf("replay of %s: %d %+v, want 409 projection_replay at %d", id, resp.StatusCode, ref, a.Index)
		}
	}
	srv.stop(t)
	if totalAcked == 0 {
		t.Fatal("no submission was acknowledged in any trial")
	}
}

type serveProc struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
}

// startServe starts "memtrail serve" on data and waits until it is
// healthy; extra flags come after the defaults, so they override them.
func startServe(t *testing.T, bin, data, trust string, extra ...string) *serveProc {
	t.Helper()
	port := freePort(t)
	args := append([]string{"serve", "--data", data, "--trust", trust, "--listen", "127.0.0.1:" + port,
		"--batch-age", "10ms", "--checkpoint-interval", "200ms"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout = io.Discard
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd, url: "http://127.0.0.1:" + port, stderr: stderr}
	// A test that fails while the server runs must not leave it running.
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(p.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("memtrail serve did not start:\n%s", stderr.tail(8192))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *serveProc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
}

func (p *serveProc) stop(t *testing.T) {
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("memtrail serve did not stop cleanly: %v", err)
	}
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

func post(ctx context.Context, client *http.Client, u string, body []byte) (*api.Accepted, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, resp.StatusCode, err
	}
	if resp.StatusCode != http.StatusCreated {
		return nil, resp.StatusCode, nil
	}
	var a api.Accepted
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, resp.StatusCode, err
	}
	return &a, resp.StatusCode, nil
}

func checkAcked(t *testing.T, base string, acked map[string]api.Accepted) {
	t.Helper()
	// Lookups run on a few connections at once: a crash test checks every
	// acknowledged receipt after every restart.
	type job struct {
		id string
		a  api.Accepted
	}
	size := integratedSize(t, base)
	jobs := make(chan job)
	var mu sync.Mutex
	var failures []string
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if msg := checkOne(client, base, size, j.id, j.a); msg != "" {
					mu.Lock()
					failures = append(failures, msg)
					mu.Unlock()
				}
			}
		}()
	}
	for id, a := range acked {
		jobs <- job{id, a}
	}
	close(jobs)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d acknowledged receipts not found as acknowledged, e.g. %s", len(failures), failures[0])
	}
}

// checkOne looks up one acknowledged receipt and says what is wrong, if
// anything.
func checkOne(client *http.Client, base string, size uint64, id string, a api.Accepted) string {
	u := base + "/v1/" + a.Kind + "s?id=" + url.QueryEscape(id)
	if a.Kind == "tombstone" {
		// Tombstones are looked up by item; check the entry itself.
		u = base + "/v1/proof/" + strconv.FormatUint(a.Index, 10)
	}
	resp, err := client.Get(u)
	if err != nil {
		return fmt.Sprintf("%s %s: %v", a.Kind, id, err)
	}
	defer resp.Body.Close()
	if a.Kind == "tombstone" {
		// A proof, or "not published yet" for an entry in the tree that
		// the next checkpoint will cover.
		var ref api.Refusal
		json.NewDecoder(resp.Body).Decode(&ref)
		if resp.StatusCode != http.StatusOK && (ref.Code != "not_published" || a.Index >= size) {
			return fmt.Sprintf("acknowledged tombstone %s at %d: proof gives %d %s", id, a.Index, resp.StatusCode, ref.Code)
		}
		return ""
	}
	var e api.Entry
	json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != http.StatusOK || e.Index != a.Index || e.LeafHash != a.LeafHash {
		return fmt.Sprintf("acknowledged %s %s at %d (%s): lookup gives %d %+v", a.Kind, id, a.Index, a.LeafHash, resp.StatusCode, e)
	}
	return ""
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// buildMemtrail builds the binary once per test run.
func buildMemtrail(t *testing.T) string {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "memtrail-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "memtrail")
		out, err := exec.Command("go", "build", "-o", buildPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}
