package rekorload

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Defaults for [Options]. The checkpoint interval is the one the comparison
// fixes; the batching is the best found for this server at 1,000
// concurrent clients (see [DefaultBatchMaxSize]).
const (
	// DefaultCheckpointInterval is how often Rekor publishes a checkpoint.
	DefaultCheckpointInterval = time.Second

	// DefaultBatchMaxSize and DefaultBatchMaxAge are Tessera's batching
	// limits: queued entries go to the sequencer when this many have
	// gathered or when the oldest has waited this long. Rekor's own
	// defaults are 256 entries and 250 ms.
	//
	// A client that waits for its proof is answered only once a checkpoint
	// covering its entry is published, and Rekor publishes at most once per
	// checkpoint interval and notices a new checkpoint by polling once a
	// second. Under a closed-loop load the clients therefore move in waves:
	// each published checkpoint releases up to all of them at once, and
	// they resubmit together. The best batching puts a whole wave into one
	// batch, so that the next checkpoint covers all of it; a batch cut
	// early by size or age leaves the rest of the wave a full interval
	// behind. So the size bound is set to Rekor's default pushback limit
	// (4,096 outstanding entries), which no wave can exceed, and the age
	// bound to 500 ms, long enough for a wave of 1,000 clients to arrive on
	// a loaded 2-core machine and short of the 1 s interval. Measured at
	// 1,000 clients with a 1 s checkpoint interval over sizes 256 to 4,096
	// and ages 50 ms to 2 s, sizes of at least 2,048 with ages of 250 to
	// 750 ms gave the highest rates (about 500–660 entries/s on that shared
	// machine), ages of 50–100 ms about a third less, and Rekor's defaults
	// about 250–480 entries/s.
	DefaultBatchMaxSize = 4096
	DefaultBatchMaxAge  = 500 * time.Millisecond

	// DefaultServerTimeout bounds one HTTP or gRPC exchange inside Rekor.
	// Rekor's own 20 s is raised so that a slow run on a busy machine is
	// measured as slow rather than turned into errors.
	DefaultServerTimeout = 2 * time.Minute

	// DefaultOrigin names the log in its checkpoints.
	DefaultOrigin = "rekor.memtrail.bench"
)

// Options configure a Rekor server started by [Start]. Zero fields take the
// package defaults.
type Options struct {
	// CheckpointInterval is --checkpoint-interval.
	CheckpointInterval time.Duration
	// BatchMaxSize is --batch-max-size.
	BatchMaxSize uint
	// BatchMaxAge is --batch-max-age.
	BatchMaxAge time.Duration
	// PushbackMaxOutstanding is --pushback-max-outstanding, the number of
	// sequenced but not yet integrated entries past which Rekor answers 503.
	// Zero keeps Rekor's default of 4,096.
	PushbackMaxOutstanding uint
	// Host is the loopback address Rekor's HTTP, gRPC and metrics listeners
	// bind to; free ports are picked on it. Default 127.0.0.1.
	Host string
	// ServerTimeout is --server-timeout.
	ServerTimeout time.Duration
	// Origin is --hostname, the checkpoint origin.
	Origin string
	// LogLevel is --log-level: debug, info, warn or error. Default warn, so
	// the server does not write a log line per request during a benchmark.
	LogLevel string
	// ReadyTimeout bounds the wait for the health check. Default 60 s.
	ReadyTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = DefaultCheckpointInterval
	}
	if o.BatchMaxSize == 0 {
		o.BatchMaxSize = DefaultBatchMaxSize
	}
	if o.BatchMaxAge <= 0 {
		o.BatchMaxAge = DefaultBatchMaxAge
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.ServerTimeout <= 0 {
		o.ServerTimeout = DefaultServerTimeout
	}
	if o.Origin == "" {
		o.Origin = DefaultOrigin
	}
	if o.LogLevel == "" {
		o.LogLevel = "warn"
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 60 * time.Second
	}
	return o
}

// A Server is a running Rekor v2 POSIX server.
type Server struct {
	cmd       *exec.Cmd
	url       string
	args      []string
	logPath   string
	publicKey ed25519.PublicKey
	exited    chan struct{}
	waitErr   error
	stopOnce  sync.Once
	stopErr   error
}

// URL is the server's base URL, e.g. http://127.0.0.1:41234, under which
// the API lives at /api/v2/.
func (s *Server) URL() string { return s.url }

// Args are the command-line arguments the server was started with.
func (s *Server) Args() []string { return append([]string(nil), s.args...) }

// LogPath is the file that holds the server's standard output and error.
func (s *Server) LogPath() string { return s.logPath }

// PublicKey is the Ed25519 key that signs the server's checkpoints.
func (s *Server) PublicKey() ed25519.PublicKey { return s.publicKey }

// Start runs the Rekor server binary bin with its tiles, checkpoint and
// signing key under dataDir, and returns once its health check answers
// SERVING. The key (dataDir/signer.pem, Ed25519 PKCS#8) is generated on
// first use and reused after, so a data directory can be restarted.
//
// The server is started as
//
//	bin serve --hostname=<origin> --storage-dir=<dataDir>/log
//	    --signer-filepath=<dataDir>/signer.pem
//	    --http-address=<host> --http-port=<free> --grpc-address=<host>
//	    --grpc-port=<free> --http-metrics-port=<free>
//	    --checkpoint-interval=1s --batch-max-size=4096 --batch-max-age=500ms
//	    --server-timeout=2m0s --log-level=warn
//
// with the values taken from opts. Stop it with [Server.Stop].
func Start(ctx context.Context, bin, dataDir string, opts Options) (*Server, error) {
	opts = opts.withDefaults()
	if ip := net.ParseIP(opts.Host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("rekorload: start: host %q is not a loopback address", opts.Host)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("rekorload: start: %w", err)
	}
	dataDir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("rekorload: start: %w", err)
	}
	keyPath := filepath.Join(dataDir, "signer.pem")
	pub, err := signingKey(keyPath)
	if err != nil {
		return nil, err
	}
	storage := filepath.Join(dataDir, "log")
	if err := os.MkdirAll(storage, 0o755); err != nil {
		return nil, fmt.Errorf("rekorload: start: %w", err)
	}

	// A picked port can be taken by someone else before Rekor binds it;
	// Rekor then exits at once, and the start is retried on new ports.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		ports, err := freePorts(opts.Host, 3)
		if err != nil {
			return nil, err
		}
		args := []string{
			"serve",
			"--hostname=" + opts.Origin,
			"--storage-dir=" + storage,
			"--signer-filepath=" + keyPath,
			"--http-address=" + opts.Host,
			"--http-port=" + strconv.Itoa(ports[0]),
			"--grpc-address=" + opts.Host,
			"--grpc-port=" + strconv.Itoa(ports[1]),
			"--http-metrics-port=" + strconv.Itoa(ports[2]),
			"--checkpoint-interval=" + opts.CheckpointInterval.String(),
			"--batch-max-size=" + strconv.FormatUint(uint64(opts.BatchMaxSize), 10),
			"--batch-max-age=" + opts.BatchMaxAge.String(),
			"--server-timeout=" + opts.ServerTimeout.String(),
			"--log-level=" + opts.LogLevel,
		}
		if opts.PushbackMaxOutstanding > 0 {
			args = append(args, "--pushback-max-outstanding="+strconv.FormatUint(uint64(opts.PushbackMaxOutstanding), 10))
		}
		s, err := launch(ctx, bin, args, dataDir, opts, ports[0])
		if err == nil {
			s.publicKey = pub
			return s, nil
		}
		lastErr = err
		if ctx.Err() != nil || !errors.Is(err, errExitedEarly) {
			break
		}
	}
	return nil, lastErr
}

var errExitedEarly = errors.New("rekor server exited before it was ready")

func launch(ctx context.Context, bin string, args []string, dataDir string, opts Options, httpPort int) (*Server, error) {
	logPath := filepath.Join(dataDir, "rekor-server.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("rekorload: start: %w", err)
	}
	fmt.Fprintf(logFile, "=== %s %s %v\n", time.Now().UTC().Format(time.RFC3339), bin, args)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dataDir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("rekorload: start %s: %w", bin, err)
	}
	s := &Server{
		cmd:     cmd,
		url:     "http://" + net.JoinHostPort(opts.Host, strconv.Itoa(httpPort)),
		args:    args,
		logPath: logPath,
		exited:  make(chan struct{}),
	}
	go func() {
		s.waitErr = cmd.Wait()
		logFile.Close()
		close(s.exited)
	}()
	if err := s.waitReady(ctx, opts.ReadyTimeout); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// waitReady polls GET /healthz until it reports SERVING.
func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/healthz", nil)
		if err != nil {
			return fmt.Errorf("rekorload: health check: %w", err)
		}
		if resp, err := client.Do(req); err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && bytes.Contains(body, []byte("SERVING")) {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("rekorload: %w (%v); log %s:\n%s", errExitedEarly, s.waitErr, s.logPath, s.logTail())
		case <-ctx.Done():
			return fmt.Errorf("rekorload: waiting for %s/healthz: %w; log %s:\n%s", s.url, ctx.Err(), s.logPath, s.logTail())
		case <-tick.C:
		}
	}
}

func (s *Server) logTail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return err.Error()
	}
	return tail(string(b), 2000)
}

// Stop asks the server to shut down (SIGTERM, which lets Tessera finish its
// queue) and kills it if it has not exited within 45 s. It is safe to call
// more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		select {
		case <-s.exited:
			return
		default:
		}
		if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			s.stopErr = fmt.Errorf("rekorload: stopping server: %w", err)
		}
		select {
		case <-s.exited:
		case <-time.After(45 * time.Second):
			if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
				s.stopErr = fmt.Errorf("rekorload: killing server: %w", err)
			}
			<-s.exited
		}
	})
	return s.stopErr
}

// signingKey loads the Ed25519 checkpoint key at path, creating it first if
// there is none, and returns its public half.
func signingKey(path string) (ed25519.PublicKey, error) {
	if b, err := os.ReadFile(path); err == nil {
		block, _ := pem.Decode(b)
		if block == nil || block.Type != "PRIVATE KEY" {
			return nil, fmt.Errorf("rekorload: %s holds no PKCS#8 private key", path)
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("rekorload: parsing %s: %w", path, err)
		}
		priv, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("rekorload: %s holds a %T, not an Ed25519 key", path, k)
		}
		return priv.Public().(ed25519.PublicKey), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("rekorload: reading signing key: %w", err)
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("rekorload: generating signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("rekorload: encoding signing key: %w", err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, fmt.Errorf("rekorload: writing signing key: %w", err)
	}
	return pub, nil
}

// freePorts returns n distinct ports that were free on host a moment ago.
func freePorts(host string, n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("rekorload: finding a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
