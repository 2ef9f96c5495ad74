package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"flag"
	"fmt"
	"io"
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
// their PATH: "exec memtrail ..." runs the real command. $MEMTRAIL is its
// path.
//
// Besides testscript's own commands, the scripts have:
//
//	startlog [-interval D] [-wait D] NAME
//	    start a log served over HTTP, publishing a checkpoint every D
//	    (default 100ms) and giving up on ?wait=proof after -wait (default
//	    5s); $NAME is its URL, and $NAME_ADAPTER, $NAME_COMPACTOR and
//	    $NAME_ISSUER are its signers' private key files, $NAME_TRUST its
//	    trust file and $NAME_POLICY its tlog-policy
//	digest TEXT | digest -file FILE
//	    print sha256:<hex> of TEXT (or of FILE's bytes), for use with
//	    "cp stdout FILE"
//	freeport NAME
//	    set $NAME to a TCP port free on 127.0.0.1
//	waithealthy URL
//	    wait (up to a minute) until URL/healthz answers 200
//	waitget URL
//	    wait (up to a minute) until GET URL answers 200
//	http [-method M] [-type CONTENT-TYPE] [-data FILE] [-status N] URL
//	    send one request (GET by default; -data sends FILE as the body,
//	    with -type as its Content-Type, none if not given) and print the
//	    answer's body; fail unless its status is N (default 200)
//	flipbyte FILE OFFSET
//	    flip the lowest bit of the byte at OFFSET of FILE
func TestScripts(t *testing.T) {
	bin := buildMemtrail(t)
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", filepath.Dir(bin)+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("MEMTRAIL", bin)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"startlog": cmdStartLog,
			"digest": func(ts *testscript.TestScript, neg bool, args []string) {
				b := []byte(strings.Join(args, " "))
				if len(args) == 2 && args[0] == "-file" {
					var err error
					b, err = os.ReadFile(ts.MkAbs(args[1]))
					ts.Check(err)
				}
				fmt.Fprint(ts.Stdout(), receipts.Digest(b))
			},
			"waitget": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: waitget URL")
				}
				waitGet(ts, args[0])
			},
			"http":     cmdHTTP,
			"flipbyte": cmdFlipByte,
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
				waitGet(ts, args[0]+"/healthz")
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

// waitGet waits (up to a minute) until GET u answers 200.
func waitGet(ts *testscript.TestScript, u string) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
	}
	ts.Fatalf("GET %s did not answer 200 within a minute", u)
}

func cmdHTTP(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! http (use -status)")
	}
	fs := flag.NewFlagSet("http", flag.ContinueOnError)
	method := fs.String("method", http.MethodGet, "method")
	ctype := fs.String("type", "", "Content-Type of the body")
	data := fs.String("data", "", "file to send as the body")
	status := fs.Int("status", http.StatusOK, "status expected")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		ts.Fatalf("usage: http [-method M] [-type CONTENT-TYPE] [-data FILE] [-status N] URL")
	}
	var body io.Reader
	if *data != "" {
		b, err := os.ReadFile(ts.MkAbs(*data))
		ts.Check(err)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(*method, fs.Arg(0), body)
	ts.Check(err)
	if *ctype != "" {
		req.Header.Set("Content-Type", *ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	ts.Check(err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "%s", b)
	if resp.StatusCode != *status {
		ts.Fatalf("%s %s: %s, want %d\n%s", *method, fs.Arg(0), resp.Status, *status, b)
	}
}

func cmdFlipByte(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: flipbyte FILE OFFSET")
	}
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	ts.Check(err)
	off, err := strconv.Atoi(args[1])
	ts.Check(err)
	if off < 0 || off >= len(b) {
		ts.Fatalf("%s has %d bytes, no byte at %d", args[0], len(b), off)
	}
	b[off] ^= 1
	ts.Check(os.WriteFile(path, b, 0o644))
}

// TestREADMEQuickStart: every command of the README's quick start is in
// testdata/script/walk_quickstart.txt, as written there, except for the
// log's address ($LOG, a free port, for http://127.0.0.1:8080) and curl
// (the script's http command), so that the walk-through runs what the
// README says and the README says what was run.
func TestREADMEQuickStart(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("testdata/script/walk_quickstart.txt")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "In another terminal:\n\n")
	if !ok {
		t.Fatal("README.md: no quick start block after \"In another terminal:\"")
	}
	block, _, _ = strings.Cut(block, "\n\n")
	block = strings.ReplaceAll(block, "\\\n", " ")
	var commands int
	for _, line := range strings.Split(block, "\n") {
		cmd, _, _ := strings.Cut(line, "#") // a comment says what happens
		cmd = strings.Join(strings.Fields(cmd), " ")
		if cmd == "" {
			continue
		}
		commands++
		cmd = strings.ReplaceAll(cmd, "http://127.0.0.1:8080", "$LOG")
		cmd = strings.Replace(cmd, "curl -s ", "http ", 1)
		// "CMD > FILE" is "exec CMD", then "cp stdout FILE".
		left, file, redirect := strings.Cut(cmd, " > ")
		lines := strings.Split(string(script), "\n")
		found := false
		for i, sl := range lines {
			sl = strings.Join(strings.Fields(sl), " ")
			if strings.Contains(sl, cmd) || redirect && strings.HasSuffix(sl, "exec "+left) && i+1 < len(lines) && lines[i+1] == "cp stdout "+file {
				found = true
			}
		}
		if !found {
			t.Errorf("the README's quick start command %q is not in walk_quickstart.txt", cmd)
		}
	}
	if commands < 5 {
		t.Errorf("README.md: %d commands in the quick start block; the block was not found whole", commands)
	}
}
