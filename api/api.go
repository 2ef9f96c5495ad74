// Package api is memtrail's HTTP interface: the C2SP tlog-tiles read API
// over the log's tiles, the submission endpoints, lookups and proofs,
// health and metrics. Routes are served by chi; everything else is plain
// net/http so the handler can be driven with httptest.
//
// # Endpoints
//
//	GET  /checkpoint                         tlog-tiles checkpoint (with cosignatures)
//	GET  /tile/<L>/<N>[.p/<W>]               tlog-tiles hash tiles
//	GET  /tile/entries/<N>[.p/<W>]           tlog-tiles entry bundles
//	GET  /v1/log                             origin, verifier key, sizes
//	POST /v1/projections                     a projection record
//	POST /v1/compactions                     {"eccr": …, "manifest": …}
//	POST /v1/tombstones                      a purge tombstone
//	POST /v1/batch                           NDJSON, one submission per line
//	GET  /v1/projections/{id}                index, leaf hash, record, proof
//	GET  /v1/compactions/{id}                lineage state, ECCR, proof
//	GET  /v1/compactions/{id}/sources/{item}/proof
//	GET  /v1/items/{digest}                  compactions including it, tombstone, state
//	GET  /v1/obligations[?limit=N]           open erasure obligations
//	GET  /v1/manifests/{root}                the manifest (immutable)
//	GET  /v1/checkpoints/{size}              a checkpoint the log published
//	GET  /v1/proof/{index}[?size=N]          tlog-proof of an entry
//	GET  /v1/consistency?from=A&to=B         RFC 9162 consistency proof
//	GET  /healthz, /metrics
//
// Submissions answer 201 {"index", "leaf_hash", "kind", "id"}; with
// ?wait=proof the answer comes once a published checkpoint covers the entry
// and adds "checkpoint" and "proof" (tlog-proof text), and
// "proof_without_quorum" when that checkpoint lacks the witness quorum (see
// Accepted). Refusals are JSON (see Refusal). Ids in paths are URL-escaped; each lookup by id also takes
// ?id= instead.
package api

import (
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/memtrail/memtrail/internal/metricshttp"
	mlog "github.com/memtrail/memtrail/log"
	"github.com/memtrail/memtrail/receipts"
)

// Config configures a Server; zero values take the defaults shown.
type Config struct {
	// MaxBatchLines caps the lines of one /v1/batch request (default
	// 100000).
	MaxBatchLines int
	// MaxBatchBytes caps a /v1/batch body (default 64 MiB).
	MaxBatchBytes int64
	// MaxBodyBytes bounds the request body bytes held at once across all
	// requests, beyond the first 64 KiB of each (default 128 MiB): the
	// body caps bound one request, this bounds them all. A large body
	// that would exceed it is refused with 503 and Retry-After.
	MaxBodyBytes int64
	// MaxInFlight bounds the projection records parsed and not yet
	// sequenced, across all requests (default 4096): memory and goroutines
	// stay bounded however many clients send, while Tessera's batches
	// still fill.
	MaxInFlight int
	// WaitTimeout bounds how long ?wait=proof waits for publication
	// (default 60s).
	WaitTimeout time.Duration
	// AnswerTimeout bounds the time from the end of a submission's body to
	// the end of its answer (default WaitTimeout plus one minute). Once the
	// body is read, submission handlers clear their connection's read
	// deadline and set its write deadline from this, so the HTTP server's
	// ReadTimeout and WriteTimeout need only bound the arrival of a request
	// and never cut a ?wait=proof answer short.
	AnswerTimeout time.Duration
	// Logger receives request errors (default slog.Default()).
	Logger *slog.Logger
	// Version is the version memtrail_build_info reports at /metrics
	// (default: the main module's version, or "(devel)").
	Version string
}

// Server serves one log.
type Server struct {
	log      *mlog.Log
	cfg      Config
	logger   *slog.Logger
	inflight chan struct{}
	large    chan struct{} // lanes for parsing large submissions
	cpu      chan struct{} // a lane per core for parsing the others
	// bodyBytes is the body budget in use (see Config.MaxBodyBytes).
	bodyBytes atomic.Int64
	metrics   http.Handler
}

// New returns a Server for l.
func New(l *mlog.Log, cfg Config) *Server {
	if cfg.MaxBatchLines == 0 {
		cfg.MaxBatchLines = 100000
	}
	if cfg.MaxBatchBytes == 0 {
		cfg.MaxBatchBytes = 64 << 20
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 128 << 20
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 4096
	}
	if cfg.WaitTimeout == 0 {
		cfg.WaitTimeout = 60 * time.Second
	}
	if cfg.AnswerTimeout == 0 {
		cfg.AnswerTimeout = cfg.WaitTimeout + time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Server{log: l, cfg: cfg, logger: cfg.Logger, inflight: make(chan struct{}, cfg.MaxInFlight),
		large: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2)), cpu: make(chan struct{}, runtime.GOMAXPROCS(0)),
		metrics: metricshttp.Handler(cfg.Version, l.Metrics)}
}

// Handler returns the HTTP handler of every endpoint.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	// HEAD is answered wherever GET is, without the body.
	r.Use(middleware.GetHead)
	r.NotFound(func(w http.ResponseWriter, req *http.Request) {
		writeJSON(w, http.StatusNotFound, Refusal{Code: codeNotFound, Detail: "no such endpoint: " + req.URL.Path})
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		path := req.URL.Path
		if req.URL.RawPath != "" {
			path = req.URL.RawPath
		}
		var allowed []string
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			if r.Match(chi.NewRouteContext(), m, path) {
				allowed = append(allowed, m)
				if m == http.MethodGet {
					allowed = append(allowed, http.MethodHead)
				}
			}
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeJSON(w, http.StatusMethodNotAllowed, Refusal{Code: codeMethod, Detail: req.Method + " is not allowed on " + req.URL.Path + "; allowed: " + strings.Join(allowed, ", ")})
	})

	r.Get("/checkpoint", s.serveCheckpoint)
	r.Get("/tile/entries/*", s.serveEntries)
	r.Get("/tile/*", s.serveTile)

	r.Get("/v1/log", s.serveLogInfo)
	r.Post("/v1/projections", s.submitHandler("projection"))
	r.Post("/v1/compactions", s.submitHandler("compaction"))
	r.Post("/v1/tombstones", s.submitHandler("tombstone"))
	r.Post("/v1/batch", s.serveBatch)

	r.Get("/v1/projections", s.serveEntry(receipts.KindProjection))
	r.Get("/v1/projections/{id}", s.serveEntry(receipts.KindProjection))
	r.Get("/v1/compactions", s.serveCompaction)
	r.Get("/v1/compactions/{id}", s.serveCompaction)
	r.Get("/v1/compactions/{id}/sources/{item}/proof", s.serveSourceProof)
	r.Get("/v1/tombstones", s.serveEntry(receipts.KindTombstone))
	r.Get("/v1/tombstones/{id}", s.serveEntry(receipts.KindTombstone))
	r.Get("/v1/items/{digest}", s.serveItem)
	r.Get("/v1/obligations", s.serveObligations)
	r.Get("/v1/manifests/{root}", s.serveManifest)
	r.Get("/v1/checkpoints/{size}", s.serveCheckpointAt)
	r.Get("/v1/proof/{index}", s.serveProof)
	r.Get("/v1/consistency", s.serveConsistency)

	r.Get("/healthz", s.serveHealth)
	r.Get("/metrics", s.metrics.ServeHTTP)
	return r
}
