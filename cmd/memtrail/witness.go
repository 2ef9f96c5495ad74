package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/memtrail/memtrail/internal/atomicfile"
	"github.com/memtrail/memtrail/witness"
	"github.com/memtrail/memtrail/witness/sqlitestore"
)

const witnessUsage = `Usage: memtrail witness serve --data DIR --logs FILE [--listen ADDR] [--name NAME] [--log-level LEVEL]

Commands:

	serve   run a C2SP tlog-witness
`

const witnessServeUsage = `Usage: memtrail witness serve --data DIR --logs FILE [--listen ADDR] [--name NAME] [--log-level LEVEL]

Run a transparency log witness (c2sp.org/tlog-witness): it cosigns the
checkpoints of the logs listed in FILE, and only checkpoints consistent with
every one it cosigned before for the same log.

DIR holds the witness key (witness.key, mode 0600, refused if group or others
can read it), its public key (witness.vkey) and the state (witness.db, the
latest cosigned checkpoint of each log). On the first run the key is
generated, named NAME (by default <hostname>/memtrail-witness); later runs
reuse it, and NAME, if given, must match it. The verifier key is printed on
standard output at start, for the witness policies of logs and clients.

FILE lists the logs, one entry per "vkey" line, each optionally followed by
an "origin" line (by default the origin is the key name):

	logs/v0
	vkey example.com/log+a1b2c3d4+AbCd...
	origin example.com/log

Sending SIGHUP reloads FILE; if it does not parse, the witness keeps the
logs it has and logs the error. SIGTERM and SIGINT stop the witness after
the requests in progress are answered.

Endpoints: POST /add-checkpoint, GET /checkpoint/<origin, path-escaped>,
GET /metrics. Logs go to standard error, in text, at --log-level (debug,
info, warn, error; default info): the start, reloads and the first
cosignature of each log at info, refused checkpoints that are validly
signed (a fork's evidence) at warn, store failures at error, and requests
refused for anything else (malformed, unknown origin, bad signature, stale
size) at debug only.

The command exits 0 after a clean shutdown, 1 if the witness could not
start or stopped on an error, and 2 on a usage error (such as a missing
--data or --logs).

Example:

	$ memtrail witness serve --data /var/lib/memtrail-witness \
		--logs /etc/memtrail/witness-logs --listen :7380 --name witness.example.com/w1
	witness.example.com/w1+83d999a8+BDjs9dAt3bddvvapMpC6RMz7NzrJip9XXM3WUMRttpOX
	time=... level=INFO msg=listening addr=[::]:7380 logs=3 name=witness.example.com/w1 vkey=...
`

func init() {
	register(&command{
		name:     "witness",
		synopsis: "run a transparency log witness (witness serve)",
		run:      runWitness,
	})
}

func runWitness(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, witnessUsage)
		return errUsage
	}
	switch args[0] {
	case "serve":
		return runWitnessServe(args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprint(os.Stdout, witnessUsage)
		return nil
	default:
		fmt.Fprintf(os.Stderr, "memtrail witness: unknown command %q\n\n%s", args[0], witnessUsage)
		return errUsage
	}
}

// Files in the data directory.
const (
	witnessKeyFile  = "witness.key"
	witnessVKeyFile = "witness.vkey"
	witnessDBFile   = "witness.db"
)

func runWitnessServe(args []string) error {
	fs := newFlagSet("witness serve", witnessServeUsage)
	dataFlag := fs.String("data", "", "directory for the key and the state (required)")
	logsFlag := fs.String("logs", "", "file listing the logs to witness (required)")
	listenFlag := fs.String("listen", "127.0.0.1:7380", "address to listen on")
	nameFlag := fs.String("name", "", "witness name, used when generating the key (default <hostname>/memtrail-witness)")
	logLevelFlag := fs.String("log-level", "info", "least level logged on standard error: debug, info, warn or error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkUsage("memtrail witness serve --data DIR --logs FILE [--listen ADDR] [--name NAME] [--log-level LEVEL]", fs, fs.Args(), nil, "data", "logs"); err != nil {
		return err
	}
	logger, err := newLogger("text", *logLevelFlag)
	if err != nil {
		return badUsageError(err)
	}

	// Read the logs first, so that a mistake there creates nothing.
	logs, err := readWitnessLogs(*logsFlag)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*dataFlag, 0o700); err != nil {
		return fmt.Errorf("couldn't create data directory: %w", err)
	}
	if fi, err := os.Stat(*dataFlag); err == nil && fi.Mode().Perm()&0o077 != 0 {
		logger.Warn("the data directory is accessible by group or others; whoever can write the state can make the witness cosign a fork",
			"dir", *dataFlag, "mode", fmt.Sprintf("%04o", fi.Mode().Perm()))
	}
	skey, err := loadOrCreateWitnessKey(*dataFlag, *nameFlag, logger)
	if err != nil {
		return err
	}
	dbPath := filepath.Join(*dataFlag, witnessDBFile)
	store, err := sqlitestore.Open(dbPath)
	if err != nil {
		return withHint(fmt.Errorf("couldn't open the witness state: %w", err),
			"only one witness may use a data directory at a time; check that no other \"memtrail witness serve\" uses "+*dataFlag)
	}
	defer store.Close()

	ctx := context.Background()
	w, err := witness.New(ctx, witness.Config{Key: skey, Store: store, Logs: logs, Logger: logger, Version: version()})
	if err != nil {
		return fmt.Errorf("couldn't start the witness: %w", err)
	}
	fmt.Println(w.VerifierKey())
	// witness.vkey is what operators hand to log operators: kept matching
	// the key, also when the key was made with "memtrail keygen".
	if _, err := atomicfile.WriteIfChanged(filepath.Join(*dataFlag, witnessVKeyFile), []byte(w.VerifierKey()+"\n"), 0o644); err != nil {
		return fmt.Errorf("couldn't write the verifier key: %w", err)
	}

	ln, err := net.Listen("tcp", *listenFlag)
	if err != nil {
		return fmt.Errorf("couldn't listen: %w", err)
	}
	srv := &http.Server{
		Handler:           w.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	logger.Info("listening", "addr", ln.Addr().String(), "logs", len(logs), "name", w.Name(), "vkey", w.VerifierKey())
	if len(logs) == 0 {
		logger.Warn("no logs configured; every add-checkpoint will be answered 404", "file", *logsFlag)
	}

	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGHUP, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(signals)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	for {
		select {
		case err := <-served:
			return fmt.Errorf("the HTTP server stopped: %w", err)
		case sig := <-signals:
			if sig == syscall.SIGHUP {
				reloadWitnessLogs(w, *logsFlag, logger)
				continue
			}
			logger.Info("shutting down", "signal", sig.String())
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := srv.Shutdown(sctx)
			cancel()
			if err != nil {
				return fmt.Errorf("couldn't shut down cleanly: %w", err)
			}
			if err := store.Close(); err != nil {
				return fmt.Errorf("couldn't close the witness state: %w", err)
			}
			logger.Info("stopped")
			return nil
		}
	}
}

// loadOrCreateWitnessKey returns the key in dir, generating it on first use.
func loadOrCreateWitnessKey(dir, name string, logger *slog.Logger) (string, error) {
	path := filepath.Join(dir, witnessKeyFile)
	skey, err := witness.ReadKeyFile(path)
	switch {
	case err == nil:
		keyName := strings.SplitN(skey, "+", 4)
		if len(keyName) == 4 && name != "" && keyName[2] != name {
			return "", withHint(fmt.Errorf("the key in %s is named %q, not %q", path, keyName[2], name),
				"omit --name to use the existing key, or use another --data directory for a new witness")
		}
		return skey, nil
	case errors.Is(err, witness.ErrKeyFilePermissions):
		return "", withHint(err, "run: chmod 600 "+path)
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	if name == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "localhost"
		}
		name = host + "/memtrail-witness"
	}
	skey, vkey, err := witness.GenerateKey(name)
	if err != nil {
		return "", withHint(err, "pick another --name, such as witness.example.com/w1")
	}
	if err := witness.WriteKeyFile(path, skey); err != nil {
		return "", err
	}
	logger.Info("generated the witness key", "file", path, "name", name, "vkey", vkey)
	return skey, nil
}

func readWitnessLogs(path string) ([]witness.Log, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("couldn't read the logs file: %w", err)
	}
	logs, err := witness.ParseLogs(b)
	if err != nil {
		return nil, withHint(fmt.Errorf("couldn't parse %s: %w", path, err),
			`the file starts with "logs/v0", then one "vkey <key>" line per log, each optionally followed by "origin <origin>"`)
	}
	return logs, nil
}

func reloadWitnessLogs(w *witness.Witness, path string, logger *slog.Logger) {
	logs, err := readWitnessLogs(path)
	if err == nil {
		err = w.SetLogs(logs)
	}
	if err != nil {
		logger.Error("couldn't reload the logs file; keeping the current logs", "file", path, "error", err)
		return
	}
	logger.Info("reloaded the logs file", "file", path, "logs", len(logs))
}
