package witness_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memtrail/memtrail/witness"
	"github.com/memtrail/memtrail/witness/internal/witnesstest"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// crashTrials is how many times TestCrash kills the witness. The default
// keeps "go test" short; raise it for a long run:
//
//	MEMTRAIL_CRASH_TRIALS=200 go test -run TestCrash -timeout 30m ./witness/
func crashTrials(t *testing.T) int {
	s := os.Getenv("MEMTRAIL_CRASH_TRIALS")
	if s == "" {
		return 5
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("MEMTRAIL_CRASH_TRIALS=%q is not a positive number", s)
	}
	return n
}

// crashLog is one simulated log of the crash test: the history the witness
// follows (main) and a fork signed by the same key, which the witness must
// never cosign once main is cosigned.
type crashLog struct {
	mu    sync.Mutex // guards main, which drivers grow
	main  *witnesstest.Log
	fork  *witnesstest.Log // only the fork submitter uses it during load
	acked uint64           // largest size cosigned and acknowledged; under ackMu
}

// TestCrash builds the memtrail binary, runs "memtrail witness serve", and
// SIGKILLs it at random moments while simulated logs push checkpoints to it
// concurrently, and fork submitters push inconsistent ones. After every
// restart it checks that the served size never went below a size it
// acknowledged with a cosignature, that the served checkpoint is on the
// history it cosigned, and that it refuses forks of it.
func TestCrash(t *testing.T) {
	trials := crashTrials(t)
	bin := buildMemtrail(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	logsFile := filepath.Join(dir, "logs")

	const nlogs = 6
	logs := make([]*crashLog, nlogs)
	var list []witness.Log
	for i := range logs {
		m := newSimLog(t, fmt.Sprintf("example.com/crash/%d", i))
		m.GrowTo(64)
		f := m.Fork(0, "fork")
		f.GrowTo(64)
		logs[i] = &crashLog{main: m, fork: f}
		list = append(list, m.WitnessLog())
	}
	if err := os.WriteFile(logsFile, witness.FormatLogs(list), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--data", data, "--logs", logsFile, "--name", "witness.example.com/crash"}
	client := &http.Client{Timeout: 10 * time.Second}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))

	var vkey string
	var cosigV note.Verifier
	var ackMu sync.Mutex
	acks := 0
	var forksRefused atomic.Int64
	for trial := range trials + 1 {
		p := startWitness(t, bin, args...)
		if vkey == "" {
			vkey = p.VKey
			v, err := fnote.NewVerifierForCosignatureV1(vkey)
			if err != nil {
				t.Fatal(err)
			}
			cosigV = v
		} else if p.VKey != vkey {
			p.Kill()
			t.Fatalf("trial %d: the witness key changed across restarts: %q, was %q", trial, p.VKey, vkey)
		}

		// The invariants, after every restart.
		sizes := make([]uint64, nlogs)
		for i, l := range logs {
			size, ok := crashCheck(t, client, p, cosigV, l, trial)
			if ok {
				forksRefused.Add(2)
			}
			if !ok {
				// Nothing cosigned yet: only possible before any ack. Cosign
				// the main history first, so the fork can't win the origin.
				if l.acked != 0 {
					p.Kill()
					t.Fatalf("trial %d: %s: nothing served after size %d was acknowledged\n%s", trial, l.main.Origin, l.acked, p.Log())
				}
				r := httpPost(t, client, p.URL(), l.main.Request(0, 1))
				if r.code != 200 {
					p.Kill()
					t.Fatalf("trial %d: first checkpoint of %s = %d %q", trial, l.main.Origin, r.code, r.body)
				}
				l.acked, size = 1, 1
			}
			sizes[i] = size
		}
		if trial == trials {
			// Last round: no more load. Stop gracefully this time.
			if err := p.Stop(30 * time.Second); err != nil {
				t.Fatalf("witness did not stop cleanly after SIGTERM: %v\n%s", err, p.Log())
			}
			break
		}

		// Load, then SIGKILL at a random moment.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i, l := range logs {
			for d := range 2 {
				wg.Go(func() {
					drng := rand.New(rand.NewPCG(uint64(trial), uint64(i*2+d)))
					known := sizes[i]
					for {
						select {
						case <-stop:
							return
						default:
						}
						l.mu.Lock()
						size := known + 1 + drng.Uint64N(16)
						l.main.GrowTo(size)
						body, cp := l.main.Request(known, size), l.main.Checkpoint(size)
						l.mu.Unlock()
						r, err := tryPost(client, p.URL(), body)
						if err != nil {
							return // killed
						}
						switch r.code {
						case 200:
							checkCosignature(t, cosigV, cp, r.body, time.Now())
							ackMu.Lock()
							l.acked = max(l.acked, size)
							acks++
							ackMu.Unlock()
							known = size
						case 409:
							n, err := strconv.ParseUint(strings.TrimSpace(string(r.body)), 10, 64)
							if err != nil {
								t.Errorf("409 body %q", r.body)
								return
							}
							known = n
						default:
							t.Errorf("trial %d: %s: old %d size %d = %d %q", trial, l.main.Origin, known, size, r.code, r.body)
							return
						}
					}
				})
			}
			wg.Go(func() {
				frng := rand.New(rand.NewPCG(uint64(trial), uint64(1000+i)))
				known := uint64(0)
				for {
					select {
					case <-stop:
						return
					default:
					}
					size := known + drng64(frng, 8)
					l.fork.GrowTo(size)
					r, err := tryPost(client, p.URL(), l.fork.Request(known, size))
					if err != nil {
						return
					}
					switch r.code {
					case 409:
						known, _ = strconv.ParseUint(strings.TrimSpace(string(r.body)), 10, 64)
					case 422:
						forksRefused.Add(1)
						known = 0
					default:
						t.Errorf("trial %d: %s: fork checkpoint old %d size %d = %d %q, want 409 or 422",
							trial, l.main.Origin, known, size, r.code, r.body)
						return
					}
				}
			})
		}
		time.Sleep(time.Duration(5+rng.IntN(300)) * time.Millisecond)
		p.Kill()
		close(stop)
		wg.Wait()
		if t.Failed() {
			t.Fatalf("trial %d failed; witness log:\n%s", trial, p.Log())
		}
	}
	t.Logf("%d kills, %d cosignatures acknowledged, %d fork checkpoints refused", trials, acks, forksRefused.Load())
}

func drng64(r *rand.Rand, n uint64) uint64 { return 1 + r.Uint64N(n) }

// crashCheck checks the invariants for one log after a restart and returns
// the served size, or false if nothing is served.
func crashCheck(t *testing.T, client *http.Client, p *witnesstest.Process, cosigV note.Verifier, l *crashLog, trial int) (uint64, bool) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		p.Kill()
		t.Fatalf("trial %d: %s: %s\n%s", trial, l.main.Origin, fmt.Sprintf(format, args...), p.Log())
	}
	resp, err := client.Get(p.URL() + "/checkpoint/" + url.PathEscape(l.main.Origin))
	if err != nil {
		fail("GET checkpoint: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == 404 {
		return 0, false
	}
	if resp.StatusCode != 200 {
		fail("GET checkpoint = %d %q", resp.StatusCode, body)
	}
	// The served checkpoint carries the log's signature and the witness's.
	logV, err := note.NewVerifier(l.main.VKey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(body, note.VerifierList(logV, cosigV))
	if err != nil || len(n.Sigs) != 2 {
		fail("served checkpoint %q does not verify: %v", body, err)
	}
	_, size, root := parseServed(t, body)
	if size < l.acked {
		fail("rolled back: serves size %d after acknowledging %d", size, l.acked)
	}
	l.main.GrowTo(size + 1)
	if !bytes.Equal(root, l.main.Root(size)) {
		fail("serves a root at size %d that is not the cosigned history's", size)
	}
	// The 409 of a stale request reports the same size.
	if r := httpPost(t, client, p.URL(), l.main.Request(0, size+1)); size > 0 && (r.code != 409 || string(r.body) != fmt.Sprintf("%d\n", size)) {
		fail("stale request = %d %q, want 409 %d", r.code, r.body, size)
	}
	// Forks are refused: a larger fork with a proof in its own tree, and the
	// fork at the same size.
	l.fork.GrowTo(size + 10)
	for _, body := range [][]byte{l.fork.Request(size, size+10), l.fork.Request(size, size)} {
		if r := httpPost(t, client, p.URL(), body); r.code != 422 {
			fail("fork from size %d = %d %q, want 422", size, r.code, r.body)
		}
	}
	return size, true
}

// tryPost is httpPost that returns transport errors instead of failing.
func tryPost(c *http.Client, base string, body []byte) (response, error) {
	resp, err := c.Post(base+"/add-checkpoint", "text/plain", bytes.NewReader(body))
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	return response{resp.StatusCode, resp.Header.Get("Content-Type"), b}, nil
}
