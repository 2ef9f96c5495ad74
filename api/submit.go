package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	mlog "github.com/memtrail/memtrail/log"
	"github.com/memtrail/memtrail/receipts"
)

// Accepted is the body of a 201 answer.
type Accepted struct {
	Index    uint64 `json:"index"`
	LeafHash string `json:"leaf_hash"` // standard base64, as in checkpoints and proofs
	Kind     string `json:"kind"`
	ID       string `json:"id"`
	// With ?wait=proof: the checkpoint that first covered the entry and
	// the entry's tlog-proof against it.
	Checkpoint string `json:"checkpoint,omitempty"`
	Proof      string `json:"proof,omitempty"`
	// ProofPending says why a ?wait=proof answer has no proof: the entry
	// is logged, but no checkpoint covered it in time. Fetch the proof
	// later from GET /v1/proof/{index}.
	ProofPending string `json:"proof_pending,omitempty"`
	// ProofWithoutQuorum says, when the answer has a proof, that its
	// checkpoint lacks the witness quorum of the log's policy (the log
	// published it with --witness-fail-open): clients that require the
	// policy refuse the proof. A proof against a later, witnessed
	// checkpoint is at GET /v1/proof/{index}.
	ProofWithoutQuorum string `json:"proof_without_quorum,omitempty"`
}

// maxBody is the body cap of each single-submission endpoint.
func maxBody(kind receipts.Kind) int64 {
	switch kind {
	case receipts.KindCompaction:
		return receipts.MaxSubmissionSize
	case receipts.KindTombstone:
		return receipts.MaxTombstoneSize
	}
	return receipts.MaxProjectionRecordSize
}

// readBody reads at most limit bytes of the body, refusing more with
// CodeTooLarge without reading the rest. A body that does not arrive
// within the server's ReadTimeout is refused with 408. Beyond its first
// largeBody bytes, a body takes its size from the budget shared by all
// requests (Config.MaxBodyBytes), as it arrives; when the budget is spent
// it is refused with 503 and Retry-After. The caller must call release
// once it no longer needs the body (release is never nil).
//
// Once the body is read, the connection's deadlines are set for the
// answer (see Config.AnswerTimeout).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, limit int64) (body []byte, release func(), err error) {
	var reserved int64
	release = func() { s.bodyBytes.Add(-reserved) }
	defer func() {
		if err != nil {
			release()
			body, release = nil, func() {}
		}
	}()
	// grow makes room for a body of n bytes, taking what it needs from the
	// budget.
	grow := func(n int64) error {
		if more := max(0, n-largeBody) - reserved; more > 0 {
			if s.bodyBytes.Add(more) > s.cfg.MaxBodyBytes {
				s.bodyBytes.Add(-more)
				return &httpError{status: http.StatusServiceUnavailable, code: codePushback, detail: "the server holds too many large request bodies; retry after the time in Retry-After"}
			}
			reserved += more
		}
		return nil
	}
	if r.ContentLength > limit {
		return nil, release, &receipts.Error{Code: receipts.CodeTooLarge, Reason: "body is " + strconv.FormatInt(r.ContentLength, 10) + " bytes; at most " + strconv.FormatInt(limit, 10) + " are accepted here"}
	}
	var b []byte
	if r.ContentLength > 0 {
		// The size is known: one exact allocation, not a growing buffer.
		if err := grow(r.ContentLength); err != nil {
			return nil, release, err
		}
		b = make([]byte, r.ContentLength)
		_, err = io.ReadFull(r.Body, b)
	} else {
		b = make([]byte, 0, 4096)
		for {
			if len(b) == cap(b) {
				if int64(len(b)) > limit {
					break
				}
				n := min(2*int64(cap(b)), limit+1)
				if err := grow(n); err != nil {
					return nil, release, err
				}
				b = append(make([]byte, 0, n), b...)
			}
			var n int
			n, err = r.Body.Read(b[len(b):cap(b)])
			b = b[:len(b)+n]
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				break
			}
		}
	}
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, release, &httpError{status: http.StatusRequestTimeout, code: codeRequestTimeout, detail: "the request body did not arrive in time"}
		}
		return nil, release, badRequest("couldn't read the request body: " + err.Error())
	}
	if int64(len(b)) > limit {
		return nil, release, &receipts.Error{Code: receipts.CodeTooLarge, Reason: "body is more than " + strconv.FormatInt(limit, 10) + " bytes"}
	}
	// The request has arrived: from here the answer's own bound applies.
	// Without this, the server's ReadTimeout would cancel a ?wait=proof
	// answer still waiting for its checkpoint. (A ResponseWriter that
	// cannot set deadlines, as in httptest, keeps the server's.)
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	rc.SetWriteDeadline(time.Now().Add(s.cfg.AnswerTimeout))
	return b, release, nil
}

// checkContentType accepts the given media types, with charset utf-8 or
// none. A body without a Content-Type is refused like one of another type:
// what is not declared JSON is not read as JSON.
func checkContentType(r *http.Request, want ...string) error {
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if err == nil {
		for _, w := range want {
			if mt == w && (params["charset"] == "" || params["charset"] == "utf-8" || params["charset"] == "UTF-8") {
				return nil
			}
		}
	}
	detail := "Content-Type must be " + want[0]
	if len(want) > 1 {
		detail = "Content-Type must be one of " + strings.Join(want, ", ")
	}
	got := "not " + ct
	if ct == "" {
		got = "and the request has none"
	}
	return &httpError{status: http.StatusUnsupportedMediaType, code: codeUnsupportedMedia, detail: detail + " (charset utf-8 or none), " + got}
}

func waitProof(r *http.Request) (bool, error) {
	switch v := r.URL.Query().Get("wait"); v {
	case "":
		return false, nil
	case "proof":
		return true, nil
	default:
		return false, badRequest("wait must be \"proof\", not " + strconv.Quote(v))
	}
}

func (s *Server) submitHandler(kind receipts.Kind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		who := submitted{kind: kind}
		refuse := func(err error) {
			s.logRefusal(r, who, 0, err)
			s.writeError(w, r, err)
		}
		if err := checkContentType(r, "application/json"); err != nil {
			refuse(err)
			return
		}
		wait, err := waitProof(r)
		if err != nil {
			refuse(err)
			return
		}
		body, release, err := s.readBody(w, r, maxBody(kind))
		defer release()
		if err != nil {
			s.log.Metrics.Refused(kind, receipts.ErrorCode(err))
			refuse(err)
			return
		}
		if err := s.acquire(r.Context()); err != nil {
			refuse(err)
			return
		}
		acc, err := s.submitOrdered(r.Context(), body, kind, wait, nil, nil, sync.OnceFunc(s.release), &who)
		if err != nil {
			refuse(err)
			return
		}
		writeJSON(w, http.StatusCreated, acc)
	}
}

// submitted is what a refusal line says of the submission refused: its
// kind and id, once they are known.
type submitted struct {
	kind receipts.Kind
	id   string
}

// logRefusal logs one line for a refused submission (line > 0: of a
// batch): its status, code, kind and id when known, and the client's
// address. A 503 (overload, storage that cannot be written, an unknown
// outcome) is logged at debug level: the log says once, at the change,
// why it answers so, and an overloaded log must not also flood its log.
func (s *Server) logRefusal(r *http.Request, who submitted, line int, err error) {
	st, ref := status(err)
	level := slog.LevelInfo
	if st == http.StatusServiceUnavailable {
		level = slog.LevelDebug
	}
	ctx := r.Context()
	if !s.logger.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.Int("status", st), slog.String("code", ref.Code))
	if who.kind != "" {
		attrs = append(attrs, slog.String("kind", string(who.kind)))
	}
	if who.id != "" {
		attrs = append(attrs, slog.String("id", who.id))
	}
	if line > 0 {
		attrs = append(attrs, slog.Int("line", line))
	}
	attrs = append(attrs, slog.String("remote", r.RemoteAddr))
	if ref.Member != "" {
		attrs = append(attrs, slog.String("member", ref.Member))
	}
	detail := ref.Detail
	if len(detail) > 300 {
		detail = detail[:300] + "…"
	}
	attrs = append(attrs, slog.String("detail", detail))
	s.logger.LogAttrs(ctx, level, "refused", attrs...)
}

// submitOrdered parses, verifies and logs one submission, with the
// lineage ordering of log.SubmitOrdered; decided is closed on every path.
// kind, if not empty, is the kind the endpoint accepts. release gives back
// the in-flight slot: it is called once the log has answered, before any
// wait for a checkpoint, which holds no parsed receipt.
// who is filled in with the submission's kind and id once it is parsed.
func (s *Server) submitOrdered(ctx context.Context, body []byte, kind receipts.Kind, wait bool, after <-chan struct{}, decided chan struct{}, release func(), who *submitted) (*Accepted, error) {
	defer release()
	sub, err := s.parse(ctx, body)
	if err != nil {
		mlog.PassOrder(after, decided)
		s.log.Metrics.Refused(kind, receipts.ErrorCode(err))
		return nil, err
	}
	who.kind, who.id = sub.Receipt.Kind(), sub.Receipt.ID()
	if kind != "" && sub.Receipt.Kind() != kind {
		mlog.PassOrder(after, decided)
		err := &receipts.Error{Code: receipts.CodeRecordInvalid, Reason: "this endpoint takes a " + string(kind) + ", not a " + string(sub.Receipt.Kind())}
		s.log.Metrics.Refused(kind, err.Code)
		return nil, err
	}
	a, err := s.log.SubmitOrdered(ctx, sub, after, decided)
	release()
	if err != nil {
		return nil, err
	}
	acc := &Accepted{Index: a.Index, LeafHash: base64.StdEncoding.EncodeToString(a.LeafHash[:]), Kind: string(a.Kind), ID: a.ID}
	if wait {
		wctx, cancel := context.WithTimeout(ctx, s.cfg.WaitTimeout)
		defer cancel()
		cp, err := s.log.WaitPublished(wctx, a.Index)
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			// Logged all the same: say so, with where the proof will be.
			acc.ProofPending = fmt.Sprintf("no published checkpoint covered index %d within %s (the witnesses may be slow); the entry is logged, fetch its proof from /v1/proof/%d", a.Index, s.cfg.WaitTimeout, a.Index)
			return acc, nil
		}
		if err != nil {
			return nil, err
		}
		proof, err := s.log.InclusionProof(ctx, a.Index, cp)
		if err != nil {
			return nil, err
		}
		acc.Checkpoint, acc.Proof = string(cp), string(proof)
		if !s.log.MeetsQuorum(cp) {
			acc.ProofWithoutQuorum = fmt.Sprintf("the checkpoint that covered index %d lacks the witness quorum of the log's policy (it was published without it, fail-open): clients requiring the policy refuse this proof; fetch a witnessed one later from /v1/proof/%d", a.Index, a.Index)
		}
	}
	return acc, nil
}

// largeBody is the size beyond which a submission is parsed in the large
// lane. A logged receipt is at most 65,535 bytes, so only compactions with
// large manifests, and abusive bodies, are larger.
const largeBody = 64 << 10

// parse parses a submission. Large ones are parsed one lane at a time
// (half the cores): a client sending megabytes of hostile JSON then takes
// at most that share of the CPU, and the submissions of everyone else keep
// their rate.
func (s *Server) parse(ctx context.Context, body []byte) (*receipts.Submission, error) {
	if len(body) <= largeBody {
		// Parsing is CPU-bound: one per core at a time keeps the runnable
		// goroutines few, whatever the number of requests.
		select {
		case s.cpu <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		defer func() { <-s.cpu }()
		return receipts.ParseSubmission(body)
	}
	select {
	case s.large <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.large }()
	return receipts.ParseSubmission(body)
}

// acquire takes an in-flight slot: parsed receipts waiting for sequencing
// are bounded across all requests.
func (s *Server) acquire(ctx context.Context) error {
	select {
	case s.inflight <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Server) release() { <-s.inflight }

// mayBeLineage reports whether a batch line may be a compaction or a
// tombstone, whose lineage decisions follow line order: whether it holds
// one of the member names that make one, or a \u escape, the only way
// JSON could spell those names otherwise.
func mayBeLineage(line []byte) bool {
	return bytes.Contains(line, []byte(`"eccr"`)) || bytes.Contains(line, []byte(`"tombstone_version"`)) ||
		bytes.Contains(line, []byte(`\u`))
}

// appendAccepted writes the JSON line of an accepted batch line, as
// encoding/json would write it.
func appendAccepted(b []byte, r *BatchResult) []byte {
	a := r.Accepted
	b = append(b, `{"line":`...)
	b = strconv.AppendInt(b, int64(r.Line), 10)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, `,"index":`...)
	b = strconv.AppendUint(b, a.Index, 10)
	b = append(b, `,"leaf_hash":`...)
	b = appendJSONString(b, a.LeafHash)
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, a.Kind)
	b = append(b, `,"id":`...)
	b = appendJSONString(b, a.ID)
	return append(b, "}\n"...)
}

// appendJSONString writes s as a JSON string with encoding/json's escaping
// (HTML characters and U+2028/U+2029 included), so both encoders agree.
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// BatchResult is one line of a /v1/batch answer: the line number (from 1)
// and either the accepted entry or the refusal.
type BatchResult struct {
	Line   int `json:"line"`
	Status int `json:"status"`
	*Accepted
	*Refusal
}

// serveBatch logs NDJSON submissions, one per line, and answers NDJSON
// results in the same order, streaming them as they complete in order.
// Empty lines are skipped (and numbered). The answer is 200 once the body
// is read; each line carries its own status.
func (s *Server) serveBatch(w http.ResponseWriter, r *http.Request) {
	if err := checkContentType(r, "application/x-ndjson", "application/jsonl", "application/json"); err != nil {
		s.logRefusal(r, submitted{}, 0, err)
		s.writeError(w, r, err)
		return
	}
	wait, err := waitProof(r)
	if err != nil {
		s.logRefusal(r, submitted{}, 0, err)
		s.writeError(w, r, err)
		return
	}
	body, release, err := s.readBody(w, r, s.cfg.MaxBatchBytes)
	defer release()
	if err != nil {
		s.logRefusal(r, submitted{}, 0, err)
		s.writeError(w, r, err)
		return
	}
	// Lines are counted before they are split: a body of newlines must
	// not cost a slice header per line before it is refused.
	n := bytes.Count(body, []byte("\n")) + 1
	if last := bytes.LastIndexByte(body, '\n'); len(bytes.TrimSpace(body[last+1:])) == 0 {
		n-- // nothing after the last newline
	}
	if n > s.cfg.MaxBatchLines {
		err := &receipts.Error{Code: receipts.CodeTooLarge, Reason: "batch has " + strconv.Itoa(n) + " lines; at most " + strconv.Itoa(s.cfg.MaxBatchLines) + " are accepted"}
		s.logRefusal(r, submitted{}, 0, err)
		s.writeError(w, r, err)
		return
	}
	lines := bytes.Split(body, []byte("\n"))
	if k := len(lines); k > 0 && len(bytes.TrimSpace(lines[k-1])) == 0 {
		lines = lines[:k-1]
	}
	results := make([]chan BatchResult, len(lines))
	for i := range results {
		results[i] = make(chan BatchResult, 1)
	}
	// Lines are dispatched in order, each once it has an in-flight slot:
	// a line's predecessors always hold theirs, so the lineage chain never
	// waits on a line without one.
	ctx := r.Context()
	var wg sync.WaitGroup
	// Lineage decisions (compactions and tombstones) are taken in line
	// order: each line is handed the previous line's "decided" signal.
	go func() {
		var prev chan struct{}
		for i, line := range lines {
			if s.acquire(ctx) != nil {
				// The client went away: answer the rest as cancelled.
				for j := i; j < len(lines); j++ {
					st, ref := status(ctx.Err())
					results[j] <- BatchResult{Line: j + 1, Status: st, Refusal: &ref}
				}
				return
			}
			wg.Add(1)
			// Only lines that may be compactions or tombstones join the
			// chain (mayBeLineage); projection records, the bulk, need no
			// order.
			var after <-chan struct{}
			var decided chan struct{}
			if mayBeLineage(line) {
				after, decided = prev, make(chan struct{})
				prev = decided
			}
			go func(i int, line []byte) {
				release := sync.OnceFunc(s.release)
				defer func() { release(); wg.Done() }()
				res := BatchResult{Line: i + 1}
				line = bytes.TrimSpace(line)
				if len(line) == 0 {
					mlog.PassOrder(after, decided)
					res.Status = http.StatusNoContent
					results[i] <- res
					return
				}
				var who submitted
				acc, err := s.submitOrdered(ctx, line, "", wait, after, decided, release, &who)
				if err != nil {
					st, ref := status(err)
					if st == http.StatusInternalServerError {
						s.logger.Error("batch line failed", "line", i+1, "error", err)
					}
					s.logRefusal(r, who, i+1, err)
					res.Status, res.Refusal = st, &ref
				} else {
					res.Status, res.Accepted = http.StatusCreated, acc
				}
				results[i] <- res
			}(i, line)
		}
	}()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	flusher, _ := w.(http.Flusher)
	var buf []byte
	for i := range results {
		var res BatchResult
		select {
		case res = <-results[i]:
		case <-ctx.Done():
			return
		}
		if res.Accepted != nil && res.Accepted.Proof == "" {
			// The common answer, written without reflection.
			buf = appendAccepted(buf[:0], &res)
			if _, err := bw.Write(buf); err != nil {
				return
			}
		} else if err := enc.Encode(res); err != nil {
			return
		}
		if len(results[i]) == 0 && bw.Buffered() > 32<<10 && flusher != nil {
			bw.Flush()
			flusher.Flush()
		}
	}
	bw.Flush()
	wg.Wait()
}
