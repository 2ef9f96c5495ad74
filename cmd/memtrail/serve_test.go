package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/memtrail/memtrail/api"
	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/receipts"
)

// TestQuickStart runs the README's quick start: memtrail serve on its
// defaults in an empty directory, then sign, submit with a proof, and a
// replay that is refused.
func TestQuickStart(t *testing.T) {
	bin := buildMemtrail(t)
	dir := t.TempDir()
	port := freePort(t)
	serve := exec.Command(bin, "serve", "--listen", "127.0.0.1:"+port)
	serve.Dir = dir
	var stdout, stderr bytes.Buffer
	serve.Stdout, serve.Stderr = &stdout, &stderr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		serve.Process.Signal(syscall.SIGTERM)
		serve.Wait()
	}()
	base := "http://127.0.0.1:" + port
	waitHealthy(t, base, &stderr)
	if !strings.Contains(stderr.String(), "development trust file written") {
		t.Errorf("serve did not say it wrote a development trust file:\n%s", stderr.String())
	}
	var info api.LogInfo
	resp, err := http.Get(base + "/v1/log")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if !defaultOriginShape.MatchString(info.Origin) || strings.TrimSpace(stdout.String()) != info.VerifierKey {
		t.Errorf("/v1/log = %+v; serve printed %q", info, stdout.String())
	}
	for _, f := range []string{"memtrail-data/log.key", "memtrail-data/dev/adapter.pem"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v", f, err, fi.Mode())
		}
	}
	run := func(args ...string) (string, error) {
		c := exec.Command(bin, args...)
		c.Dir = dir
		out, err := c.CombinedOutput()
		return string(out), err
	}
	os.WriteFile(filepath.Join(dir, "memory.txt"), []byte("user prefers formal emails\n"), 0o644)
	rec, err := run("sign", "projection", "--key", "memtrail-data/dev/adapter.pem", "memory.txt")
	if err != nil {
		t.Fatalf("sign: %v\n%s", err, rec)
	}
	os.WriteFile(filepath.Join(dir, "p.json"), []byte(rec), 0o644)
	out, err := run("submit", "--log", base, "--proof-dir", "proofs", "p.json")
	if err != nil || !strings.Contains(out, "logged projection") {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "proofs", "p.json.tlog-proof")); err != nil {
		t.Errorf("no proof written: %v", err)
	}
	out, err = run("submit", "--log", base, "p.json")
	if err == nil || !strings.Contains(out, "projection_replay") {
		t.Errorf("replay: %v\n%s", err, out)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("replay exit status: %v", err)
	}
	// The proof verifies under the policy the log keeps in its directory.
	if pol, err := os.ReadFile(filepath.Join(dir, "memtrail-data", "log.policy")); err != nil || string(pol) != "log "+info.VerifierKey+"\nquorum none\n" {
		t.Errorf("memtrail-data/log.policy = %q, %v", pol, err)
	}
	out, err = run("verify", "proof", "proofs/p.json.tlog-proof", "--receipt", "p.json", "--policy", "memtrail-data/log.policy")
	if err != nil || !strings.Contains(out, "VALID") {
		t.Errorf("verify proof under memtrail-data/log.policy: %v\n%s", err, out)
	}
	// The README's vault quick start, as written there: a vault, a
	// projection from it submitted to the log, and its native verification.
	script := readmeBlock(t, "### From a memory vault")
	script = strings.ReplaceAll(script, "./bin/memtrail", bin)
	script = strings.ReplaceAll(script, "http://127.0.0.1:8080", base)
	sh := exec.Command("sh", "-ec", script)
	sh.Dir = dir
	shOut, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("README vault quick start: %v\n%s", err, shOut)
	}
	for _, want := range []string{"delivered 2 of 2 objects", "out/record.json: logged projection", ": VALID",
		"scope FULL_PROJECTION_AND_NATIVE_SOURCE_RESULTS", "ok   native_source_results (2 results re-derived natively"} {
		if !strings.Contains(string(shOut), want) {
			t.Errorf("README vault quick start: no %q in\n%s", want, shOut)
		}
	}
	// A second serve on the same address fails before writing anything.
	second := exec.Command(bin, "serve", "--listen", "127.0.0.1:"+port, "--data", "other-data")
	second.Dir = dir
	if out, err := second.CombinedOutput(); err == nil || !strings.Contains(string(out), "--listen") {
		t.Errorf("serve on a busy address: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "other-data")); !os.IsNotExist(err) {
		t.Errorf("serve on a busy address left a data directory: %v", err)
	}
}

// readmeBlock returns the shell commands of the first indented block
// after the README heading, continuation lines joined.
func readmeBlock(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q", heading)
	}
	var lines []string
	started := false
	for _, l := range strings.Split(rest, "\n") {
		if strings.HasPrefix(l, "    ") {
			started = true
			lines = append(lines, strings.TrimPrefix(l, "    "))
			continue
		}
		if started {
			break
		}
	}
	if len(lines) == 0 {
		t.Fatalf("README.md has no commands under %q", heading)
	}
	return strings.Join(lines, "\n") + "\n"
}

func waitHealthy(t *testing.T, base string, stderr *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTrustReload revokes the adapter key by rewriting the trust file and
// sending SIGHUP under load: no request is dropped, submissions after the
// reload are refused, and what was logged before stays logged.
func TestTrustReload(t *testing.T) {
	bin := buildMemtrail(t)
	dir := t.TempDir()
	signers := gen.Deterministic(9)
	trust := signers.Trust(time.Now().Add(-time.Hour).UTC().Truncate(time.Second))
	trustFile := filepath.Join(dir, "trust.json")
	os.WriteFile(trustFile, receipts.MarshalTrust(trust), 0o644)
	srv := startServe(t, bin, filepath.Join(dir, "data"), trustFile)
	defer srv.stop(t)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var seq, created, refused atomic.Int64
	var mu sync.Mutex
	var unexpected []string
	var logged []api.Accepted
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{}
			for ctx.Err() == nil {
				r, _, err := signers.Projection(fmt.Sprint("urn:reload:", seq.Add(1)), time.Now().UTC(), 1, 50)
				if err != nil {
					t.Error(err)
					return
				}
				resp, err := client.Post(srv.url+"/v1/projections", "application/json", bytes.NewReader(r.Canonical()))
				if err != nil {
					mu.Lock()
					unexpected = append(unexpected, err.Error())
					mu.Unlock()
					continue
				}
				var a api.Accepted
				var ref api.Refusal
				switch resp.StatusCode {
				case 201:
					json.NewDecoder(resp.Body).Decode(&a)
					created.Add(1)
					mu.Lock()
					logged = append(logged, a)
					mu.Unlock()
				case 403:
					json.NewDecoder(resp.Body).Decode(&ref)
					refused.Add(1)
					if ref.Code != "adapter_key_revoked" {
						mu.Lock()
						unexpected = append(unexpected, ref.Code)
						mu.Unlock()
					}
				default:
					mu.Lock()
					unexpected = append(unexpected, resp.Status)
					mu.Unlock()
				}
				resp.Body.Close()
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	at := time.Now().UTC()
	pin := *trust.Adapters[0]
	pin.RevokedAt = &at
	trust.Adapters = []*receipts.AdapterPin{&pin}
	os.WriteFile(trustFile, receipts.MarshalTrust(trust), 0o644)
	srv.cmd.Process.Signal(syscall.SIGHUP)
	time.Sleep(700 * time.Millisecond)
	cancel()
	wg.Wait()
	if len(unexpected) > 0 {
		t.Fatalf("answers other than 201 and 403 adapter_key_revoked: %v", unexpected[:min(5, len(unexpected))])
	}
	if created.Load() == 0 || refused.Load() == 0 {
		t.Fatalf("created %d, refused %d: the reload should fall in the middle of the load", created.Load(), refused.Load())
	}
	// Everything logged before the revocation is still served.
	for _, a := range logged {
		resp, err := http.Get(srv.url + "/v1/projections?id=" + a.ID)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			// The index trails the log by a few milliseconds.
			time.Sleep(100 * time.Millisecond)
			resp, _ = http.Get(srv.url + "/v1/projections?id=" + a.ID)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("%s logged at %d before the revocation: lookup %d", a.ID, a.Index, resp.StatusCode)
			}
		}
	}
}

// TestSecretsStayOut: no private key and no projection byte appears in the
// server's logs, metrics or error answers, whatever is submitted; key files
// are 0600 and refused when group or others can read them.
func TestSecretsStayOut(t *testing.T) {
	bin := buildMemtrail(t)
	dir := t.TempDir()
	port := freePort(t)
	serve := exec.Command(bin, "serve", "--listen", "127.0.0.1:"+port, "--log-format", "json")
	serve.Dir = dir
	var stdout, stderr bytes.Buffer
	serve.Stdout, serve.Stderr = &stdout, &stderr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	base := "http://127.0.0.1:" + port
	waitHealthy(t, base, &stderr)
	run := func(args ...string) string {
		c := exec.Command(bin, args...)
		c.Dir = dir
		out, _ := c.CombinedOutput()
		return string(out)
	}
	secret := "the patient's diagnosis is confidential-7f3a9c"
	os.WriteFile(filepath.Join(dir, "memory.txt"), []byte(secret), 0o644)
	rec := run("sign", "projection", "--key", "memtrail-data/dev/adapter.pem", "--material-out", "m.json", "memory.txt")
	os.WriteFile(filepath.Join(dir, "p.json"), []byte(rec), 0o644)
	var answers bytes.Buffer
	answers.WriteString(run("submit", "--log", base, "p.json"))
	answers.WriteString(run("submit", "--log", base, "p.json"))
	// Broken and foreign submissions, and the key files themselves as bodies.
	for _, body := range []string{secret, rec[:len(rec)/2], "{\"@version\":\"" + secret + "\"}"} {
		resp, err := http.Post(base+"/v1/projections", "application/json", strings.NewReader(body))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers.Write(b)
		}
	}
	for _, f := range []string{"memtrail-data/log.key", "memtrail-data/dev/adapter.pem"} {
		key, _ := os.ReadFile(filepath.Join(dir, f))
		resp, err := http.Post(base+"/v1/projections", "application/json", bytes.NewReader(key))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers.Write(b)
		}
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	serve.Process.Signal(syscall.SIGTERM)
	serve.Wait()

	logKey, _ := os.ReadFile(filepath.Join(dir, "memtrail-data/log.key"))
	adapterKey, _ := os.ReadFile(filepath.Join(dir, "memtrail-data/dev/adapter.pem"))
	pemLines := strings.Split(string(adapterKey), "\n")
	if len(pemLines) < 3 {
		t.Fatalf("adapter key file: %q", adapterKey)
	}
	needles := map[string]string{
		"projection bytes":       "confidential-7f3a9c",
		"log private key":        strings.TrimSpace(string(logKey)),
		"log private key suffix": strings.TrimSpace(string(logKey))[len(strings.TrimSpace(string(logKey)))-20:],
		"adapter private key":    pemLines[1][len(pemLines[1])-20:],
	}
	haystacks := map[string]string{"logs": stderr.String() + stdout.String(), "metrics": string(metrics)}
	for name, needle := range needles {
		for where, hay := range haystacks {
			if strings.Contains(hay, needle) {
				t.Errorf("%s appears in the %s", name, where)
			}
		}
		if name != "projection bytes" && strings.Contains(answers.String(), needle) {
			t.Errorf("%s appears in an answer", name)
		}
	}
	// The answer to a body that is the secret itself names no byte of it.
	if strings.Contains(answers.String(), "7f3a9c") {
		t.Errorf("projection bytes echoed in an answer: %s", answers.String())
	}
	// Key files: 0600, and refused once group-readable.
	for _, f := range []string{"memtrail-data/log.key", "memtrail-data/dev/adapter.pem", "memtrail-data/dev/compactor.pem", "memtrail-data/dev/issuer.pem"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v", f, fi.Mode().Perm(), err)
		}
	}
	os.Chmod(filepath.Join(dir, "memtrail-data/log.key"), 0o640)
	out, err := exec.Command(bin, "serve", "--data", filepath.Join(dir, "memtrail-data"), "--listen", "127.0.0.1:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "chmod 600") {
		t.Errorf("serve with a group-readable log key: %v\n%s", err, out)
	}
	os.Chmod(filepath.Join(dir, "memtrail-data/dev/adapter.pem"), 0o604)
	if out := run("sign", "projection", "--key", "memtrail-data/dev/adapter.pem", "memory.txt"); !strings.Contains(out, "chmod 600") {
		t.Errorf("sign with a world-readable key: %s", out)
	}
}

// TestServeRefusesBadLimits: a limit out of range is a usage error (exit
// 2), found before anything is written.
func TestServeRefusesBadLimits(t *testing.T) {
	bin := buildMemtrail(t)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--max-connections", "0"}, {"--max-connections", "-1"}, {"--max-in-flight", "-1"}, {"--max-in-flight", "0"},
		{"--batch-size", "0"}, {"--batch-age", "0"}, {"--checkpoint-interval", "50ms"}, {"--pushback", "0"},
		{"--witness-timeout", "0"}, {"--read-timeout", "0"},
	} {
		data := filepath.Join(dir, "data")
		cmd := exec.Command(bin, append([]string{"serve", "--data", data, "--listen", "127.0.0.1:0"}, args...)...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), args[0]) || strings.Contains(string(out), "panic") {
			t.Errorf("serve %v: %v\n%s", args, err, out)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Errorf("serve %v left a data directory: %v", args, err)
		}
	}
}

// TestTesseraFilter: of what Tessera logs through klog, errors reach the
// log as errors; the rest (its warnings arrive at Info level, its witness
// complaints every checkpoint interval among them) only at Debug level.
func TestTesseraFilter(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		want  []string
		not   []string
	}{
		{slog.LevelInfo, []string{`level=ERROR msg="couldn't integrate"`}, []string{"Initializing", "WitnessGateway"}},
		{slog.LevelDebug, []string{`level=ERROR msg="couldn't integrate"`, `level=DEBUG msg="WitnessGateway`, `level=DEBUG msg="Initializing`}, nil},
	} {
		var buf bytes.Buffer
		l := slog.New(tesseraFilter{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level})})
		l.Info("Initializing directory for POSIX log")
		l.Info("WitnessGateway: failing-open despite error")
		l.Error("couldn't integrate")
		out := buf.String()
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("at %v: no %q in\n%s", tc.level, w, out)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(out, w) {
				t.Errorf("at %v: %q in\n%s", tc.level, w, out)
			}
		}
	}
}

// defaultOriginShape is the origin "memtrail serve" derives when --origin
// is not given: HOST/memtrail/<16 hex digits>.
var defaultOriginShape = regexp.MustCompile(`^[a-z0-9._-]+/memtrail/[0-9a-f]{16}$`)

// TestServeDefaultOrigin: without --origin every new data directory gets an
// origin of its own (so a witness that knows one log answers 404, not 403,
// to a second), and a data directory keeps its origin across restarts.
func TestServeDefaultOrigin(t *testing.T) {
	bin := buildMemtrail(t)
	dir := t.TempDir()
	origin := func(data string) string {
		t.Helper()
		p := startServe(t, bin, filepath.Join(dir, data), "")
		defer p.stop(t)
		resp, err := http.Get(p.url + "/v1/log")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var info api.LogInfo
		if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
			t.Fatal(err)
		}
		if !defaultOriginShape.MatchString(info.Origin) || !strings.HasPrefix(info.VerifierKey, info.Origin+"+") {
			t.Fatalf("%s: origin %q, verifier key %q; want HOST/memtrail/<16 hex>", data, info.Origin, info.VerifierKey)
		}
		return info.Origin
	}
	a := origin("a")
	if again := origin("a"); again != a {
		t.Errorf("the origin changed across a restart: %q, then %q", a, again)
	}
	if b := origin("b"); b == a {
		t.Errorf("two data directories share the origin %q", a)
	}
	code, out, errOut := runCLI(t, dir, "serve", "-h")
	if code != 0 || !strings.Contains(out+errOut, "HOST/memtrail/") {
		t.Errorf("serve -h does not document the default origin (exit %d):\n%s%s", code, out, errOut)
	}
}
