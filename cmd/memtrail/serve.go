package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/memtrail/memtrail/api"
	"github.com/memtrail/memtrail/internal/atomicfile"
	"github.com/memtrail/memtrail/internal/gen"
	mlog "github.com/memtrail/memtrail/log"
	"github.com/memtrail/memtrail/log/posixstore"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
	"github.com/transparency-dev/tessera"
	"k8s.io/klog/v2"
)

const serveUsage = `Usage: memtrail serve [--data DIR] [--listen ADDR] [--origin ORIGIN] [--trust FILE] [flags]

Run the receipt log: verified ingest of projection records, compactions and
tombstones into a C2SP tlog-tiles log, strict single use of their ids,
lookups, proofs and the tlog-tiles read API.

With no flags it runs on embedded defaults: data in ./memtrail-data
(Tessera POSIX tiles in log/, the SQLite index index.db, manifests/, the
archive of published checkpoints in checkpoints/), listening on
127.0.0.1:8080. The log signing key (log.key, mode 0600) is generated on
the first run, named by --origin, and reused after; its verifier key is
printed on standard output at start and served at GET /v1/log. The origin
is the key's name, so a data directory keeps its origin across restarts.
Without --origin the first run derives one that no other log shares, from
the host name and the new key: HOST/memtrail/<16 hex digits of the SHA-256
of the public key>. Witnesses know a log by its origin: give production
logs an --origin of their own (a URL without its scheme, e.g.
example.com/log). One process at a time uses a data directory: a second
serve (or fsck --repair) on it fails before writing anything.
docs/RELIABILITY.md, "Backup and restore", says which files are derived
and which must be backed up.

--trust FILE says whose receipts the log accepts (see docs/profile.md, "Trust
file"). Without it, the first run writes a development trust file
(DIR/trust.json) and one adapter, one compactor and one issuer key
(DIR/dev/*.pem), and says so: enough for "memtrail sign" and "memtrail
submit" to work straight away. Production passes --trust. SIGHUP reloads the
trust file without dropping requests; a file that does not parse is logged
and the old one kept. SIGTERM and SIGINT stop accepting, finish the
requests in progress and sequence what was accepted.

--witness-policy FILE takes a C2SP tlog-policy file (it must name this
log's key): each checkpoint is sent to its witnesses and published only
once its quorum has cosigned it, so /checkpoint, ?wait=proof answers and
every proof carry the cosignatures. Without the quorum within
--witness-timeout nothing new is published, and publication is retried
every --checkpoint-interval. With --witness-fail-open the checkpoint is
published anyway, with the cosignatures that arrived, and counted in
memtrail_checkpoints_published_without_quorum_total at /metrics.
docs/witness.md, "Witnessing a memtrail log", has an example. When the
published checkpoint lacks the policy's quorum at start (the policy is new
or changed, or the last one was published fail-open), the same tree is
signed again and sent to the witnesses at the first checkpoint interval.

DIR/log.policy is the C2SP tlog-policy this log's proofs verify under
(--policy of "memtrail verify"): a copy of the --witness-policy file, or
the log's key and "quorum none". It is also the record of how the log is
witnessed, and each start checks the policy it is given against it. A
policy at least as strict (every set of cosignatures that meets its quorum
meets the published one's: more witnesses required, a higher threshold,
new URLs) replaces it. A weaker one (a witness dropped or replaced, a lower
threshold), or no --witness-policy at all for a witnessed log, is refused
with an error that says how to proceed, unless --allow-policy-downgrade is
given. A replaced policy is kept as DIR/log.policy.replaced-<UTC time>:
proofs of checkpoints published before the change verify under it.

--read-timeout bounds how long a request may take to arrive: its headers
within 10s (or the timeout, if shorter), headers and body within the
timeout. Slower clients are cut off, a late body answered 408. It does not
bound the answer: a ?wait=proof answer may wait up to a minute more.

Logging: one line per event on standard error, in --log-format (text or
json), at --log-level (debug, info, warn, error; default info). Every
refused submission is one line at info level ("refused", with its status,
code, kind, id, batch line and the client's address; a 503 answer —
overload, a data directory that cannot be written — at debug level, as the
log says once why); a witness that stops cosigning is one warning, and one
line when it is back (memtrail_witness_up at /metrics), not one per
checkpoint interval; Tessera's own messages other than errors are logged
at debug level. --access-log FILE (or - for standard output) adds one line
per HTTP request: client, method, path, status, bytes and duration; SIGHUP
reopens the file, for rotation.

--debug-listen ADDR serves Go's profiles on a private address. For testing
only, --debug-clock adds /debug/clock there: PUT /debug/clock?offset=-10m
shifts the clock the log judges freshness and key validity by, to test how
it behaves when its clock jumps. Never use it in production.

The command exits 0 after a clean shutdown, 1 on any error, and 2 on a
usage error (an unknown flag, an argument, or a limit out of range).

Example:

	$ memtrail serve
	time=... level=INFO msg="generated the log key" file=memtrail-data/log.key origin=myhost/memtrail/5f0c2a9e81d4b7c3
	time=... level=INFO msg="development trust file written; pass --trust in production" file=memtrail-data/trust.json ...
	time=... level=INFO msg="tlog-policy for verifying this log's proofs written" file=memtrail-data/log.policy
	myhost/memtrail/5f0c2a9e81d4b7c3+3c3a5d1e+AQmrB2...
	time=... level=INFO msg=listening addr=127.0.0.1:8080 origin=myhost/memtrail/5f0c2a9e81d4b7c3 size=0 trust=memtrail-data/trust.json
`

func init() {
	register(&command{name: "serve", synopsis: "run the receipt log", run: runServe})
}

// Files in the data directory.
const (
	logKeyFile    = "log.key"
	logVKeyFile   = "log.vkey"
	logPolicyFile = "log.policy"
	devTrustFile  = "trust.json"
	devKeysDir    = "dev"
)

func runServe(args []string) error {
	fs := newFlagSet("serve", serveUsage)
	dataFlag := fs.String("data", "memtrail-data", "data directory")
	listenFlag := fs.String("listen", "127.0.0.1:8080", "address to listen on")
	originFlag := fs.String("origin", "", "log origin, used when generating the key (default HOST/memtrail/<hash of the new key>)")
	trustFlag := fs.String("trust", "", "trust file (default: a development trust file in the data directory)")
	batchSizeFlag := fs.Uint("batch-size", 8192, "most entries sequenced in one group (entries arriving while a group is sequenced form the next)")
	batchAgeFlag := fs.Duration("batch-age", 5*time.Millisecond, "how long the sequencer waits after a group arrives")
	checkpointFlag := fs.Duration("checkpoint-interval", time.Second, "how often a checkpoint is published (at least 100ms)")
	pushbackFlag := fs.Uint("pushback", 1<<16, "entries waiting to be sequenced beyond which submissions get 503")
	inflightFlag := fs.Int("max-in-flight", 4096, "projection records parsed and not yet sequenced, across all requests; more wait")
	connsFlag := fs.Int("max-connections", 8192, "client connections served at once; more wait in the listen backlog")
	policyFlag := fs.String("witness-policy", "", "C2SP tlog-policy file naming the witnesses that must cosign checkpoints")
	failOpenFlag := fs.Bool("witness-fail-open", false, "publish checkpoints even when the witness quorum is not met in time")
	downgradeFlag := fs.Bool("allow-policy-downgrade", false, "publish under a --witness-policy weaker than DATA/log.policy, or without one on a witnessed log")
	witnessTimeoutFlag := fs.Duration("witness-timeout", 5*time.Second, "how long to wait for witness cosignatures")
	logFormatFlag := fs.String("log-format", "text", "log format on standard error (and of --access-log): text or json")
	logLevelFlag := fs.String("log-level", "info", "least level logged on standard error: debug, info, warn or error")
	accessLogFlag := fs.String("access-log", "", "write one line per HTTP request to this file (\"-\": standard output); off by default")
	debugFlag := fs.String("debug-listen", "", "serve Go's /debug/pprof profiles on this address (keep it private)")
	debugClockFlag := fs.Bool("debug-clock", false, "for testing only: serve /debug/clock on --debug-listen, which shifts the clock the log judges freshness and key validity by")
	readTimeoutFlag := fs.Duration("read-timeout", 2*time.Minute, "longest a request (headers and body) may take to arrive; slower clients are cut off")
	memFlag := fs.String("memory-limit", "192MiB", "soft memory limit for the Go runtime (GOMEMLIMIT syntax: 192MiB, 1GiB; \"off\" for none)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fmt.Fprint(fs.Output(), "Usage: memtrail serve [--data DIR] [--listen ADDR] [--origin ORIGIN] [--trust FILE] [flags]\n")
		return errUsage
	}
	// Limits are checked before anything is written.
	switch {
	case *readTimeoutFlag <= 0:
		return badUsageError(withHint(fmt.Errorf("--read-timeout %s is not positive", *readTimeoutFlag), "use a duration such as 2m"))
	case *batchSizeFlag < 1:
		return badUsageError(withHint(errors.New("--batch-size must be at least 1"), "the default is 8192"))
	case *batchAgeFlag <= 0:
		return badUsageError(withHint(fmt.Errorf("--batch-age %s is not positive", *batchAgeFlag), "use a duration such as 5ms"))
	case *checkpointFlag < 100*time.Millisecond:
		return badUsageError(withHint(fmt.Errorf("--checkpoint-interval %s is below 100ms", *checkpointFlag), "use 100ms or more; the default is 1s"))
	case *pushbackFlag < 1:
		return badUsageError(withHint(errors.New("--pushback must be at least 1"), "the default is 65536"))
	case *inflightFlag < 1:
		return badUsageError(withHint(fmt.Errorf("--max-in-flight %d is below 1", *inflightFlag), "the default is 4096"))
	case *connsFlag < 1:
		return badUsageError(withHint(fmt.Errorf("--max-connections %d is below 1", *connsFlag), "the default is 8192"))
	case *witnessTimeoutFlag <= 0:
		return badUsageError(withHint(fmt.Errorf("--witness-timeout %s is not positive", *witnessTimeoutFlag), "use a duration such as 5s"))
	}
	logger, err := newLogger(*logFormatFlag, *logLevelFlag)
	if err != nil {
		return badUsageError(err)
	}
	quietTessera(logger)
	if err := setMemoryLimit(*memFlag); err != nil {
		return err
	}

	// The address is tried before anything is written, so that a port in
	// use does not leave a new data directory behind; it is bound for good
	// once the log is open.
	if probe, err := net.Listen("tcp", *listenFlag); err != nil {
		return withHint(fmt.Errorf("couldn't listen: %w", err), "another process uses "+*listenFlag+": stop it, or pass --listen with a free address")
	} else {
		probe.Close()
	}
	if err := os.MkdirAll(*dataFlag, 0o700); err != nil {
		return fmt.Errorf("couldn't create the data directory: %w", err)
	}
	// The directory's lock first: a second serve on a directory in use
	// fails before it has written anything into it.
	lock, err := posixstore.LockDir(*dataFlag)
	if errors.Is(err, posixstore.ErrDirInUse) {
		return withHint(err, "another memtrail process (serve, or fsck --repair) is using "+*dataFlag+": stop it first, or give this one its own --data")
	}
	if err != nil {
		return err
	}
	defer lock.Release() // a no-op once the log has closed it
	skey, vkey, err := loadOrCreateLogKey(*dataFlag, *originFlag, logger)
	if err != nil {
		return err
	}
	if err := writeVKey(*dataFlag, vkey); err != nil {
		return err
	}
	trustPath := *trustFlag
	if trustPath == "" {
		trustPath = filepath.Join(*dataFlag, devTrustFile)
		if err := ensureDevTrust(*dataFlag, logger); err != nil {
			return err
		}
	}
	trust, err := readTrust(trustPath)
	if err != nil {
		return err
	}

	cfg := mlog.Config{
		SigningKey:             skey,
		Trust:                  trust,
		BatchMaxSize:           *batchSizeFlag,
		BatchMaxAge:            *batchAgeFlag,
		CheckpointInterval:     *checkpointFlag,
		PushbackMaxOutstanding: *pushbackFlag,
		WitnessTimeout:         *witnessTimeoutFlag,
		WitnessFailOpen:        *failOpenFlag,
		Logger:                 logger,
	}
	policy := []byte("log " + vkey + "\nquorum none\n")
	if *policyFlag != "" {
		wg, b, err := loadWitnessPolicy(*policyFlag, vkey)
		if err != nil {
			return err
		}
		cfg.Witnesses, policy = wg, b
	} else if *failOpenFlag {
		return withHint(errors.New("--witness-fail-open needs --witness-policy"), "drop --witness-fail-open, or name the witnesses with --witness-policy")
	}
	change, err := planPolicy(*dataFlag, vkey, policy, *policyFlag)
	if err != nil {
		return err
	}
	if err := change.apply(*downgradeFlag, logger); err != nil {
		return err
	}

	if *debugClockFlag {
		if *debugFlag == "" {
			return withHint(errors.New("--debug-clock needs --debug-listen"), "add --debug-listen 127.0.0.1:PORT (keep it private)")
		}
		cfg.Now = debugClock(logger)
	}
	if *debugFlag != "" {
		dln, err := net.Listen("tcp", *debugFlag)
		if err != nil {
			return fmt.Errorf("couldn't listen on --debug-listen: %w", err)
		}
		logger.Info("serving profiles", "addr", dln.Addr().String())
		go http.Serve(dln, http.DefaultServeMux)
	}

	ctx := context.Background()
	// The embedded storage: the data directory's files, with the lock
	// taken above.
	var l *mlog.Log
	cfg.Storage, err = posixstore.Open(ctx, posixstore.Config{Lock: lock, Logger: logger})
	if err == nil {
		l, err = mlog.Open(ctx, cfg)
	}
	if errors.Is(err, mlog.ErrStorageUnavailable) {
		return withHint(err, "memtrail serve writes to "+*dataFlag+": free some space on its file system, or make it writable again")
	}
	if errors.Is(err, mlog.ErrTileDamaged) {
		return withHint(err, "run \"memtrail fsck --data "+*dataFlag+" --repair\": it rewrites damaged tiles from the entries, and says what it cannot repair")
	}
	if errors.Is(err, mlog.ErrArchiveAhead) {
		return withHint(err, "the tiles in "+filepath.Join(*dataFlag, "log")+" are older than the checkpoints the log published: restore log/ from the same backup as checkpoints/ (or a later one); \"memtrail fsck --data "+*dataFlag+"\" lists what disagrees")
	}
	if err != nil {
		return withHint(err, "\"memtrail fsck --data "+*dataFlag+"\" says what is wrong, and with --repair rebuilds the index from the log")
	}
	fmt.Println(vkey)

	ln, err := net.Listen("tcp", *listenFlag)
	if err != nil {
		l.Close(ctx)
		return fmt.Errorf("couldn't listen: %w", err)
	}
	ln = newLimitListener(ln, *connsFlag)
	server := api.New(l, api.Config{MaxInFlight: *inflightFlag, Logger: logger, Version: version()})
	handler := server.Handler()
	var access *accessLog
	if *accessLogFlag != "" {
		if access, err = openAccessLog(*accessLogFlag, *logFormatFlag); err != nil {
			ln.Close()
			l.Close(ctx)
			return err
		}
		handler = access.handler(handler)
	}
	srv := &http.Server{
		Handler: handler,
		// Slow clients: headers must arrive within ReadHeaderTimeout and
		// the whole request within ReadTimeout, or the connection is cut
		// (a late body is answered 408). WriteTimeout leaves time to
		// answer a request that arrived just in time; submission handlers
		// then set their own deadline for the answer (api.Config
		// AnswerTimeout), which covers ?wait=proof's wait of up to 60s.
		ReadHeaderTimeout: min(10*time.Second, *readTimeoutFlag),
		ReadTimeout:       *readTimeoutFlag,
		WriteTimeout:      *readTimeoutFlag + 30*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	size, _ := l.IntegratedSize(ctx)
	logger.Info("listening", "addr", ln.Addr().String(), "origin", l.Origin(), "size", size, "trust", trustPath)

	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGHUP, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(signals)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	for {
		select {
		case err := <-served:
			l.Close(ctx)
			return fmt.Errorf("the HTTP server stopped: %w", err)
		case sig := <-signals:
			if sig == syscall.SIGHUP {
				t, err := readTrust(trustPath)
				if err != nil {
					logger.Error("couldn't reload the trust file; keeping the current one", "file", trustPath, "error", err)
					continue
				}
				l.SetTrust(t)
				logger.Info("reloaded the trust file", "file", trustPath, "adapters", len(t.Adapters), "compactors", len(t.Compactors), "issuers", len(t.Issuers))
				if access != nil {
					if err := access.reopen(); err != nil {
						logger.Error("couldn't reopen the access log; writing to the old file", "file", *accessLogFlag, "error", err)
					}
				}
				continue
			}
			logger.Info("shutting down", "signal", sig.String())
			sctx, cancel := context.WithTimeout(ctx, time.Minute)
			herr := srv.Shutdown(sctx)
			lerr := l.Close(sctx)
			cancel()
			if err := errors.Join(herr, lerr); err != nil {
				return fmt.Errorf("couldn't shut down cleanly: %w", err)
			}
			logger.Info("stopped")
			return nil
		}
	}
}

// debugClock registers /debug/clock on the debug listener's mux and returns
// the clock it shifts, for testing how the log behaves when its clock jumps
// (--debug-clock). PUT /debug/clock?offset=-10m sets the offset from the
// system clock; GET shows it. Freshness and key validity are judged by this
// clock; nothing already logged depends on it, and checkpoints carry no
// time.
func debugClock(logger *slog.Logger) func() time.Time {
	var offset atomic.Int64
	http.HandleFunc("/debug/clock", func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
		case http.MethodPut, http.MethodPost:
			d, err := time.ParseDuration(r.URL.Query().Get("offset"))
			if err != nil {
				http.Error(w, "offset must be a duration such as -10m", http.StatusBadRequest)
				return
			}
			offset.Store(int64(d))
			logger.Warn("debug clock shifted", "offset", d)
		default:
			http.Error(w, "GET or PUT", http.StatusMethodNotAllowed)
			return
		}
		d := time.Duration(offset.Load())
		fmt.Fprintf(w, "{\"offset\":%q,\"now\":%q}\n", d, time.Now().Add(d).UTC().Format(time.RFC3339Nano))
	})
	logger.Warn("the log's clock can be shifted at /debug/clock on --debug-listen (--debug-clock): for testing only")
	return func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
}

// setMemoryLimit applies a soft memory limit: the runtime collects harder
// as the heap nears it, which keeps resident memory bounded under load.
func setMemoryLimit(v string) error {
	if v == "off" || v == "" {
		return nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			x, err := strconv.ParseInt(n, 10, 64)
			if err != nil || x <= 0 {
				break
			}
			debug.SetMemoryLimit(x * u.mult)
			return nil
		}
	}
	return withHint(fmt.Errorf("bad --memory-limit %q", v), "use a size such as 192MiB or 1GiB, or off")
}

func newLogger(format, level string) (*slog.Logger, error) {
	var opts slog.HandlerOptions
	switch level {
	case "debug":
		opts.Level = slog.LevelDebug
	case "info":
		opts.Level = slog.LevelInfo
	case "warn":
		opts.Level = slog.LevelWarn
	case "error":
		opts.Level = slog.LevelError
	default:
		return nil, withHint(fmt.Errorf("unknown log level %q", level), "use --log-level debug, info, warn or error")
	}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, &opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, &opts)), nil
	}
	return nil, withHint(fmt.Errorf("unknown log format %q", format), "use --log-format text or --log-format json")
}

// quietTessera routes Tessera's klog output to our logger: its errors as
// errors, and everything else (klog hands its warnings over at Info level,
// so they cannot be told from Tessera's chatter by level) at Debug level,
// shown by --log-level debug. What Tessera says about witnesses, once per
// checkpoint interval while they fail, the log says itself: once when a
// witness stops cosigning, once when it is back (log/witnessing.go).
func quietTessera(logger *slog.Logger) {
	klog.SetSlogLogger(slog.New(tesseraFilter{logger.Handler()}))
}

type tesseraFilter struct{ slog.Handler }

// level is the level a Tessera record of level l is logged at.
func (tesseraFilter) level(l slog.Level) slog.Level {
	if l >= slog.LevelError {
		return l
	}
	return slog.LevelDebug
}

func (f tesseraFilter) Enabled(ctx context.Context, l slog.Level) bool {
	return f.Handler.Enabled(ctx, f.level(l))
}

func (f tesseraFilter) Handle(ctx context.Context, r slog.Record) error {
	r.Level = f.level(r.Level)
	return f.Handler.Handle(ctx, r)
}

func (f tesseraFilter) WithAttrs(as []slog.Attr) slog.Handler {
	return tesseraFilter{f.Handler.WithAttrs(as)}
}

func (f tesseraFilter) WithGroup(name string) slog.Handler {
	return tesseraFilter{f.Handler.WithGroup(name)}
}

// loadOrCreateLogKey returns the log's signing key and verifier key,
// generating them on the first run.
func loadOrCreateLogKey(dir, origin string, logger *slog.Logger) (skey, vkey string, err error) {
	path := filepath.Join(dir, logKeyFile)
	data, err := receipts.ReadSecretFile(path)
	switch {
	case err == nil:
		skey = strings.TrimSpace(string(data))
		vkey, err = mlog.VerifierKey(skey)
		if err != nil {
			return "", "", fmt.Errorf("%s: %w", path, err)
		}
		keyOrigin := strings.SplitN(vkey, "+", 2)[0]
		if origin != "" && origin != keyOrigin {
			return "", "", withHint(fmt.Errorf("the log key in %s is for origin %q, not %q", path, keyOrigin, origin),
				"omit --origin to keep the existing log, or use another --data directory for a new log")
		}
		return skey, vkey, nil
	case errors.Is(err, receipts.ErrKeyFilePermissions):
		return "", "", withHint(err, "run: chmod 600 "+path)
	case !errors.Is(err, fs.ErrNotExist):
		return "", "", err
	}
	if origin == "" {
		host, _ := os.Hostname()
		skey, vkey, origin, err = mlog.GenerateLogKeyFor(host)
	} else {
		skey, vkey, err = mlog.GenerateLogKey(origin)
	}
	if err != nil {
		return "", "", withHint(err, "an origin looks like example.com/log: no spaces and no '+'")
	}
	if err := receipts.WriteSecretFile(path, []byte(skey+"\n")); err != nil {
		return "", "", err
	}
	logger.Info("generated the log key", "file", path, "origin", origin)
	return skey, vkey, nil
}

// writeVKey keeps DIR/log.vkey matching the log key, also one made with
// "memtrail keygen".
func writeVKey(dir, vkey string) error {
	if _, err := atomicfile.WriteIfChanged(filepath.Join(dir, logVKeyFile), []byte(vkey+"\n"), 0o644); err != nil {
		return fmt.Errorf("couldn't write the verifier key: %w", err)
	}
	return nil
}

// ensureDevTrust writes a development trust file and keys on the first run
// without --trust.
func ensureDevTrust(dir string, logger *slog.Logger) error {
	path := filepath.Join(dir, devTrustFile)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	s, err := gen.NewSigners()
	if err != nil {
		return err
	}
	kdir := filepath.Join(dir, devKeysDir)
	if err := os.MkdirAll(kdir, 0o700); err != nil {
		return fmt.Errorf("couldn't create %s: %w", kdir, err)
	}
	for name, k := range map[string][]byte{"adapter.pem": s.Adapter, "compactor.pem": s.Compactor, "issuer.pem": s.Issuer} {
		p := filepath.Join(kdir, name)
		os.Remove(p) // a key without a trust file is from an interrupted first run
		if err := receipts.WritePrivateKeyFile(p, k); err != nil {
			return err
		}
	}
	trust := s.Trust(time.Now().Add(-time.Hour).UTC().Truncate(time.Second))
	if err := os.WriteFile(path, receipts.MarshalTrust(trust), 0o644); err != nil {
		return fmt.Errorf("couldn't write the development trust file: %w", err)
	}
	logger.Info("development trust file written; pass --trust in production", "file", path, "keys", kdir,
		"adapter_id", s.AdapterID, "adapter_key_id", s.AdapterKeyID)
	return nil
}

func readTrust(path string) (*receipts.Trust, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("couldn't read the trust file: %w", err)
	}
	t, err := receipts.ParseTrust(b)
	if err != nil {
		return nil, withHint(fmt.Errorf("%s: %w", path, err), "docs/profile.md describes the trust file")
	}
	return t, nil
}

// readWitnessPolicy reads a tlog-policy file for Tessera, checking that it
// names this log's key.
func readWitnessPolicy(path, vkey string) (*tessera.WitnessGroup, error) {
	wg, _, err := loadWitnessPolicy(path, vkey)
	return wg, err
}

// loadWitnessPolicy is readWitnessPolicy, also returning the file's bytes.
func loadWitnessPolicy(path, vkey string) (*tessera.WitnessGroup, []byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("couldn't read the witness policy: %w", err)
	}
	p, err := verifier.ParsePolicy(b)
	if err != nil {
		return nil, nil, withHint(fmt.Errorf("%s: %w", path, err), "the file is a C2SP tlog-policy: log, witness, group and quorum lines")
	}
	found := false
	for _, lg := range p.Logs() {
		if lg.VKey == vkey {
			found = true
		}
	}
	if !found {
		return nil, nil, withHint(fmt.Errorf("%s does not name this log's key", path), "add the line: log "+vkey)
	}
	wg, err := tessera.NewWitnessGroupFromPolicy(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return &wg, b, nil
}
