// Command witnessload compares the add-checkpoint throughput and latency
// of "memtrail witness serve" with omniwitness under the same load:
//
//	go run ./witness/internal/witnessload [-logs 50] [-rounds 6] [-per-round 50]
//
// It builds memtrail from this module and installs omniwitness at
// omniwitnessVersion into a temporary GOBIN (never touching go.mod), then
// runs both as processes on loopback, each on its own SQLite file with
// synchronous=FULL, both knowing the same logs. One client goroutine per
// log sends that log's checkpoints in order, each extending the previous
// one by 1 to 16 leaves with its consistency proof, so every log has a
// request in flight at all times and none conflicts. All request bodies
// are prepared before any is timed, and both witnesses receive the same
// ones. After a warm-up, the measurement alternates between the witnesses
// in rounds, so that background load on the machine affects both alike.
// A request answered 429 (pushback) is sent again after a random wait of up
// to 1 ms, then 2, 4, ... up to 64 ms; any other answer than 200 fails the
// log's client.
//
// It prints, for each witness, the checkpoints cosigned in the measured
// rounds, cosigned checkpoints per second (over the wall time of its
// rounds), the 50th and 99th percentile and maximum time to obtain a
// cosignature (retries included), the HTTP requests sent and the 429
// answers, and exits 1 if any request failed.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/memtrail/memtrail/witness"
	"github.com/memtrail/memtrail/witness/internal/witnesstest"
)

// omniwitnessVersion is the omniwitness the comparison runs against.
const omniwitnessVersion = "v0.0.0-20260720115447-2e1c6971d19e"

type omniConfig struct {
	name string
	args []string
}

// omniConfigs are the omniwitness configurations that can be measured.
// Its defaults allow 1000 database connections, whose concurrent
// transactions on SQLite often fail with SQLITE_BUSY, answered 429; with
// one connection, transactions wait for each other instead.
var omniConfigs = []omniConfig{
	{"omniwitness", nil},
	{"omniwitness-1conn", []string{"--db_max_conns", "1"}},
}

func main() {
	logsFlag := flag.Int("logs", 50, "number of logs, each with its own client goroutine")
	roundsFlag := flag.Int("rounds", 6, "measured rounds per witness, alternating")
	perRoundFlag := flag.Int("per-round", 50, "requests per log in each round")
	warmupFlag := flag.Int("warmup", 10, "requests per log sent to each witness before measuring")
	omniFlag := flag.String("omniwitness", "omniwitness,omniwitness-1conn", "omniwitness configurations to compare with, comma-separated: omniwitness (defaults), omniwitness-1conn (--db_max_conns 1)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("witnessload: ")
	for _, name := range strings.Split(*omniFlag, ",") {
		if name == "" {
			continue
		}
		if !slices.ContainsFunc(omniConfigs, func(c omniConfig) bool { return c.name == name }) {
			log.Fatalf("unknown omniwitness configuration %q", name)
		}
		selected[name] = true
	}
	if *logsFlag < 1 || *roundsFlag < 1 || *perRoundFlag < 1 || *warmupFlag < 1 || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*logsFlag, *roundsFlag, *perRoundFlag, *warmupFlag); err != nil {
		log.Fatal(err)
	}
}

// selected are the omniwitness configurations to measure.
var selected = map[string]bool{}

func run(nlogs, rounds, perRound, warmup int) error {
	dir, err := os.MkdirTemp("", "witnessload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	log.Printf("building memtrail and omniwitness@%s", omniwitnessVersion)
	memtrailBin, err := witnesstest.BuildMemtrail(dir)
	if err != nil {
		return err
	}
	omniBin, err := installOmniwitness(dir)
	if err != nil {
		return err
	}

	log.Printf("preparing %d requests for each of %d logs", warmup+rounds*perRound, nlogs)
	perLog := warmup + rounds*perRound
	reqs := make([][][]byte, nlogs)
	var known []witness.Log
	var yaml strings.Builder
	yaml.WriteString("Logs:\n")
	for i := range nlogs {
		l, err := witnesstest.NewLog(fmt.Sprintf("example.com/witnessload/%d", i))
		if err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		var size uint64
		for range perLog {
			next := size + 1 + rng.Uint64N(16)
			l.GrowTo(next)
			reqs[i] = append(reqs[i], l.Request(size, next))
			size = next
		}
		known = append(known, l.WitnessLog())
		fmt.Fprintf(&yaml, "  - Origin: %s\n    PublicKey: %s\n    URL: https://%s\n", l.Origin, l.VKey, l.Origin)
	}

	// memtrail.
	logsFile := filepath.Join(dir, "logs")
	if err := os.WriteFile(logsFile, witness.FormatLogs(known), 0o644); err != nil {
		return err
	}
	mp, err := witnesstest.Start(memtrailBin, "--data", filepath.Join(dir, "memtrail-data"), "--logs", logsFile, "--name", "witness.example.com/memtrail")
	if err != nil {
		return err
	}
	defer mp.Stop(30 * time.Second)
	var stops []func()
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()

	// omniwitness, with the same logs added to its built-in list. It makes
	// no outbound requests unless told to.
	skey, _, err := witness.GenerateKey("witness.example.com/omniwitness")
	if err != nil {
		return err
	}
	keyFile := filepath.Join(dir, "omni.key")
	if err := witness.WriteKeyFile(keyFile, skey); err != nil {
		return err
	}
	yamlFile := filepath.Join(dir, "omni-logs.yaml")
	if err := os.WriteFile(yamlFile, []byte(yaml.String()), 0o644); err != nil {
		return err
	}
	startOmni := func(name string, extra ...string) (*target, error) {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		args := append([]string{"--listen", addr, "--metrics_listen", "",
			"--db_file", filepath.Join(dir, name+".db"), "--private_key_path", keyFile,
			"--additional_logs", yamlFile}, extra...)
		cmd := exec.Command(omniBin, args...)
		out := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		stops = append(stops, func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
		if err := waitListening(addr); err != nil {
			return nil, fmt.Errorf("%s: %w\n%s", name, err, out.tail(4000))
		}
		return &target{name: name, url: "http://" + addr}, nil
	}

	targets := []*target{{name: "memtrail", url: mp.URL()}}
	for _, o := range omniConfigs {
		if !selected[o.name] {
			continue
		}
		tg, err := startOmni(o.name, o.args...)
		if err != nil {
			return err
		}
		targets = append(targets, tg)
	}
	for _, tg := range targets {
		tg.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: nlogs, MaxIdleConns: nlogs}}
		tg.run(reqs, 0, warmup, false)
		tg.sent, tg.pushback = 0, 0
	}
	log.Printf("measuring: %d rounds of %d requests per log for each witness", rounds, perRound)
	for r := range rounds {
		// Rotate which witness goes first.
		for j := range targets {
			tg := targets[(r+j)%len(targets)]
			start := warmup + r*perRound
			tg.run(reqs, start, start+perRound, true)
		}
	}

	fmt.Printf("%d logs, %d client goroutines, %d rounds of %d requests per log, GOMAXPROCS %d, %d CPUs, %s/%s\n\n",
		nlogs, nlogs, rounds, perRound, runtime.GOMAXPROCS(0), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	fmt.Printf("| witness | checkpoints cosigned | cosigned/s | p50 | p99 | max | HTTP requests | 429 retried | failed |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	failed := 0
	for _, tg := range targets {
		slices.Sort(tg.latencies)
		fmt.Printf("| %s | %d | %.0f | %s | %s | %s | %d | %d | %d |\n", tg.name, len(tg.latencies),
			float64(len(tg.latencies))/tg.busy.Seconds(),
			ms(percentile(tg.latencies, 0.50)), ms(percentile(tg.latencies, 0.99)), ms(tg.latencies[len(tg.latencies)-1]),
			tg.sent, tg.pushback, tg.failed)
		failed += tg.failed
	}
	fmt.Println()
	for _, tg := range targets {
		fmt.Printf("%s req/s by round: %s\n", tg.name, strings.Join(tg.roundRates, " "))
		for _, f := range tg.firstFailures {
			fmt.Printf("%s failure: %s\n", tg.name, f)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d requests failed", failed)
	}
	return nil
}

type target struct {
	name          string
	url           string
	client        *http.Client
	latencies     []time.Duration
	busy          time.Duration // wall time of the measured rounds
	failed        int
	sent          int // HTTP requests, including retries
	pushback      int // 429 answers, retried
	firstFailures []string
	roundRates    []string
}

// run sends requests [from, to) of every log, one goroutine per log.
func (tg *target) run(reqs [][][]byte, from, to int, measure bool) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var lats []time.Duration
	start := time.Now()
	for i := range reqs {
		wg.Go(func() {
			local := make([]time.Duration, 0, to-from)
			for k := from; k < to; k++ {
				// The latency of a checkpoint runs until it is cosigned. A
				// 429 (pushback) is retried after a random wait of up to
				// 1, 2, 4, ... 64 ms, as a polite log would retry.
				t0 := time.Now()
				for attempt := 0; ; attempt++ {
					resp, err := tg.client.Post(tg.url+"/add-checkpoint", "text/plain", bytes.NewReader(reqs[i][k]))
					var body []byte
					if err == nil {
						body, _ = io.ReadAll(resp.Body)
						resp.Body.Close()
					}
					mu.Lock()
					tg.sent++
					if err == nil && resp.StatusCode == http.StatusTooManyRequests {
						tg.pushback++
						mu.Unlock()
						time.Sleep(rand.N(time.Millisecond << min(attempt, 6)))
						continue
					}
					if err != nil || resp.StatusCode != http.StatusOK {
						tg.failed++
						if len(tg.firstFailures) < 5 {
							if err != nil {
								tg.firstFailures = append(tg.firstFailures, fmt.Sprintf("log %d request %d: %v", i, k, err))
							} else {
								tg.firstFailures = append(tg.firstFailures, fmt.Sprintf("log %d request %d: %d %q", i, k, resp.StatusCode, body))
							}
						}
						mu.Unlock()
						// The rest of this log's chain can't succeed.
						return
					}
					mu.Unlock()
					break
				}
				local = append(local, time.Since(t0))
			}
			mu.Lock()
			lats = append(lats, local...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if !measure {
		return
	}
	tg.latencies = append(tg.latencies, lats...)
	tg.busy += elapsed
	tg.roundRates = append(tg.roundRates, fmt.Sprintf("%.0f", float64(len(lats))/elapsed.Seconds()))
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// installOmniwitness installs omniwitness into a GOBIN of its own, from a
// directory outside this module, and returns the binary.
func installOmniwitness(dir string) (string, error) {
	gobin := filepath.Join(dir, "gobin")
	cmd := exec.Command(witnesstest.GoTool(), "install", "github.com/transparency-dev/witness/cmd/omniwitness@"+omniwitnessVersion)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install omniwitness: %w\n%s", err, out)
	}
	return filepath.Join(gobin, "omniwitness"), nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func waitListening(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("nothing listening on %s", addr)
}

// lockedBuffer collects a process's output while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}
