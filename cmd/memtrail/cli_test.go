package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memtrail/memtrail/api"
	"github.com/memtrail/memtrail/internal/gen"
	mlog "github.com/memtrail/memtrail/log"
	"github.com/memtrail/memtrail/receipts"
)

// runCLI runs the built binary in dir and returns its exit status,
// standard output and standard error.
func runCLI(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(buildMemtrail(t), args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errOut.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String(), errOut.String()
	}
	t.Fatalf("memtrail %s: %v", strings.Join(args, " "), err)
	return -1, "", ""
}

// cliLog is a log served over HTTP in process, with the files the
// producer commands take: the signers' keys and the trust file.
type cliLog struct {
	url, dir, trust        string
	adapter, compactor, is string // private key files
	s                      *gen.Signers
	l                      *mlog.Log
}

// newCLILog starts a log that publishes a checkpoint every interval and
// gives up on ?wait=proof after wait; tr, if not nil, edits its trust.
func newCLILog(t *testing.T, interval, wait time.Duration, tr func(*receipts.Trust)) *cliLog {
	t.Helper()
	dir := t.TempDir()
	skey, _, err := mlog.GenerateLogKey("memtrail.test/cli")
	if err != nil {
		t.Fatal(err)
	}
	s := gen.Deterministic(41)
	trust := s.Trust(time.Now().UTC().Add(-time.Hour).Truncate(time.Second))
	if tr != nil {
		tr(trust)
	}
	l, err := mlog.Open(context.Background(), mlog.Config{Dir: filepath.Join(dir, "data"), SigningKey: skey, Trust: trust,
		BatchMaxAge: 5 * time.Millisecond, CheckpointInterval: interval, Logger: vtQuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(l, api.Config{WaitTimeout: wait, Logger: vtQuietLogger()}).Handler())
	t.Cleanup(func() {
		srv.Close()
		l.Close(context.Background())
	})
	cl := &cliLog{url: srv.URL, dir: dir, s: s, l: l,
		trust:     writeFile(t, dir, "trust.json", receipts.MarshalTrust(trust)),
		adapter:   filepath.Join(dir, "adapter.pem"),
		compactor: filepath.Join(dir, "compactor.pem"),
		is:        filepath.Join(dir, "issuer.pem")}
	for path, k := range map[string]ed25519.PrivateKey{cl.adapter: s.Adapter, cl.compactor: s.Compactor, cl.is: s.Issuer} {
		if err := receipts.WritePrivateKeyFile(path, k); err != nil {
			t.Fatal(err)
		}
	}
	return cl
}

// TestCLISignEmptyProjection: the draft allows a projection that delivered
// nothing (its delivered list has no minimum length), so FRAGMENT is
// optional, and the usage says so.
func TestCLISignEmptyProjection(t *testing.T) {
	cl := newCLILog(t, 100*time.Millisecond, 5*time.Second, nil)
	code, out, _ := runCLI(t, cl.dir, "sign", "-h")
	if code != 0 || !strings.Contains(out, "[FRAGMENT...]") || strings.Contains(out, "] FRAGMENT...") {
		t.Errorf("sign -h (exit %d) does not show FRAGMENT as optional:\n%s", code, out)
	}
	code, out, errOut := runCLI(t, cl.dir, "sign", "projection", "--key", cl.adapter)
	if code != 0 {
		t.Fatalf("sign projection with no fragment: exit %d\n%s", code, errOut)
	}
	r, err := receipts.ParseProjectionRecord([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Delivered) != 0 || r.Projection.ByteLength != 0 || r.Projection.Digest != receipts.Digest(nil) {
		t.Errorf("empty projection: %+v %+v", r.Delivered, r.Projection)
	}
}
