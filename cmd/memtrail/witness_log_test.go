package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/verifier"
	"github.com/memtrail/memtrail/witness"
)

// TestWitnessDownLogsOnce: while its witness is down, the log asks it again
// every checkpoint interval, but says so once — one warning when it stops
// cosigning, one line when it is back — with memtrail_witness_up following
// it, instead of a warning every interval.
func TestWitnessDownLogsOnce(t *testing.T) {
	bin := buildMemtrail(t)
	dir := t.TempDir()
	const origin = "memtrail.test/witness-logging"
	trust := writeTestTrust(t, dir, gen.Deterministic(41))
	data := filepath.Join(dir, "log")
	logVKey := keygenInto(t, bin, "log", origin, data, logKeyFile)
	wdata := filepath.Join(dir, "witness")
	const wName = "witness.test/logging"
	wVKey := keygenInto(t, bin, "witness", wName, wdata, witnessKeyFile)
	logsFile := writeFile(t, dir, "witness-logs", witness.FormatLogs([]witness.Log{{Origin: origin, VKey: logVKey}}))
	wAddr := "127.0.0.1:" + freePort(t)
	policy := fmt.Sprintf("log %s\nwitness w1 %s http://%s\nquorum w1\n", logVKey, wVKey, wAddr)
	policyFile := writeFile(t, dir, "log.policy", []byte(policy))
	port := freePort(t)
	l := startTestProc(t, "memtrail serve", bin, "http://127.0.0.1:"+port+"/healthz", "serve", "--data", data, "--trust", trust,
		"--witness-policy", policyFile, "--batch-age", "10ms", "--checkpoint-interval", "200ms", "--listen", "127.0.0.1:"+port)
	up := fmt.Sprintf("memtrail_witness_up{witness=%q}", wName)
	waitFor(t, 5*time.Second, "memtrail_witness_up 0", func() bool { return l.metric(t, up) == 0 })
	// About ten checkpoint intervals with the witness down.
	time.Sleep(2 * time.Second)
	if n := l.metric(t, fmt.Sprintf("memtrail_witness_requests_total{code=%q,witness=%q}", "error", wName)); n < 5 {
		t.Fatalf("%v failed witness requests in 2s, want at least 5", n)
	}
	logs := l.stderr.tail(1 << 20)
	if n := strings.Count(logs, "witness is not cosigning"); n != 1 {
		t.Errorf("%d 'not cosigning' lines while the witness was down, want 1:\n%s", n, logs)
	}
	if n := strings.Count(logs, "level=WARN"); n != 2 { // the new log's first checkpoint, and the witness
		t.Errorf("%d warnings while the witness was down, want 2:\n%s", n, logs)
	}

	w := startTestProc(t, "memtrail witness", bin, "http://"+wAddr+"/metrics", "witness", "serve", "--data", wdata, "--logs", logsFile, "--listen", wAddr)
	p := mustPolicy(t, policy)
	waitFor(t, 15*time.Second, "a cosigned checkpoint", func() bool {
		_, err := verifier.OpenCheckpoint(p, []byte(httpGetAny(t, l.url+"/checkpoint")))
		return err == nil
	})
	waitFor(t, 5*time.Second, "memtrail_witness_up 1", func() bool { return l.metric(t, up) == 1 })
	logs = l.stderr.tail(1 << 20)
	if n := strings.Count(logs, "witness is cosigning again"); n != 1 || !strings.Contains(logs, "witness="+wName) {
		t.Errorf("%d 'cosigning again' lines once the witness was back, want 1:\n%s", n, logs)
	}
	l.stop(t)
	w.stop(t)
}
