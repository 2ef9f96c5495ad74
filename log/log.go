package log

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memtrail/memtrail/log/store"
	"github.com/memtrail/memtrail/receipts"
	"github.com/transparency-dev/tessera"
	"golang.org/x/mod/sumdb/note"
)

// Config configures a Log. Every field but Storage and SigningKey has a
// default.
type Config struct {
	// Storage is what the log is built from: its Tessera driver, index,
	// manifest store, checkpoint archive, and, where the storage needs
	// them, a lease and a health reading (see package store). The log
	// owns them from Open on: a failed Open, and Close, close the index
	// and release the lease. log/posixstore opens the embedded default, a
	// data directory.
	Storage store.Parts
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
	// (default 65536). The log enforces it in its own sequencer, on any
	// driver: Tessera's own bound, which it also sets, applies only to
	// drivers with a sequencing queue (the POSIX driver integrates in line
	// and ignores it).
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

	lease  store.Lease // nil without one
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// Open opens the log on cfg.Storage, brings the index up to date with the
// log, and starts sequencing.
func Open(ctx context.Context, cfg Config) (*Log, error) {
	opened := false
	parts := cfg.Storage
	defer func() {
		if !opened {
			parts.Close()
		}
	}()
	if parts.Driver == nil || parts.Index == nil || parts.Manifests == nil || parts.Checkpoints == nil {
		return nil, errors.New("log: Config.Storage needs a Driver, an Index, Manifests and Checkpoints")
	}
	if cfg.SigningKey == "" {
		return nil, errors.New("log: Config.SigningKey is required")
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
	l := &Log{cfg: cfg, origin: signer.Name(), vkey: vkey, verifier: verifier, logger: cfg.Logger, Metrics: newMetrics()}
	l.Metrics.witnessing = cfg.Witnesses != nil
	trust := cfg.Trust
	if trust == nil {
		trust = &receipts.Trust{Compactors: receipts.Keyring{}, Issuers: receipts.Keyring{}, Freshness: receipts.DefaultFreshness, Lattice: receipts.DefaultLattice}
	}
	l.trust.Store(trust)
	l.claims.m = make(map[claimKey]*claim)
	l.cpu = make(chan struct{}, runtime.GOMAXPROCS(0))
	l.lineage.init()
	l.index, l.manifests, l.checkpoints, l.lease = parts.Index, parts.Manifests, parts.Checkpoints, parts.Lease

	l.storage = &storageGuard{health: parts.Health, logger: l.logger, metrics: l.Metrics}
	if err := l.storage.probe(ctx, 0); err != nil {
		return nil, fmt.Errorf("log: %w: %w", ErrStorageUnavailable, err)
	}

	// The tree as it stands, read before anything is appended.
	before, err := parts.Driver.Reader(ctx)
	if err != nil {
		return nil, fmt.Errorf("log: couldn't read the log: %w", err)
	}
	if err := checkArchiveBehind(ctx, l.checkpoints, before); err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	published, cpErr := before.ReadCheckpoint(ctx)
	dopts := store.DriverOptions{Logger: l.logger}
	if cfg.Witnesses != nil {
		dopts.HTTPClient = newWitnessClient(cfg.Witnesses, l.Metrics, l.logger)
		dopts.Republish = l.rewitnessAtStart(published, cpErr)
	}

	runCtx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	driver, err := parts.Driver.Open(runCtx, dopts)
	if err != nil {
		cancel()
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
		l.watchLease(runCtx)
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
}

// Close stops accepting entries, waits for outstanding ones to be
// sequenced and indexed, and closes the index.
func (l *Log) Close(ctx context.Context) error {
	var errs []error
	if uerr := l.storage.unavailable(); uerr != nil {
		// Every acknowledged entry is durable, but a checkpoint to cover
		// the last ones may not be publishable (the index may be what
		// failed, not the tiles): wait for one for two checkpoint
		// intervals at most (the next start publishes it otherwise).
		cctx, cancel := context.WithTimeout(ctx, 2*l.cfg.CheckpointInterval)
		err := l.shutdown(cctx)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("closed without publishing a checkpoint of the last entries (they are durable; the next start publishes it): %w", uerr))
		}
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
	if l.lease != nil {
		l.lease.Release()
	}
	return errors.Join(errs...)
}

// Origin returns the log's origin line.
func (l *Log) Origin() string { return l.origin }

// VerifierKey returns the log's signed-note verifier key.
func (l *Log) VerifierKey() string { return l.vkey }

// Verifier returns the verifier of the log's checkpoint signatures.
func (l *Log) Verifier() note.Verifier { return l.verifier }

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
