package log

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memtrail/memtrail/receipts"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/storage/posix"
	"golang.org/x/mod/sumdb/note"
)

// Config configures a Log. Every field but Dir and Signer has a default.
type Config struct {
	// Dir is the data directory. It holds log/ (the tlog-tiles tree,
	// served as is), manifests/ and index.db.
	Dir string
	// SigningKey is the signed-note private key ("PRIVATE+KEY+…") that
	// signs checkpoints; its name is the log's origin.
	SigningKey string
	// Trust says whose receipts are accepted. Replace it with SetTrust.
	// Nil means the empty trust file: nothing is accepted.
	Trust *receipts.Trust

	// BatchMaxSize bounds a sequencing group, and BatchMaxAge is how long
	// Tessera waits after a group arrives before it sequences it (defaults
	// 8192 entries and 5ms). Entries that arrive while a group is being
	// sequenced form the next group, so groups grow with the load.
	BatchMaxSize uint
	BatchMaxAge  time.Duration
	// CheckpointInterval is how often a checkpoint is published (default
	// 1s; at least 100ms).
	CheckpointInterval time.Duration
	// PushbackMaxOutstanding bounds the entries queued for the next
	// sequencing pass; beyond it submissions fail with ErrPushback
	// (default 65536). (Tessera's own pushback bound applies to its
	// queue-based drivers; the POSIX driver integrates in line and ignores
	// it, so the log enforces the bound in its own sequencer.)
	PushbackMaxOutstanding uint

	// Witnesses, when set, must cosign a checkpoint before it is
	// published (see WitnessFailOpen): the published checkpoint, and so
	// every proof and ?wait=proof answer, carries their cosignatures.
	// Build it from a C2SP tlog-policy with tessera.NewWitnessGroupFromPolicy.
	Witnesses *tessera.WitnessGroup
	// WitnessTimeout bounds each attempt to gather the quorum (default
	// 5s). A failed attempt is retried at the next checkpoint interval.
	WitnessTimeout time.Duration
	// WitnessFailOpen publishes a checkpoint even when the witness quorum
	// was not met in time, with whatever cosignatures arrived. Such
	// checkpoints are counted in
	// memtrail_checkpoints_published_without_quorum_total.
	WitnessFailOpen bool

	// Now returns the current time (default time.Now).
	Now func() time.Time
	// Logger receives operational logs (default slog.Default()).
	Logger *slog.Logger

	// Index, Manifests and Checkpoints override the embedded SQLite index
	// (Dir/index.db), file manifest store (Dir/manifests) and file
	// checkpoint archive (Dir/checkpoints).
	Index       Index
	Manifests   ManifestStore
	Checkpoints CheckpointArchive

	// Lock is the data directory's lock, taken by the caller with LockDir
	// (to write into the directory before the log opens). Nil makes Open
	// take it. Either way the log owns it from Open on: a failed Open
	// and Close release it.
	Lock *DirLock
}

// A Log is a running receipt log.
type Log struct {
	cfg       Config
	origin    string
	vkey      string
	verifier  note.Verifier
	appender  *tessera.Appender
	shutdown  func(context.Context) error
	reader    tessera.LogReader
	awaiter   *tessera.PublicationAwaiter
	index     Index
	manifests ManifestStore
	// checkpoints is the archive of published checkpoints.
	checkpoints CheckpointArchive
	trust       atomic.Pointer[receipts.Trust]
	claims      claims
	seq         *sequencer
	cpu         chan struct{} // a slot per core for verification
	seen        *seenFilter   // nil when the index cannot list its ids
	lineage     lineage
	unsettled   unsettled
	// settlePaused stops settling unknown outcomes (tests only).
	settlePaused atomic.Bool
	indexer      *indexer
	proofs       proofCache
	storage      *storageGuard
	Metrics      *Metrics
	logger       *slog.Logger

	cancel context.CancelFunc
	lock   *DirLock
	done   sync.WaitGroup
}

// Subdirectories of the data directory: the tiles, and the embedded
// checkpoint archive.
const (
	tilesDir       = "log"
	checkpointsDir = "checkpoints"
)

// Open opens (or creates) the log in cfg.Dir, brings the index up to date
// with the log, and starts sequencing.
func Open(ctx context.Context, cfg Config) (*Log, error) {
	opened := false
	lock := cfg.Lock
	defer func() {
		if !opened {
			lock.Release()
		}
	}()
	if cfg.Dir == "" || cfg.SigningKey == "" {
		return nil, errors.New("log: Config.Dir and Config.SigningKey are required")
	}
	signer, err := note.NewSigner(cfg.SigningKey)
	if err != nil {
		return nil, fmt.Errorf("log: bad signing key: %w", err)
	}
	vkey, err := VerifierKey(cfg.SigningKey)
	if err != nil {
		return nil, err
	}
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	if cfg.BatchMaxSize == 0 {
		cfg.BatchMaxSize = 8192
	}
	if cfg.BatchMaxAge == 0 {
		cfg.BatchMaxAge = 5 * time.Millisecond
	}
	if cfg.CheckpointInterval == 0 {
		cfg.CheckpointInterval = time.Second
	}
	if cfg.CheckpointInterval < 100*time.Millisecond {
		cfg.CheckpointInterval = 100 * time.Millisecond
	}
	if cfg.PushbackMaxOutstanding == 0 {
		cfg.PushbackMaxOutstanding = 1 << 16
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	// Nothing is written into the directory before its lock is held.
	if lock == nil {
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("log: couldn't create data directory: %w", err)
		}
		if lock, err = lockDir(cfg.Dir); err != nil {
			return nil, fmt.Errorf("log: %w", err)
		}
	} else if !lock.holds(cfg.Dir) {
		return nil, fmt.Errorf("log: Config.Lock is not a held lock of %s", cfg.Dir)
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, tilesDir), 0o755); err != nil {
		return nil, fmt.Errorf("log: couldn't create data directory: %w", err)
	}
	l := &Log{cfg: cfg, origin: signer.Name(), vkey: vkey, verifier: verifier, logger: cfg.Logger, Metrics: newMetrics(), lock: lock}
	l.Metrics.witnessing = cfg.Witnesses != nil
	trust := cfg.Trust
	if trust == nil {
		trust = &receipts.Trust{Compactors: receipts.Keyring{}, Issuers: receipts.Keyring{}, Freshness: receipts.DefaultFreshness, Lattice: receipts.DefaultLattice}
	}
	l.trust.Store(trust)
	l.claims.m = make(map[claimKey]*claim)
	l.cpu = make(chan struct{}, runtime.GOMAXPROCS(0))
	l.lineage.init()

	l.manifests = cfg.Manifests
	if l.manifests == nil {
		ms, err := NewFileManifestStore(filepath.Join(cfg.Dir, "manifests"))
		if err != nil {
			return nil, fmt.Errorf("log: %w", err)
		}
		l.manifests = ms
	}
	l.checkpoints = cfg.Checkpoints
	if l.checkpoints == nil {
		a, err := NewFileCheckpointArchive(filepath.Join(cfg.Dir, checkpointsDir))
		if err != nil {
			return nil, fmt.Errorf("log: %w", err)
		}
		l.checkpoints = a
	}
	// A directory the log cannot write is refused here, with a clear
	// error: Tessera's POSIX driver would panic on its lock file.
	l.storage = &storageGuard{dirs: storageDirs(cfg), logger: l.logger, metrics: l.Metrics}
	if err := l.storage.probe(0); err != nil {
		return nil, fmt.Errorf("log: %w: %w", ErrStorageUnavailable, err)
	}
	l.index = cfg.Index
	if l.index == nil {
		path := filepath.Join(cfg.Dir, "index.db")
		idx, err := OpenSQLiteIndex(path)
		if err != nil {
			return nil, fmt.Errorf("log: %w", err)
		}
		l.index = idx
		if fi, err := os.Stat(path); err == nil {
			l.storage.indexPath, l.storage.indexFile = path, fi
		}
	}

	if n, err := migrateCheckpoints(ctx, l.index, l.checkpoints); err != nil {
		l.index.Close()
		return nil, fmt.Errorf("log: %w", err)
	} else if n > 0 {
		l.logger.Info("moved the checkpoint archive out of the index into its own store", "checkpoints", n, "dir", filepath.Join(cfg.Dir, checkpointsDir))
	}

	if err := checkRightEdge(ctx, filepath.Join(cfg.Dir, tilesDir)); err != nil {
		l.index.Close()
		return nil, fmt.Errorf("log: %w", err)
	}
	if err := checkArchiveBehind(ctx, l.checkpoints, filepath.Join(cfg.Dir, tilesDir)); err != nil {
		l.index.Close()
		return nil, fmt.Errorf("log: %w", err)
	}
	if cfg.Witnesses != nil {
		if err := l.rewitnessAtStart(); err != nil {
			l.index.Close()
			return nil, fmt.Errorf("log: %w", err)
		}
	}

	pcfg := posix.Config{Path: filepath.Join(cfg.Dir, tilesDir)}
	if cfg.Witnesses != nil {
		pcfg.HTTPClient = newWitnessClient(cfg.Witnesses, l.Metrics, l.logger)
	}
	driver, err := posix.New(ctx, pcfg)
	if err != nil {
		l.index.Close()
		return nil, fmt.Errorf("log: couldn't open tile storage: %w", err)
	}
	opts := tessera.NewAppendOptions().
		WithCheckpointSigner(signer).
		WithBatching(cfg.BatchMaxSize, cfg.BatchMaxAge).
		WithCheckpointInterval(cfg.CheckpointInterval).
		WithPushback(cfg.PushbackMaxOutstanding).
		WithCheckpointRepublishInterval(republishInterval(cfg.CheckpointInterval))
	if cfg.Witnesses != nil {
		opts = opts.WithWitnesses(*cfg.Witnesses, &tessera.WitnessOptions{Timeout: cfg.WitnessTimeout, FailOpen: cfg.WitnessFailOpen})
	}
	runCtx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	_, cpErr := os.Stat(filepath.Join(cfg.Dir, tilesDir, layout.CheckpointPath))
	appender, shutdown, reader, err := tessera.NewAppender(runCtx, driver, opts)
	if err != nil && cfg.Witnesses != nil && errors.Is(cpErr, fs.ErrNotExist) {
		// A new log publishes its empty checkpoint while Tessera sets up
		// its storage, and fails without the witness quorum. The storage
		// is set up by then; starting again leaves that checkpoint to the
		// publication loop, which asks the witnesses again every
		// interval: a new log then waits for its witnesses as a restarted
		// one does, instead of not starting.
		l.logger.Warn("the witnesses did not cosign the new log's first checkpoint; nothing is published until they do", "error", shortError(err))
		appender, shutdown, reader, err = tessera.NewAppender(runCtx, driver, opts)
	}
	if err != nil {
		cancel()
		l.index.Close()
		return nil, fmt.Errorf("log: couldn't start appender: %w", err)
	}
	l.appender, l.shutdown, l.reader = appender, shutdown, reader
	l.seq = newSequencer(addFunc(appender), int(cfg.BatchMaxSize), int(cfg.PushbackMaxOutstanding))
	l.awaiter = tessera.NewPublicationAwaiter(runCtx, reader.ReadCheckpoint, min(cfg.CheckpointInterval/4, 250*time.Millisecond))

	// Bring the index up to the integrated size before accepting writes.
	wm, err := l.index.Watermark(ctx)
	if err != nil {
		l.abort()
		return nil, fmt.Errorf("log: %w", err)
	}
	size, err := reader.IntegratedSize(ctx)
	if err != nil {
		l.abort()
		return nil, fmt.Errorf("log: couldn't read tree size: %w", err)
	}
	if wm > size {
		l.logger.Warn("index is ahead of the log; rebuilding it from the log", "watermark", wm, "size", size)
		if err := l.index.Reset(ctx); err != nil {
			l.abort()
			return nil, fmt.Errorf("log: %w", err)
		}
		wm = 0
	}
	if err := l.buildSeen(ctx, size); err != nil {
		l.abort()
		return nil, fmt.Errorf("log: %w", err)
	}
	l.indexer = newIndexer(l, wm)
	l.Metrics.indexed.Store(wm)
	if wm < size {
		l.logger.Info("catching up the index from the log", "from", wm, "to", size)
		start := time.Now()
		if err := l.indexer.catchUp(ctx, size); err != nil {
			l.abort()
			return nil, fmt.Errorf("log: couldn't bring the index up to date: %w", err)
		}
		l.logger.Info("index caught up", "entries", size-wm, "duration", time.Since(start))
	}
	l.done.Add(4)
	go func() {
		defer l.done.Done()
		l.indexer.run(runCtx)
	}()
	go func() {
		defer l.done.Done()
		l.storage.run(runCtx)
	}()
	go func() {
		defer l.done.Done()
		l.watchCheckpointTime(runCtx)
	}()
	go func() {
		defer l.done.Done()
		l.archiveCheckpoints(runCtx)
	}()
	l.Metrics.treeSize.Store(size)
	opened = true
	return l, nil
}

// buildSeen fills the seen filter from the index, if it can list its ids.
func (l *Log) buildSeen(ctx context.Context, size uint64) error {
	lister, ok := l.index.(idHasher)
	if !ok {
		return nil
	}
	f := newSeenFilter(size)
	if _, err := lister.IDHashes(ctx, f.addHash); err != nil {
		return err
	}
	l.seen = f
	return nil
}

func (l *Log) abort() {
	l.cancel()
	l.index.Close()
}

// Close stops accepting entries, waits for outstanding ones to be
// sequenced and indexed, and closes the index.
func (l *Log) Close(ctx context.Context) error {
	var errs []error
	if uerr := l.storage.unavailable(); uerr != nil && !errors.Is(uerr, errIndexGone) {
		// Every acknowledged entry is durable, but no checkpoint can be
		// published to cover the last ones: stop the appender without
		// waiting for one (the next start publishes it).
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		l.shutdown(cctx)
		errs = append(errs, fmt.Errorf("closed without publishing a checkpoint of the last entries (they are durable; the next start publishes it): %w", uerr))
	} else if err := l.shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("couldn't shut down appender: %w", err))
	}
	if err := l.indexer.drain(ctx); err != nil {
		errs = append(errs, err)
	}
	l.cancel()
	l.done.Wait()
	if err := l.index.Close(); err != nil {
		errs = append(errs, err)
	}
	l.lock.Release()
	return errors.Join(errs...)
}

// Origin returns the log's origin line.
func (l *Log) Origin() string { return l.origin }

// VerifierKey returns the log's signed-note verifier key.
func (l *Log) VerifierKey() string { return l.vkey }

// Verifier returns the verifier of the log's checkpoint signatures.
func (l *Log) Verifier() note.Verifier { return l.verifier }

// Dir returns the data directory.
func (l *Log) Dir() string { return l.cfg.Dir }

// TilesDir returns the directory holding the tlog-tiles resources.
func (l *Log) TilesDir() string { return filepath.Join(l.cfg.Dir, tilesDir) }

// Trust returns the trust file in force.
func (l *Log) Trust() *receipts.Trust { return l.trust.Load() }

// SetTrust replaces the trust file. Submissions verified after the call use
// the new one; what was logged before is not re-judged.
func (l *Log) SetTrust(t *receipts.Trust) { l.trust.Store(t) }

// Index returns the log's index, for lookups.
func (l *Log) Index() Index { return l.index }

// Manifests returns the manifest store.
func (l *Log) Manifests() ManifestStore { return l.manifests }

// Reader returns Tessera's reader of the log's resources.
func (l *Log) Reader() tessera.LogReader { return l.reader }

// IntegratedSize returns the number of entries sequenced and integrated
// (which may be ahead of the published checkpoint).
func (l *Log) IntegratedSize(ctx context.Context) (uint64, error) {
	return l.reader.IntegratedSize(ctx)
}

// shortError is err's text cut to 1 KiB: errors from Tessera's witness
// client quote what witnesses answered, which is theirs to choose.
func shortError(err error) string {
	const max = 1 << 10
	if s := err.Error(); len(s) > max {
		return s[:max] + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return err.Error()
}

// PublishedCheckpoint returns the signed checkpoint the log in the data
// directory dir published last, as it is served at /checkpoint (for a log
// that is not open: memtrail serve reads it before it opens the log). It
// returns an error wrapping fs.ErrNotExist when the log has published
// none.
func PublishedCheckpoint(dir string) ([]byte, error) {
	return os.ReadFile(filepath.Join(dir, tilesDir, layout.CheckpointPath))
}
