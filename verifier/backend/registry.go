package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/memtrail/memtrail/internal/atomicfile"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
)

// FileRegistry keeps single-use registrations of projection ids in a
// registry file (see [verifier.RegistryFile] for its format).
//
// A registration holds an exclusive lock on the lock file PATH.lock for the
// whole read-check-write: flock(2) where the system has it, which the
// kernel releases when the process dies; elsewhere a lock file created
// with O_EXCL, which a crash leaves behind (remove it by hand once no
// verifier runs). Under the lock it reads and parses the registry, refuses
// an id already there, and writes the new registry to a temporary file,
// syncs it and renames it over PATH, syncing the directory. So concurrent
// "memtrail verify" processes on one registry never both register an id,
// and a crash at any point leaves the old registry or the new one, never a
// torn one. The registration is durable when Register returns.
//
// Who trusts it: the relying party that owns it. Anyone who can write it
// can remove registrations and let a record be accepted twice.
type FileRegistry struct {
	path string
}

var _ verifier.Registry = (*FileRegistry)(nil)

// NewFileRegistry returns the registry kept in the file at path (created
// on first registration, when no file is there; an existing file, even an
// empty one, must parse).
func NewFileRegistry(path string) *FileRegistry { return &FileRegistry{path: path} }

// Register registers id, used by the record with canonical bytes record,
// at time at.
func (r *FileRegistry) Register(ctx context.Context, id string, record []byte, at time.Time) (*verifier.Registration, error) {
	unlock, err := lockFile(ctx, r.path+".lock")
	if err != nil {
		return nil, fmt.Errorf("couldn't lock the registry %s: %w", r.path, err)
	}
	defer unlock()
	var f *verifier.RegistryFile
	data, err := os.ReadFile(r.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f = verifier.NewRegistryFile()
	case err != nil:
		return nil, fmt.Errorf("couldn't read the registry: %w", err)
	default:
		// An existing file must parse, even an empty one: a registry
		// that does not parse is an error, never a reset.
		if f, err = verifier.ParseRegistry(data); err != nil {
			return nil, fmt.Errorf("%s: %w", r.path, err)
		}
	}
	if e, dup := f.Lookup(id); dup {
		return nil, &verifier.ReplayError{ProjectionID: id, First: verifier.Registration{Registry: r.path, ProjectionID: id,
			RecordDigest: e.RecordDigest, RegisteredAt: receipts.FormatTimestamp(e.RegisteredAt)}}
	}
	e := verifier.RegistryEntry{RegisteredAt: at, RecordDigest: receipts.Digest(record), ProjectionID: id}
	if err := f.Add(e); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(r.path, f.Format(), 0o644); err != nil {
		return nil, err
	}
	return &verifier.Registration{Registry: r.path, ProjectionID: id, RecordDigest: e.RecordDigest, RegisteredAt: receipts.FormatTimestamp(at)}, nil
}

// lockRetry is how often a busy lock is tried again.
const lockRetry = 5 * time.Millisecond

// LogRegistry uses a memtrail log as the registry of projection ids. The
// log logs each projection_id at most once, atomically, so the log binds
// an id to exactly one record. Nothing the log says is believed without
// proof: every answer must come with a C2SP tlog-proof that opens under
// the verifier's tlog-policy. Registering an id there means:
//
//   - if the log already holds the id (GET /v1/projections?id=), the
//     answer carries the logged record and its tlog-proof. When the
//     logged record is this very record (same leaf hash) and the proof
//     proves its leaf at the index named, the id is bound to this record
//     and the registration names the index. When it is another record
//     with the same projection_id, proven at the index named, the result
//     is projection_replay naming that index;
//   - if the log does not hold it, the record is submitted (POST
//     /v1/projections?wait=proof): the log's atomic single use decides,
//     and the answer's tlog-proof must prove this record's leaf at the
//     index named. A concurrent registration of the same id by another
//     record loses with projection_replay (proven as above).
//
// A proof the answer lacks is fetched from GET /v1/proof/{index}, waiting
// up to ProofWait while the log has not yet published a checkpoint that
// covers the entry. An answer that cannot be proven is an
// *[verifier.UnprovenError], never a registration.
//
// Against a log, presenting the same record again is not a replay: what
// the log guarantees is that no other record can ever use the id. A
// relying party that must also refuse the second presentation of one
// record keeps a registry file (see FileRegistry).
type LogRegistry struct {
	base   *url.URL
	client *http.Client
	policy *verifier.Policy
	// ProofWait bounds how long Register waits for the log to publish a
	// checkpoint covering an entry it has no proof for yet.
	ProofWait time.Duration
}

var _ verifier.Registry = (*LogRegistry)(nil)

// DefaultProofWait is LogRegistry.ProofWait unless set otherwise.
const DefaultProofWait = 30 * time.Second

// NewLogRegistry returns the registry kept by the log at rawURL, whose
// answers must be proven by inclusion proofs in checkpoints that open
// under policy (the log's key and its witness quorum). A nil client means
// one with a two-minute timeout (a submission waits for its proof).
func NewLogRegistry(rawURL string, policy *verifier.Policy, c *http.Client) (*LogRegistry, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("log URL %q is not an http(s) URL", rawURL)
	}
	if policy == nil {
		return nil, errors.New("a log registry needs the log's tlog-policy: its answers are accepted only with inclusion proofs")
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	if c == nil {
		c = &http.Client{Timeout: 2 * time.Minute}
	}
	return &LogRegistry{base: u, client: c, policy: policy, ProofWait: DefaultProofWait}, nil
}

// logAnswer is the part of the log's lookup and submission answers the
// registry reads.
type logAnswer struct {
	Index        *uint64         `json:"index"`
	Receipt      json.RawMessage `json:"receipt"`
	Proof        string          `json:"proof"`
	ProofPending string          `json:"proof_pending"`
}

// Register looks id up in the log and, when the log does not have it,
// submits the record; either answer must be proven.
func (r *LogRegistry) Register(ctx context.Context, id string, record []byte, at time.Time) (*verifier.Registration, error) {
	ours := verifier.LeafHash(record)
	name := strings.TrimSuffix(r.base.String(), "/")
	for attempt := 0; attempt < 3; attempt++ {
		status, body, err := r.do(ctx, http.MethodGet, "v1/projections?id="+url.QueryEscape(id), nil)
		if err != nil {
			return nil, err
		}
		switch status {
		case http.StatusOK:
			var e logAnswer
			if err := json.Unmarshal(body, &e); err != nil || e.Index == nil {
				return nil, fmt.Errorf("the log's answer for %s is not an entry", id)
			}
			proof, err := r.proof(ctx, id, *e.Index, e.Proof)
			if err != nil {
				return nil, err
			}
			leaf, err := verifier.ProveLoggedProjection(r.policy, id, *e.Index, e.Receipt, proof)
			if err != nil {
				return nil, err
			}
			reg := verifier.Registration{Registry: name, ProjectionID: id, RecordDigest: receipts.Digest(leaf), LogIndex: e.Index, Proof: string(proof)}
			if !bytes.Equal(verifier.LeafHash(leaf), ours) {
				return nil, &verifier.ReplayError{ProjectionID: id, First: reg}
			}
			reg.Existing = true
			return &reg, nil
		case http.StatusNotFound:
		default:
			return nil, fmt.Errorf("GET /v1/projections for %s: %d: %s", id, status, refusalText(body))
		}
		status, body, err = r.do(ctx, http.MethodPost, "v1/projections?wait=proof", record)
		if err != nil {
			return nil, err
		}
		switch status {
		case http.StatusCreated:
			var e logAnswer
			if err := json.Unmarshal(body, &e); err != nil || e.Index == nil {
				return nil, fmt.Errorf("the log's answer to the submission of %s is not an acceptance", id)
			}
			proof, err := r.proof(ctx, id, *e.Index, e.Proof)
			if err != nil {
				return nil, err
			}
			if _, err := verifier.ProveLoggedProjection(r.policy, id, *e.Index, record, proof); err != nil {
				return nil, err
			}
			return &verifier.Registration{Registry: name, ProjectionID: id, RecordDigest: receipts.Digest(record), LogIndex: e.Index,
				RegisteredAt: receipts.FormatTimestamp(at), Proof: string(proof)}, nil
		case http.StatusConflict:
			continue // logged meanwhile: look again at what was logged
		case http.StatusBadRequest, http.StatusForbidden, http.StatusRequestEntityTooLarge:
			// A refusal with a receipt code judged the record; the
			// HTTP-level codes (bad_request, …) are about the request.
			var rf refusal
			if json.Unmarshal(body, &rf) == nil && receiptCode(rf.Code) {
				return nil, &verifier.RefusedError{ProjectionID: id, Registry: "the log " + name, Code: receipts.Code(rf.Code), Member: logText(rf.Member), Reason: logText(rf.Detail)}
			}
			return nil, fmt.Errorf("the log refused to register %s: %s", id, refusalText(body))
		default:
			return nil, fmt.Errorf("the log refused to register %s: %s", id, refusalText(body))
		}
	}
	return nil, fmt.Errorf("the log kept changing its answer for %s", id)
}

// proof returns the tlog-proof of the entry at index: the one the answer
// carried, or one fetched from GET /v1/proof/{index}, waiting up to
// ProofWait while the log answers that no published checkpoint covers the
// entry yet. A log that gives no proof is an *UnprovenError.
func (r *LogRegistry) proof(ctx context.Context, id string, index uint64, given string) ([]byte, error) {
	if given != "" {
		return []byte(given), nil
	}
	deadline := time.Now().Add(r.ProofWait)
	path := "v1/proof/" + strconv.FormatUint(index, 10)
	for {
		status, body, err := r.do(ctx, http.MethodGet, path, nil)
		if err != nil {
			return nil, err
		}
		if status == http.StatusOK {
			return body, nil
		}
		if status != http.StatusNotFound || refusalCode(body) != "not_published" || !time.Now().Before(deadline) {
			return nil, &verifier.UnprovenError{ProjectionID: id, Code: verifier.CodeSingleUseUnproven,
				Reason: fmt.Sprintf("the log gave no inclusion proof of its entry at index %d (GET /%s: %d: %s); run the verification again once a checkpoint of the log covers it",
					index, path, status, refusalText(body))}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (r *LogRegistry) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	u, err := r.base.Parse(path)
	if err != nil {
		return 0, nil, err
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("couldn't reach the log: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, u, err)
	}
	return resp.StatusCode, b, nil
}

// logText is text from the log's answer, fit to print: at most 1,000
// bytes, quoted when it holds what a terminal would not show as it is.
func logText(s string) string {
	if len(s) > 1000 {
		s = s[:1000] + "…"
	}
	if strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}

// receiptCode reports whether code is a closed receipt code (lowercase
// words joined by "_") rather than one of the API's HTTP-level codes.
func receiptCode(code string) bool {
	switch code {
	case "", "bad_request", "unsupported_media_type", "method_not_allowed", "not_found", "not_published", "request_timeout":
		return false
	}
	for _, c := range code {
		if (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return len(code) <= 64
}

// refusalCode returns the code of a JSON refusal, or "".
func refusalCode(body []byte) string {
	var r refusal
	if json.Unmarshal(body, &r) == nil {
		return r.Code
	}
	return ""
}
