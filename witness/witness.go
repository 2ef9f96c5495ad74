// Package witness is a transparency log witness: it cosigns the checkpoints
// of known logs, and only checkpoints that are consistent with every
// checkpoint it cosigned before for the same log. Logs collect these
// cosignatures so that their clients can check, offline, that they are
// shown the same history as everyone else. It implements the
// [C2SP tlog-witness] protocol and [C2SP tlog-cosignature] Ed25519
// cosignatures over [C2SP tlog-checkpoint] notes.
//
// # add-checkpoint
//
// A log submits a checkpoint with
//
//	POST /add-checkpoint
//
// whose body is the tree size the log believes the witness holds, the
// consistency proof from that size, an empty line and the signed
// checkpoint. Every line ends in a newline (U+000A):
//
//	old 20852014
//	PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=
//	jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=
//
//	example.com/behind-the-sofa
//	20852163
//	CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=
//
//	— example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=
//
// The parser is strict, so that a request has exactly one reading: sizes
// are decimal with no sign and no leading zeroes, below 2^63; each proof
// line is the padded standard base64 of 32 bytes, in its one canonical
// form; there are at most [MaxProofLines] of them; the body is at most
// [MaxRequestSize] bytes. The checkpoint text is three lines (origin, size,
// root hash, with the same rules) and optional extension lines, which must
// not be empty; extension lines are cosigned as they are, with no statement
// about them.
//
// The witness answers with the first of these that applies, in order:
//
//	413  the body is larger than MaxRequestSize
//	400  the old size line or a proof line is malformed, or there are
//	     more than MaxProofLines, or no checkpoint follows the empty line
//	404  the origin (first line of the checkpoint) is not a known log
//	400  the note is not a well-formed signed note
//	403  no signature verifies against a key of the log; signatures by
//	     other keys are ignored, and a bad signature by a key of the log
//	     is refused
//	400  the checkpoint text is malformed, or old is larger than its size
//	422  the size is 0 and the root hash is not the empty tree's
//	409  old is not the size of the latest checkpoint cosigned for the
//	     origin (0 if none); Content-Type text/x.tlog.size, and the body is
//	     that size in decimal and a newline
//	422  old is 0 and the proof is not empty
//	422  old equals the size, and the proof is not empty or the root hash
//	     differs from the one cosigned
//	422  the RFC 6962 consistency proof from old to the size does not
//	     verify against the two root hashes
//	500  the new state could not be stored; nothing is cosigned
//	200  the checkpoint is stored as the latest for the origin, durably,
//	     and the body is the cosignature line
//
// For two checkpoints of equal size with different roots,
// c2sp.org/tlog-witness asks for 409. We answer 422: the request is not
// stale but contradicts a checkpoint the log signed before, which is
// evidence of a fork, and a 409 with the same size would only make a
// client retry the same request. The witness logs every validly signed
// checkpoint it refuses as inconsistent, with the stored checkpoint, at
// level WARN: the pair is the evidence.
//
// A success body is one note signature line:
//
//	— witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==
//
// # Cosignatures
//
// The signature is a cosignature/v1: base64 of the 4-byte key ID, the
// 8-byte big-endian POSIX timestamp of signing, and the 64-byte Ed25519
// signature of the message
//
//	cosignature/v1
//	time <timestamp, decimal>
//	<the checkpoint text, every line with its newline>
//
// The key ID is SHA-256(<name> || "\n" || 0x04 || public key)[:4], and the
// verifier key (vkey) is <name>+<key ID in hex>+base64(0x04 || public key);
// see [GenerateKey]. A cosignature states that, at that time, this is the
// largest tree of the log the witness has seen and checked consistent.
//
// # Monitoring
//
//	GET /checkpoint/<origin, path-escaped>
//
// returns the latest cosigned checkpoint of a known log: the checkpoint
// text, the signatures of the log's keys that verified, and the witness's
// cosignature (Content-Type text/plain; charset=utf-8), or 404 if the
// origin is unknown or nothing was cosigned yet. The origin is escaped as
// by [net/url.PathEscape], so "example.com/log" is "example.com%2Flog".
//
//	GET /metrics
//
// returns counters and gauges in the Prometheus text format: requests by
// endpoint and status code, an add-checkpoint latency histogram,
// cosignatures issued and the latest cosigned size by origin, inconsistent
// checkpoints refused by origin, store errors, log list reloads.
//
// # Known logs
//
// The logs are identified by origin and trusted by verifier key; see
// [Log], and [ParseLogs] for the file format. [Witness.SetLogs] replaces
// the set atomically: a request sees the old set or the new one. Removing
// a log keeps its state, so adding it back continues from the checkpoint
// cosigned last.
//
// # State
//
// The only state is, for each origin, the latest cosigned checkpoint,
// kept in a [Store]. A request's check against the state and the update of
// the state are one compare-and-swap, made durable before the cosignature
// is sent; requests for one origin are also serialized in memory, while
// different origins proceed in parallel. So a crash at any moment loses at
// most checkpoints that were never acknowledged, and the witness never
// cosigns two inconsistent checkpoints nor a checkpoint smaller than one
// it cosigned.
//
// The store is trusted. Whoever can modify it can roll the witness back or
// erase a log's state, after which the witness would cosign a fork of what
// it cosigned before; they cannot forge cosignatures, which need the
// private key. Protect it like the key.
//
// [C2SP tlog-witness]: https://c2sp.org/tlog-witness
// [C2SP tlog-cosignature]: https://c2sp.org/tlog-cosignature
// [C2SP tlog-checkpoint]: https://c2sp.org/tlog-checkpoint
package witness

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memtrail/memtrail/internal/metricshttp"
	"github.com/memtrail/memtrail/internal/tlogfmt"
	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
)

// Errors returned by [Witness.AddCheckpoint]. Each maps to one HTTP status.
var (
	// ErrTooLarge is a request larger than MaxRequestSize (413).
	ErrTooLarge = errors.New("witness: request too large")
	// ErrMalformed is a request or checkpoint that does not parse (400).
	ErrMalformed = errors.New("witness: malformed request")
	// ErrUnknownLog is a checkpoint whose origin is not a known log (404).
	ErrUnknownLog = errors.New("witness: unknown log")
	// ErrInvalidSignature is a checkpoint that carries no valid signature
	// from the log's keys (403).
	ErrInvalidSignature = errors.New("witness: no valid signature from the log")
	// ErrOldSize is a request whose old size exceeds the checkpoint size (400).
	ErrOldSize = errors.New("witness: old size larger than checkpoint size")
	// ErrInconsistent is a checkpoint that is not proven consistent with the
	// latest cosigned one (422).
	ErrInconsistent = errors.New("witness: checkpoint not consistent with the cosigned state")
)

// ConflictError is returned by [Witness.AddCheckpoint] when the request's
// old size is not the size of the latest cosigned checkpoint (409).
type ConflictError struct {
	// Size is the size of the latest checkpoint cosigned for the origin.
	Size uint64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("witness: old size does not match the cosigned size %d", e.Size)
}

// statusCode maps the errors of AddCheckpoint to HTTP status codes.
func statusCode(err error) int {
	var conflict *ConflictError
	switch {
	case err == nil:
		return http.StatusOK
	case errors.As(err, &conflict):
		return http.StatusConflict
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrMalformed), errors.Is(err, ErrOldSize):
		return http.StatusBadRequest
	case errors.Is(err, ErrUnknownLog):
		return http.StatusNotFound
	case errors.Is(err, ErrInvalidSignature):
		return http.StatusForbidden
	case errors.Is(err, ErrInconsistent):
		return http.StatusUnprocessableEntity
	default:
		return http.StatusInternalServerError
	}
}

// Config configures a [Witness].
type Config struct {
	// Key is the witness private key, as made by GenerateKey. A plain
	// Ed25519 signed-note key (type 0x01) is also accepted; either way the
	// witness makes only cosignature/v1 signatures with it. Required.
	Key string

	// Store keeps the latest cosigned checkpoint of each log. Required. The
	// witness does not close it.
	Store Store

	// Logs are the logs accepted from the start; see SetLogs. Empty means
	// none: every add-checkpoint is answered 404 until SetLogs.
	Logs []Log

	// Logger receives structured logs. nil means slog.Default().
	Logger *slog.Logger

	// Version is the version memtrail_build_info reports at /metrics. Empty
	// means the main module's version, or "(devel)".
	Version string
}

// A Witness verifies and cosigns checkpoints. Its methods are safe for
// concurrent use.
type Witness struct {
	name    string
	keyID   uint32
	signer  note.Signer
	vkey    string
	store   Store
	log     *slog.Logger
	logs    atomic.Pointer[logSet]
	m       metrics
	handler http.Handler

	statesMu sync.Mutex
	states   map[string]*logState

	// testingOnlyBeforeStore, if set, runs after a checkpoint was checked
	// and cosigned and before the new state is stored, with the origin's
	// lock held.
	testingOnlyBeforeStore func(origin string)
}

// logState is the in-memory view of one origin's stored state. mu
// serializes add-checkpoint requests for the origin; the fields below it
// may only be read or written with mu held, except the atomics, which
// /metrics reads without it.
type logState struct {
	mu     sync.Mutex
	loaded bool   // stored, size and hash reflect the store
	stored []byte // value in the store, nil if none
	hash   [hashSize]byte

	size         atomic.Uint64
	sizeKnown    atomic.Bool
	cosignatures atomic.Uint64
	inconsistent atomic.Uint64
}

// emptyRoot is the root hash of the empty tree.
var emptyRoot = [hashSize]byte(rfc6962.DefaultHasher.EmptyRoot())

// New returns a Witness. It loads the stored state of every log in
// c.Logs, failing if the store can't be read.
func New(ctx context.Context, c Config) (*Witness, error) {
	if c.Store == nil {
		return nil, errors.New("witness: no store")
	}
	name, priv, err := parseKey(c.Key)
	if err != nil {
		return nil, err
	}
	signer, err := fnote.NewSignerForCosignatureV1(c.Key)
	if err != nil {
		return nil, fmt.Errorf("witness: couldn't load key: %w", err)
	}
	pub := priv.Public().(ed25519.PublicKey)
	if signer.Name() != name || signer.KeyHash() != keyID(name, algCosignature, pub) {
		return nil, errors.New("witness: cosigner key ID mismatch")
	}
	logger := c.Logger
	if logger == nil {
		logger = slog.Default()
	}
	w := &Witness{
		name:   name,
		keyID:  signer.KeyHash(),
		signer: signer,
		vkey:   formatVerifierKey(name, pub),
		store:  c.Store,
		log:    logger,
		states: make(map[string]*logState),
	}
	if err := w.setLogs(c.Logs); err != nil {
		return nil, err
	}
	for origin := range w.logs.Load().verifiers {
		st := w.state(origin)
		st.mu.Lock()
		err := w.loadLocked(ctx, origin, st)
		st.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /add-checkpoint", w.serveAddCheckpoint)
	mux.HandleFunc("GET /checkpoint/{origin...}", w.serveCheckpoint)
	mux.Handle("GET /metrics", metricshttp.Handler(c.Version, collector{w}))
	w.handler = mux
	return w, nil
}

// Name returns the witness name, the name of its key.
func (w *Witness) Name() string { return w.name }

// VerifierKey returns the cosignature/v1 verifier key of the witness, to
// configure in the witness policies of logs and clients.
func (w *Witness) VerifierKey() string { return w.vkey }

// Handler returns the HTTP handler of the witness, serving the endpoints
// described in the package documentation.
func (w *Witness) Handler() http.Handler { return w.handler }

// SetLogs replaces the set of known logs. It refuses, leaving the current
// set in place, a set with an invalid key or origin. Requests in progress
// finish with the set they started with.
func (w *Witness) SetLogs(logs []Log) error {
	if err := w.setLogs(logs); err != nil {
		return err
	}
	w.m.reloads.Add(1)
	return nil
}

func (w *Witness) setLogs(logs []Log) error {
	s, err := newLogSet(logs)
	if err != nil {
		return err
	}
	w.logs.Store(s)
	return nil
}

// Logs returns the current set of known logs.
func (w *Witness) Logs() []Log {
	return append([]Log(nil), w.logs.Load().logs...)
}

// state returns the state of a known origin, creating it if needed. Only
// known origins get a state, so requests can't grow the map at will.
func (w *Witness) state(origin string) *logState {
	w.statesMu.Lock()
	defer w.statesMu.Unlock()
	st, ok := w.states[origin]
	if !ok {
		st = &logState{}
		w.states[origin] = st
	}
	return st
}

func (w *Witness) stateIfExists(origin string) *logState {
	w.statesMu.Lock()
	defer w.statesMu.Unlock()
	return w.states[origin]
}

// loadLocked reads the stored state of origin into st, if it isn't
// loaded. st.mu must be held.
func (w *Witness) loadLocked(ctx context.Context, origin string, st *logState) error {
	if st.loaded {
		return nil
	}
	stored, err := w.store.Load(ctx, origin)
	if errors.Is(err, ErrNotFound) {
		st.stored, st.hash, st.loaded = nil, emptyRoot, true
		st.size.Store(0)
		st.sizeKnown.Store(true)
		return nil
	}
	if err != nil {
		w.m.storeErrors.Add(1)
		return fmt.Errorf("witness: couldn't load state of %q: %w", origin, err)
	}
	c, err := parseStored(stored)
	if err != nil || c.Origin != origin {
		w.m.storeErrors.Add(1)
		return fmt.Errorf("witness: stored checkpoint of %q is corrupt", origin)
	}
	st.stored, st.hash, st.loaded = stored, c.Hash, true
	st.size.Store(c.Size)
	st.sizeKnown.Store(true)
	return nil
}

// parseStored parses the checkpoint text of a stored note. The store is
// trusted, so the signatures are not verified again.
func parseStored(stored []byte) (*tlogfmt.Checkpoint, error) {
	i := bytes.LastIndex(stored, []byte("\n\n"))
	if i < 0 {
		return nil, ErrMalformed
	}
	c, ok := parseCheckpoint(string(stored[:i+1]))
	if !ok {
		return nil, ErrMalformed
	}
	return c, nil
}

// AddCheckpoint processes the body of an add-checkpoint request, as
// described in the package documentation, and returns the cosignature
// line. Its errors are ErrTooLarge, ErrMalformed, ErrUnknownLog,
// ErrInvalidSignature, ErrOldSize, *ConflictError and ErrInconsistent,
// possibly wrapped; any other error is internal, and no cosignature was
// issued.
func (w *Witness) AddCheckpoint(ctx context.Context, body []byte) ([]byte, error) {
	req, err := parseAddCheckpoint(body)
	if err != nil {
		return nil, err
	}
	origin, _, _ := bytes.Cut(req.note, []byte("\n"))
	known := w.logs.Load()
	verifiers, ok := known.verifiers[string(origin)]
	if !ok {
		return nil, ErrUnknownLog
	}
	n, err := note.Open(req.note, verifiers)
	if err != nil {
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		switch {
		case errors.As(err, &unverified):
			return nil, fmt.Errorf("%w: the witness knows this origin by the key %s; the checkpoint is signed by %s",
				ErrInvalidSignature, strings.Join(known.keys[string(origin)], " or "), tlogfmt.SignatureNames(unverified.Note.UnverifiedSigs))
		case errors.As(err, &invalid):
			return nil, fmt.Errorf("%w: the signature by %s+%08x does not verify", ErrInvalidSignature, tlogfmt.PrintableName(invalid.Name), invalid.Hash)
		}
		return nil, ErrMalformed
	}
	c, ok := parseCheckpoint(n.Text)
	if !ok || c.String() != n.Text {
		return nil, ErrMalformed
	}
	if req.oldSize > c.Size {
		return nil, ErrOldSize
	}
	if c.Size == 0 && c.Hash != emptyRoot {
		return nil, fmt.Errorf("%w: size 0 with a root that is not the empty tree's", ErrInconsistent)
	}

	st := w.state(c.Origin)
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := w.loadLocked(ctx, c.Origin, st); err != nil {
		return nil, err
	}
	size := st.size.Load()
	if req.oldSize != size {
		return nil, &ConflictError{Size: size}
	}
	if err := checkConsistency(req, size, st.hash, c); err != nil {
		st.inconsistent.Add(1)
		w.log.WarnContext(ctx, "refused a validly signed checkpoint inconsistent with the cosigned one",
			"origin", c.Origin, "reason", err, "cosigned", string(st.stored), "request", string(body))
		return nil, err
	}

	line, signed, err := w.cosign(n)
	if err != nil {
		return nil, err
	}
	if w.testingOnlyBeforeStore != nil {
		w.testingOnlyBeforeStore(c.Origin)
	}
	if err := w.store.CompareAndSwap(ctx, c.Origin, st.stored, signed); err != nil {
		// Whatever happened, the cached state can't be trusted any more: the
		// write may have landed, or the store may have changed under us.
		st.loaded = false
		st.sizeKnown.Store(false)
		w.m.storeErrors.Add(1)
		w.log.ErrorContext(ctx, "couldn't store the new checkpoint; no cosignature issued",
			"origin", c.Origin, "size", c.Size, "error", err)
		return nil, fmt.Errorf("witness: couldn't store checkpoint: %w", err)
	}
	if size == 0 && st.stored == nil {
		w.log.InfoContext(ctx, "cosigned the first checkpoint of a log", "origin", c.Origin, "size", c.Size)
	}
	st.stored, st.hash = signed, c.Hash
	st.size.Store(c.Size)
	st.cosignatures.Add(1)
	return line, nil
}

// checkConsistency checks that the checkpoint c, submitted with req, is
// consistent with the cosigned state of size and root hash.
func checkConsistency(req *addCheckpointRequest, size uint64, hash [hashSize]byte, c *tlogfmt.Checkpoint) error {
	switch {
	case req.oldSize == 0:
		// Nothing was cosigned yet, or only the empty tree, which every tree
		// extends.
		if len(req.proof) != 0 {
			return fmt.Errorf("%w: non-empty proof from size 0", ErrInconsistent)
		}
	case req.oldSize == c.Size:
		if len(req.proof) != 0 {
			return fmt.Errorf("%w: non-empty proof between equal sizes", ErrInconsistent)
		}
		if c.Hash != hash {
			return fmt.Errorf("%w: root hash differs from the cosigned one at size %d", ErrInconsistent, size)
		}
	default:
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, size, c.Size, req.proof, hash[:], c.Hash[:]); err != nil {
			return fmt.Errorf("%w: %w", ErrInconsistent, err)
		}
	}
	return nil
}

// cosign returns the cosignature line for the verified note n, and the note
// to store: the checkpoint text, the log's verified signatures and the
// cosignature. Unverified signatures are dropped, so that nothing an
// attacker added to the request is stored or served.
func (w *Witness) cosign(n *note.Note) (line, signed []byte, err error) {
	sig, err := w.signer.Sign([]byte(n.Text))
	if err != nil {
		return nil, nil, fmt.Errorf("witness: couldn't cosign: %w", err)
	}
	raw := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(sig)), w.keyID)
	raw = append(raw, sig...)
	line = []byte("— " + w.name + " " + base64.StdEncoding.EncodeToString(raw) + "\n")

	var b bytes.Buffer
	b.WriteString(n.Text)
	b.WriteByte('\n')
	for _, s := range n.Sigs {
		b.WriteString("— " + s.Name + " " + s.Base64 + "\n")
	}
	b.Write(line)
	return line, b.Bytes(), nil
}

// Checkpoint returns the latest cosigned checkpoint of a known log, as
// served by GET /checkpoint/, or ErrUnknownLog, or ErrNotFound if nothing
// was cosigned for it yet.
func (w *Witness) Checkpoint(ctx context.Context, origin string) ([]byte, error) {
	if _, ok := w.logs.Load().verifiers[origin]; !ok {
		return nil, ErrUnknownLog
	}
	st := w.state(origin)
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := w.loadLocked(ctx, origin, st); err != nil {
		return nil, err
	}
	if st.stored == nil {
		return nil, ErrNotFound
	}
	return bytes.Clone(st.stored), nil
}

func (w *Witness) serveAddCheckpoint(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, MaxRequestSize))
	start := time.Now()
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			err = ErrTooLarge
		} else {
			// The client went away or is broken; there is nobody to answer.
			err = fmt.Errorf("%w: couldn't read body: %w", ErrMalformed, err)
		}
	} else {
		var line []byte
		line, err = w.AddCheckpoint(r.Context(), body)
		if err == nil {
			rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
			rw.Write(line)
		}
	}
	code := statusCode(err)
	w.m.countRequest(endpointAddCheckpoint, code)
	w.m.observeDuration(time.Since(start))
	if err == nil {
		return
	}
	w.log.DebugContext(r.Context(), "refused add-checkpoint", "status", code, "error", err)
	var conflict *ConflictError
	if errors.As(err, &conflict) {
		rw.Header().Set("Content-Type", "text/x.tlog.size")
		rw.WriteHeader(http.StatusConflict)
		fmt.Fprintf(rw, "%d\n", conflict.Size)
		return
	}
	msg := err.Error()
	if code == http.StatusInternalServerError {
		msg = "witness: internal error"
	}
	http.Error(rw, msg, code)
}

func (w *Witness) serveCheckpoint(rw http.ResponseWriter, r *http.Request) {
	origin := r.PathValue("origin")
	cp, err := w.Checkpoint(r.Context(), origin)
	code := http.StatusOK
	switch {
	case err == nil:
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		rw.Header().Set("Cache-Control", "no-store")
		rw.Write(cp)
	case errors.Is(err, ErrUnknownLog):
		code = http.StatusNotFound
		http.Error(rw, "witness: unknown log", code)
	case errors.Is(err, ErrNotFound):
		code = http.StatusNotFound
		http.Error(rw, "witness: no checkpoint cosigned yet for this log", code)
	default:
		code = http.StatusInternalServerError
		w.log.ErrorContext(r.Context(), "couldn't serve checkpoint", "origin", origin, "error", err)
		http.Error(rw, "witness: internal error", code)
	}
	w.m.countRequest(endpointCheckpoint, code)
}
