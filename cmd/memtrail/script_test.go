package main

import (
	"context"
	"crypto/ed25519"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memtrail/memtrail/api"
	"github.com/memtrail/memtrail/internal/gen"
	mlog "github.com/memtrail/memtrail/log"
	"github.com/memtrail/memtrail/log/posixstore"
	"github.com/memtrail/memtrail/receipts"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs the scripts of testdata/script (testscript format)
// against the memtrail binary built by buildMemtrail, which is first on
// their PATH: "exec memtrail ..." runs the real command.
//
// Besides testscript's own commands, the scripts have:
//
//	startlog [-interval D] [-wait D] NAME
//	    start a log served over HTTP, publishing a checkpoint every D
//	    (default 100ms) and giving up on ?wait=proof after -wait (default
//	    5s); $NAME is its URL, and $NAME_ADAPTER, $NAME_COMPACTOR and
//	    $NAME_ISSUER are its signers' private key files, $NAME_TRUST its
//	    trust file and $NAME_POLICY its tlog-policy
//	digest TEXT
//	    print sha256:<hex> of TEXT, for use with "cp stdout FILE"
//	freeport NAME
//	    set $NAME to a TCP port free on 127.0.0.1
//	waithealthy URL
//	    wait (up to a minute) until URL/healthz answers 200
func TestScripts(t *testing.T) {
	bin := buildMemtrail(t)
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+env.Getenv("PATH"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"startlog": cmdStartLog,
			"digest": func(ts *testscript.TestScript, neg bool, args []string) {
				fmt.Fprint(ts.Stdout(), receipts.Digest([]byte(strings.Join(args, " "))))
			},
			"freeport": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: freeport NAME")
				}
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				ts.Check(err)
				defer ln.Close()
				ts.Setenv(args[0], strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
			},
			"waithealthy": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: waithealthy URL")
				}
				for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					if resp, err := http.Get(args[0] + "/healthz"); err == nil {
						resp.Body.Close()
						if resp.StatusCode == http.StatusOK {
							return
						}
					}
				}
				ts.Fatalf("%s did not become healthy", args[0])
			},
		},
	})
}

func cmdStartLog(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! startlog")
	}
	fs := flag.NewFlagSet("startlog", flag.ContinueOnError)
	interval := fs.Duration("interval", 100*time.Millisecond, "checkpoint interval")
	wait := fs.Duration("wait", 5*time.Second, "?wait=proof timeout")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		ts.Fatalf("usage: startlog [-interval D] [-wait D] NAME")
	}
	name := fs.Arg(0)
	dir := ts.MkAbs(strings.ToLower(name) + ".log")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		ts.Fatalf("%v", err)
	}
	skey, vkey, err := mlog.GenerateLogKey("memtrail.test/script")
	ts.Check(err)
	s, err := gen.NewSigners()
	ts.Check(err)
	trust := s.Trust(time.Now().UTC().Add(-time.Hour).Truncate(time.Second))
	parts, err := posixstore.Open(context.Background(), posixstore.Config{Dir: filepath.Join(dir, "data")})
	ts.Check(err)
	l, err := mlog.Open(context.Background(), mlog.Config{Storage: parts, SigningKey: skey, Trust: trust,
		BatchMaxAge: 5 * time.Millisecond, CheckpointInterval: *interval, Logger: vtQuietLogger()})
	ts.Check(err)
	srv := httptest.NewServer(api.New(l, api.Config{WaitTimeout: *wait, Logger: vtQuietLogger()}).Handler())
	ts.Defer(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		l.Close(ctx)
	})
	files := map[string][]byte{"trust.json": receipts.MarshalTrust(trust), "log.policy": []byte("log " + vkey + "\nquorum none\n")}
	for _, f := range []struct {
		name string
		key  ed25519.PrivateKey
	}{{"adapter.pem", s.Adapter}, {"compactor.pem", s.Compactor}, {"issuer.pem", s.Issuer}} {
		ts.Check(receipts.WritePrivateKeyFile(filepath.Join(dir, f.name), f.key))
	}
	for f, b := range files {
		ts.Check(os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	ts.Setenv(name, srv.URL)
	ts.Setenv(name+"_ADAPTER", filepath.Join(dir, "adapter.pem"))
	ts.Setenv(name+"_COMPACTOR", filepath.Join(dir, "compactor.pem"))
	ts.Setenv(name+"_ISSUER", filepath.Join(dir, "issuer.pem"))
	ts.Setenv(name+"_TRUST", filepath.Join(dir, "trust.json"))
	ts.Setenv(name+"_POLICY", filepath.Join(dir, "log.policy"))
}
