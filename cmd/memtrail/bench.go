package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/internal/loadgen"
	"github.com/memtrail/memtrail/internal/rekorload"
	"github.com/memtrail/memtrail/receipts"
)

const benchUsage = `Usage: memtrail bench ingest [--log URL --adapter-key KEY.pem] [--modes LIST] [flags]

Measure ingest. Receipts are signed before the clock starts (signing is the
producer's cost, not the log's); every one is fully verified by the log, and
the log syncs every batch to disk before it answers.

Without --log, the command starts "memtrail serve" as a child process on a
fresh data directory in a temporary folder (with a trust file for its own
keys), so the log's CPU and memory are its own; its peak resident memory is
reported. With --log it drives a running log, which must trust the key given
with --adapter-key (for a development log, its DIR/dev/adapter.pem).

--modes is a comma-separated list, run in this order in one process:

	raw     raw Tessera POSIX Add of equal-size entries, same batching, no
	        verification, index or HTTP: the baseline (needs no log)
	batch   POST /v1/batch, --batch-lines per request, --clients clients
	single  POST /v1/projections, --single-clients clients
	wait    POST /v1/projections?wait=proof, --wait-clients clients
	rate    single submissions at half the single (or else batch) rate of
	        this run, or --rate, open loop: latency from submit to
	        sequenced
	rekor   Rekor v2 (rekor-tiles posix v2.3.0, built with go install on
	        first use), given its best batching and a 1 s checkpoint
	        interval, loaded like wait: --wait-clients clients each
	        submitting a signed entry and waiting for its inclusion proof

Results are printed as a table, ratios against raw when it ran, and with
--json as JSON lines. Each run also reports CPU time per entry: the log's
(when the bench started it) and the load generator's, in time and in bare
Ed25519 verifications of the run's receipts timed on one core just before
it, a unit that holds still while the machine's speed drifts. --repeat N
runs the mode list N times and ends with the median of each mode's rate and
of its ratio against the raw run of the same repetition.

The command exits 0 if every run completed and 1 otherwise.

Example:

	$ memtrail bench ingest --modes raw,batch,single,wait --total 100000
`

func init() {
	register(&command{name: "bench", synopsis: "measure ingest throughput and latency (bench ingest)", run: runBench})
}

func runBench(args []string) error {
	if len(args) == 0 || args[0] != "ingest" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Print(benchUsage)
			return nil
		}
		fmt.Fprint(os.Stderr, benchUsage)
		return errUsage
	}
	fs := newFlagSet("bench ingest", benchUsage)
	logFlag := fs.String("log", "", "URL of a running log (default: start one)")
	keyFlag := fs.String("adapter-key", "", "adapter key the running log trusts")
	modesFlag := fs.String("modes", "raw,batch,single,wait,rate", "runs, in order")
	totalFlag := fs.Int("total", 60000, "receipts per run")
	clientsFlag := fs.Int("clients", 16, "concurrent clients for batch")
	singleClientsFlag := fs.Int("single-clients", 1000, "concurrent clients for single")
	waitClientsFlag := fs.Int("wait-clients", 1000, "concurrent clients for wait")
	waitTotalFlag := fs.Int("wait-total", 0, "receipts for wait (default --total)")
	linesFlag := fs.Int("batch-lines", 1000, "lines per batch request")
	rawClientsFlag := fs.Int("raw-clients", 8192, "concurrent adders for raw")
	rateFlag := fs.Float64("rate", 0, "submissions per second for rate (default half the single rate of this run, or else of batch)")
	batchSizeFlag := fs.Uint("batch-size", 8192, "sequencing group size of the started log")
	batchAgeFlag := fs.Duration("batch-age", 5*time.Millisecond, "sequencing batch age of the started log")
	rawSizeFlag := fs.Uint("raw-batch-size", 4096, "Tessera batch size for raw")
	rawAgeFlag := fs.Duration("raw-batch-age", 50*time.Millisecond, "Tessera batch age for raw")
	checkpointFlag := fs.Duration("checkpoint-interval", 250*time.Millisecond, "checkpoint interval of the started log")
	inflightFlag := fs.Int("max-in-flight", 4096, "in-flight limit of the started log")
	jsonFlag := fs.Bool("json", false, "also write results as JSON lines")
	cpuprofileFlag := fs.String("cpuprofile", "", "write a CPU profile of the load generator to this file")
	repeatFlag := fs.Int("repeat", 1, "run the list of modes this many times and report medians (these machines are noisy)")
	prefillFlag := fs.Int("prefill", 0, "first append this many signed receipts to the started log (its index catches up at start)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *cpuprofileFlag != "" {
		f, err := os.Create(*cpuprofileFlag)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *repeatFlag < 1 {
		return withHint(fmt.Errorf("bad --repeat %d", *repeatFlag), "--repeat counts runs of the mode list: 1 or more")
	}
	modes := strings.Split(*modesFlag, ",")
	for _, m := range modes {
		switch m {
		case "raw", "batch", "single", "wait", "rate", "rekor":
		default:
			return withHint(fmt.Errorf("unknown mode %q", m), "modes are raw, batch, single, wait, rate and rekor")
		}
	}
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "memtrail-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	signers := gen.Deterministic(42)
	base := *logFlag
	var child *exec.Cmd
	needLog := false
	for _, m := range modes {
		needLog = needLog || (m != "raw" && m != "rekor")
	}
	if base != "" {
		if *keyFlag == "" {
			return withHint(errors.New("--log needs --adapter-key"), "for a development log: --adapter-key memtrail-data/dev/adapter.pem")
		}
		k, err := readKey(*keyFlag)
		if err != nil {
			return err
		}
		signers.Adapter = k
		signers.AdapterID, signers.AdapterKeyID = "urn:memtrail:adapter:dev", "dev-adapter-key"
	} else if needLog {
		if *prefillFlag > 0 {
			fmt.Fprintf(os.Stderr, "prefilling the log with %d receipts...\n", *prefillFlag)
			t0 := time.Now()
			err := loadgen.Prefill(ctx, filepath.Join(tmp, "data", "log"), signers, strconv.FormatInt(time.Now().UnixNano(), 36), *prefillFlag, func(n int) {
				fmt.Fprintf(os.Stderr, "\r%d", n)
			})
			if err != nil {
				return fmt.Errorf("prefill: %w", err)
			}
			fmt.Fprintf(os.Stderr, "\rprefilled %d receipts in %s; the log indexes them at start\n", *prefillFlag, time.Since(t0).Round(time.Second))
		}
		child, base, err = startBenchLog(tmp, signers, *batchSizeFlag, *batchAgeFlag, *checkpointFlag, *inflightFlag)
		if err != nil {
			return err
		}
		defer func() {
			child.Process.Signal(syscall.SIGTERM)
			child.Wait()
		}()
	}

	fmt.Fprintf(os.Stderr, "signing %d receipts per run...\n", *totalFlag)
	var results []loadgen.Result
	// perMode gathers each mode's results over the repetitions, and
	// ratios each one's entries/s against the raw run of its repetition.
	perMode := map[string][]loadgen.Result{}
	ratios := map[string][]float64{}
	run := 0
	for rep := 0; rep < *repeatFlag; rep++ {
		if *repeatFlag > 1 {
			fmt.Printf("-- repetition %d of %d\n", rep+1, *repeatFlag)
		}
		var raw, batch, wait, single *loadgen.Result
		for _, m := range modes {
			run++
			n := *totalFlag
			if (m == "wait" || m == "rekor") && *waitTotalFlag > 0 {
				n = *waitTotalFlag
			}
			var r loadgen.Result
			if m == "rekor" {
				r, err = benchRekor(ctx, filepath.Join(tmp, "rekor-"+strconv.Itoa(run)), *waitClientsFlag, n)
				if err != nil {
					return err
				}
				results = append(results, r)
				perMode[m] = append(perMode[m], r)
				line := r.String()
				if wait != nil {
					line += fmt.Sprintf("\n           memtrail wait-proof / rekor: %.2f× the entries/s, %.2f× the p50", wait.PerSecond/r.PerSecond, float64(wait.P50)/float64(r.P50))
				}
				fmt.Println(line)
				if *jsonFlag {
					b, _ := json.Marshal(r)
					fmt.Println(string(b))
				}
				continue
			}
			bodies, err := loadgen.Projections(signers, strconv.Itoa(run)+"-"+strconv.FormatInt(time.Now().UnixNano(), 36), n)
			if err != nil {
				return err
			}
			// The unit every figure below can be read in: one bare Ed25519
			// verification of this run's receipts, timed now, on this
			// machine whose speed drifts from minute to minute.
			bare, err := bareVerify(signers, bodies)
			if err != nil {
				return err
			}
			cpu0 := cpuNow(child)
			switch m {
			case "raw":
				r, err = loadgen.RawTessera(ctx, filepath.Join(tmp, "raw-"+strconv.Itoa(run)), bodies, *rawClientsFlag, *rawSizeFlag, *rawAgeFlag)
				if err != nil {
					return err
				}
				raw = &r
			case "batch":
				r = loadgen.Batch(ctx, base, bodies, *clientsFlag, *linesFlag)
				batch = &r
			case "single":
				r = loadgen.Single(ctx, base, bodies, *singleClientsFlag, false)
				single = &r
			case "wait":
				r = loadgen.Single(ctx, base, bodies, *waitClientsFlag, true)
				wait = &r
			case "rate":
				rate := *rateFlag
				if rate == 0 {
					switch {
					case single != nil:
						rate = single.PerSecond / 2
					case batch != nil:
						rate = batch.PerSecond / 2
					default:
						return withHint(errors.New("rate needs --rate or a single or batch run before it"), "add single before rate in --modes")
					}
				}
				r = loadgen.Rate(ctx, base, bodies[:min(len(bodies), int(rate*20))], rate)
			}
			cpu := cpuNow(child).sub(cpu0)
			r.BareVerify = bare
			if r.Entries > 0 {
				if m == "raw" {
					// Raw Tessera runs in this process.
					r.LogCPUPerEntry = cpu.self / time.Duration(r.Entries)
				} else {
					r.LogCPUPerEntry = cpu.log / time.Duration(r.Entries)
					r.LoadCPUPerEntry = cpu.self / time.Duration(r.Entries)
				}
			}
			results = append(results, r)
			perMode[m] = append(perMode[m], r)
			line := r.String()
			if raw != nil && m != "raw" {
				line += fmt.Sprintf("  (%.2f× raw)", r.PerSecond/raw.PerSecond)
				ratios[m] = append(ratios[m], r.PerSecond/raw.PerSecond)
			}
			if c := r.CPUString(); c != "" {
				line += "\n           " + c
			}
			fmt.Println(line)
			if *jsonFlag {
				b, _ := json.Marshal(r)
				fmt.Println(string(b))
			}
		}
	}
	if *repeatFlag > 1 {
		fmt.Printf("-- medians of %d repetitions\n", *repeatFlag)
		seen := map[string]bool{}
		for _, m := range modes {
			if seen[m] {
				continue
			}
			seen[m] = true
			rs := perMode[m]
			rates := make([]float64, len(rs))
			for i, r := range rs {
				rates[i] = r.PerSecond
			}
			line := fmt.Sprintf("%-10s %9.0f entries/s (runs: %s)", m, median(rates), joinFloats(rates, "%.0f"))
			if rr := ratios[m]; len(rr) > 0 {
				line += fmt.Sprintf("  %.2f× raw (runs: %s)", median(rr), joinFloats(rr, "%.2f"))
			}
			fmt.Println(line)
		}
	}
	if child != nil {
		if rss, err := peakRSS(child.Process.Pid); err == nil {
			fmt.Printf("log peak resident memory: %.1f MiB\n", float64(rss)/(1<<20))
		}
	}
	for _, r := range results {
		if r.Entries == 0 || r.Errors > 0 {
			return exitError{1}
		}
	}
	return nil
}

// benchRekor builds, starts and loads Rekor v2 with clients clients.
func benchRekor(ctx context.Context, tmp string, clients, total int) (loadgen.Result, error) {
	dir, err := rekorload.DefaultBinDir()
	if err != nil {
		return loadgen.Result{}, err
	}
	fmt.Fprintf(os.Stderr, "building rekor-tiles posix %s (cached in %s)...\n", rekorload.Version, dir)
	bin, err := rekorload.Build(ctx, dir)
	if err != nil {
		return loadgen.Result{}, err
	}
	srv, err := rekorload.Start(ctx, bin, filepath.Join(tmp, "rekor"), rekorload.Options{})
	if err != nil {
		return loadgen.Result{}, err
	}
	defer srv.Stop()
	res, err := rekorload.Load(ctx, srv.URL(), clients, total)
	if err != nil {
		return loadgen.Result{}, err
	}
	r := loadgen.Result{Mode: "rekor", Clients: clients, Entries: res.Entries, Errors: res.Errors, Duration: res.Duration,
		PerSecond: res.PerSecond, P50: res.P50, P90: res.P90, P99: res.P99, FirstErr: res.FirstError}
	return r, nil
}

// startBenchLog starts "memtrail serve" on a fresh directory, trusting
// signers, and returns its base URL.
func startBenchLog(tmp string, signers *gen.Signers, batchSize uint, batchAge, checkpoint time.Duration, inflight int) (*exec.Cmd, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	trust := signers.Trust(time.Now().Add(-time.Hour).UTC().Truncate(time.Second))
	trust.Freshness.MaxProjectionAge = time.Hour
	trust.Freshness.MaxTrustAge = time.Hour
	trustFile := filepath.Join(tmp, "trust.json")
	if err := os.WriteFile(trustFile, receipts.MarshalTrust(trust), 0o644); err != nil {
		return nil, "", err
	}
	cmd := exec.Command(self, "serve", "--data", filepath.Join(tmp, "data"), "--trust", trustFile, "--listen", "127.0.0.1:0",
		"--batch-size", strconv.FormatUint(uint64(batchSize), 10), "--batch-age", batchAge.String(),
		"--checkpoint-interval", checkpoint.String(), "--max-in-flight", strconv.Itoa(inflight), "--log-format", "json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, "", err
	}
	cmd.Stdout = nil
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	// The listening address is in the "listening" log line.
	sc := bufio.NewScanner(stderr)
	addr := ""
	for sc.Scan() {
		var line struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
			addr = line.Addr
			break
		}
	}
	if addr == "" {
		cmd.Process.Kill()
		return nil, "", errors.New("the benchmark log did not start")
	}
	go func() {
		for sc.Scan() {
			if bytes.Contains(sc.Bytes(), []byte(`"level":"ERROR"`)) {
				fmt.Fprintln(os.Stderr, "log:", sc.Text())
			}
		}
	}()
	base := "http://" + addr
	for i := 0; i < 100; i++ {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cmd, base, nil
}

// bareVerify times ed25519.Verify alone over up to 2,000 of bodies' records,
// on one goroutine, and returns the time of one verification.
func bareVerify(signers *gen.Signers, bodies [][]byte) (time.Duration, error) {
	pub := signers.Adapter.Public().(ed25519.PublicKey)
	type item struct{ msg, sig []byte }
	items := make([]item, 0, 2000)
	for _, b := range bodies[:min(len(bodies), cap(items))] {
		r, err := receipts.ParseProjectionRecord(b)
		if err != nil {
			return 0, err
		}
		items = append(items, item{r.SignedBytes(), r.Proof.Signature})
	}
	if len(items) == 0 {
		return 0, nil
	}
	t0 := time.Now()
	for _, it := range items {
		if !ed25519.Verify(pub, it.msg, it.sig) {
			return 0, errors.New("bench: a generated receipt does not verify")
		}
	}
	return time.Since(t0) / time.Duration(len(items)), nil
}

// cpuUsage is CPU time (user and system) consumed so far by this process
// and by the started log, if any.
type cpuUsage struct{ self, log time.Duration }

func (a cpuUsage) sub(b cpuUsage) cpuUsage { return cpuUsage{a.self - b.self, a.log - b.log} }

// cpuNow reads the CPU time of this process and of child (nil: none, or a
// log given with --log, whose CPU is not ours to read).
func cpuNow(child *exec.Cmd) cpuUsage {
	var u cpuUsage
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if child != nil && child.Process != nil {
		u.log = procCPU(child.Process.Pid)
	}
	return u
}

// procCPU reads utime + stime of a process from /proc/PID/stat, in the
// kernel's clock ticks (USER_HZ, 100 a second on Linux).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// fields are counted after its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(ut+st) * (time.Second / 100)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func joinFloats(xs []float64, format string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(parts, ", ")
}

// peakRSS reads VmHWM of a process.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, err := strconv.ParseInt(f[1], 10, 64)
				return kb * 1024, err
			}
		}
	}
	return 0, errors.New("no VmHWM")
}
