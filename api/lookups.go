package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"
	mlog "github.com/memtrail/memtrail/log"
	"github.com/memtrail/memtrail/receipts"
)

// LogInfo is the body of GET /v1/log.
type LogInfo struct {
	Origin         string `json:"origin"`
	VerifierKey    string `json:"verifier_key"`
	TreeSize       uint64 `json:"tree_size"`       // of the latest published checkpoint
	IntegratedSize uint64 `json:"integrated_size"` // sequenced, possibly not yet published
}

func (s *Server) serveLogInfo(w http.ResponseWriter, r *http.Request) {
	info := LogInfo{Origin: s.log.Origin(), VerifierKey: s.log.VerifierKey()}
	if _, cp, err := s.log.Checkpoint(r.Context()); err == nil {
		info.TreeSize = cp.Size
	}
	size, err := s.log.IntegratedSize(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	info.IntegratedSize = size
	writeJSON(w, http.StatusOK, info)
}

// pathParam returns the URL-unescaped path parameter name, or the query
// parameter alt when the path has none.
func pathParam(r *http.Request, name, alt string) (string, error) {
	raw := chi.URLParam(r, name)
	if raw == "" {
		if v := r.URL.Query().Get(alt); v != "" {
			return v, nil
		}
		return "", badRequest("missing " + name)
	}
	// chi matches against the escaped path only when it differs from the
	// default escaping of the decoded one (URL.RawPath is set); otherwise
	// the parameter is decoded already, and decoding it again would turn
	// an id's own "%20" into a space.
	if r.URL.RawPath == "" {
		return raw, nil
	}
	v, err := url.PathUnescape(raw)
	if err != nil {
		return "", badRequest("malformed escape in " + name)
	}
	return v, nil
}

// Entry is the common part of lookup answers.
type Entry struct {
	Index    uint64          `json:"index"`
	LeafHash string          `json:"leaf_hash"`
	Kind     string          `json:"kind"`
	ID       string          `json:"id"`
	Receipt  json.RawMessage `json:"receipt"`
	// Proof is the entry's tlog-proof against the latest published
	// checkpoint, or empty while no published checkpoint covers it.
	Proof string `json:"proof"`
}

func (s *Server) entry(ctx context.Context, kind receipts.Kind, id string) (*Entry, error) {
	v, err := s.log.Entry(ctx, kind, id)
	if err != nil {
		return nil, err
	}
	return &Entry{Index: v.Index, LeafHash: base64.StdEncoding.EncodeToString(v.LeafHash[:]), Kind: string(v.Kind), ID: v.ID, Receipt: v.Leaf, Proof: string(v.Proof)}, nil
}

// serveEntry answers GET /v1/projections/{id} and /v1/tombstones/{id} (and
// their ?id= forms): the entry, its record and its proof.
func (s *Server) serveEntry(kind receipts.Kind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := pathParam(r, "id", "id")
		if err == nil {
			var e *Entry
			if e, err = s.entry(r.Context(), kind, id); err == nil {
				writeJSON(w, http.StatusOK, e)
				return
			}
		}
		s.writeError(w, r, err)
	}
}

// CompactionState is the body of GET /v1/compactions/{id}.
type CompactionState struct {
	Entry
	// State is current, awaiting_recompaction, awaiting_erasure (every
	// item purged: only a tombstone of the output discharges it),
	// superseded or erased (its output was tombstoned).
	State        string `json:"state"`
	ManifestRoot string `json:"manifest_root"`
	ItemCount    int    `json:"item_count"`
	Supersedes   string `json:"supersedes,omitempty"`
	SupersededBy string `json:"superseded_by,omitempty"`
	SupersededAt uint64 `json:"superseded_at,omitempty"`
	PurgedItems  int    `json:"purged_items"`
	OutputHash   string `json:"compacted_output_hash"`
	// ErasedBy and ErasedAt name the tombstone of the compacted output.
	ErasedBy string `json:"erased_by,omitempty"`
	ErasedAt uint64 `json:"erased_at,omitempty"`
}

func (s *Server) serveCompaction(w http.ResponseWriter, r *http.Request) {
	id, err := pathParam(r, "id", "id")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	info, err := s.log.Compaction(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := s.entry(r.Context(), receipts.KindCompaction, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, CompactionState{
		Entry: *e, State: info.State(), ManifestRoot: info.ManifestRoot, ItemCount: info.ItemCount,
		Supersedes: info.Supersedes, SupersededBy: info.SupersededBy, SupersededAt: info.SupersededAt, PurgedItems: info.PurgedItems,
		OutputHash: info.OutputHash, ErasedBy: info.ErasedBy, ErasedAt: info.ErasedAt,
	})
}

// ItemState is the body of GET /v1/items/{digest}.
type ItemState struct {
	Item string `json:"item"`
	// State: "unknown" (in no compaction, the output of none, and not
	// tombstoned), "retained" (not tombstoned), "purged" (tombstoned and
	// every compaction that included it superseded or erased), or
	// "awaiting_recompaction" (tombstoned, and some compaction that
	// includes it is neither: its state, in open_obligations, says whether
	// a superseding compaction can still discharge it).
	State       string           `json:"state"`
	Compactions []ItemCompaction `json:"compactions"`
	// OutputOf lists the compactions whose compacted_output_hash is this
	// digest: a tombstone of it erases their output and discharges them.
	OutputOf    []ItemCompaction `json:"output_of"`
	Tombstone   *ItemTombstone   `json:"tombstone"`
	Obligations []ItemCompaction `json:"open_obligations"`
}

// ItemCompaction names a compaction that includes or produced an item.
type ItemCompaction struct {
	ID           string `json:"id"`
	Index        uint64 `json:"index"`
	State        string `json:"state"`
	SupersededBy string `json:"superseded_by,omitempty"`
	ErasedBy     string `json:"erased_by,omitempty"`
}

func itemCompaction(c *mlog.CompactionInfo) ItemCompaction {
	return ItemCompaction{ID: c.ID, Index: c.Index, State: c.State(), SupersededBy: c.SupersededBy, ErasedBy: c.ErasedBy}
}

// ItemTombstone is an item's tombstone.
type ItemTombstone struct {
	ID       string `json:"id"`
	Index    uint64 `json:"index"`
	PurgedAt int64  `json:"purged_at"`
}

func (s *Server) serveItem(w http.ResponseWriter, r *http.Request) {
	item, err := pathParam(r, "digest", "digest")
	if err == nil && !receipts.IsDigest(item) {
		err = badRequest("an item digest is \"sha256:\" followed by 64 lowercase hex digits")
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := s.log.Item(r.Context(), item)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	st := ItemState{Item: item, State: v.State, Compactions: itemCompactions(v.Compactions), OutputOf: itemCompactions(v.OutputOf), Obligations: itemCompactions(v.Obligations)}
	if t := v.Tombstone; t != nil {
		st.Tombstone = &ItemTombstone{ID: t.ID, Index: t.Index, PurgedAt: t.PurgedAt}
	}
	writeJSON(w, http.StatusOK, st)
}

func itemCompactions(cs []*mlog.CompactionInfo) []ItemCompaction {
	out := make([]ItemCompaction, 0, len(cs))
	for _, c := range cs {
		out = append(out, itemCompaction(c))
	}
	return out
}

// Obligations is the body of GET /v1/obligations: the open erasure
// obligations, in log order of their compactions (then of their
// tombstones), at most the limit asked for; Count is how many there are in
// all, and Truncated says the list stops short of it.
type Obligations struct {
	Obligations []Obligation `json:"obligations"`
	Count       int          `json:"count"`
	Truncated   bool         `json:"truncated"`
}

// Obligation is one open obligation: a tombstoned item that a compaction
// neither superseded nor erased includes (the members of the open_obligations of a
// "memtrail verify log" report, whose age is judged there).
type Obligation struct {
	Item            string `json:"item"`
	TombstoneID     string `json:"tombstone_id"`
	TombstoneIndex  uint64 `json:"tombstone_index"`
	PurgedAt        int64  `json:"purged_at"`
	CompactionID    string `json:"compaction_id"`
	CompactionIndex uint64 `json:"compaction_index"`
}

// Limits of GET /v1/obligations?limit=N.
const (
	defaultObligations = 1000
	maxObligations     = 10000
)

func (s *Server) serveObligations(w http.ResponseWriter, r *http.Request) {
	limit := defaultObligations
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxObligations {
			s.writeError(w, r, badRequest(fmt.Sprintf("limit must be a decimal integer from 1 to %d", maxObligations)))
			return
		}
		limit = n
	}
	obs, total, err := s.log.OpenObligations(r.Context(), limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := Obligations{Obligations: make([]Obligation, len(obs)), Count: total, Truncated: total > len(obs)}
	for i, o := range obs {
		out.Obligations[i] = Obligation(o)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) serveManifest(w http.ResponseWriter, r *http.Request) {
	root, err := pathParam(r, "root", "root")
	if err == nil && !receipts.IsDigest(root) {
		err = badRequest("a manifest root is \"sha256:\" followed by 64 lowercase hex digits")
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.log.Manifests().Get(r.Context(), root)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}

// SourceProofAnswer is the body of GET
// /v1/compactions/{id}/sources/{item}/proof: the item's inclusion proof in
// the compaction's source tree (tree size = source_item_count) and the
// compaction's own tlog-proof.
type SourceProofAnswer struct {
	SourceProof     json.RawMessage `json:"source_proof"`
	CompactionIndex uint64          `json:"compaction_index"`
	Compaction      json.RawMessage `json:"eccr"`
	CompactionProof string          `json:"compaction_proof,omitempty"`
}

func (s *Server) serveSourceProof(w http.ResponseWriter, r *http.Request) {
	id, err := pathParam(r, "id", "id")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	item, err := pathParam(r, "item", "item")
	if err == nil && !receipts.IsDigest(item) {
		err = badRequest("an item digest is \"sha256:\" followed by 64 lowercase hex digits")
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	e, err := s.entry(ctx, receipts.KindCompaction, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c, err := receipts.ParseCompaction(e.Receipt)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	raw, err := s.log.Manifests().Get(ctx, c.SourceItemsMerkleRoot)
	if errors.Is(err, mlog.ErrNotFound) {
		// The compaction is logged, so its manifest was stored before it:
		// a missing one is damage, not an unknown id.
		err = &httpError{status: http.StatusInternalServerError, code: codeManifestMissing, detail: "the log holds compaction " + id + " but not its manifest " + c.SourceItemsMerkleRoot + "; the operator must restore it (memtrail fsck reports it)"}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	mf, err := receipts.ParseManifest(raw)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	i := mf.Index(item)
	if i < 0 {
		s.writeError(w, r, &httpError{status: http.StatusNotFound, code: codeNotFound, detail: "compaction " + id + " does not include item " + item})
		return
	}
	sp, err := receipts.NewSourceProof(c, mf, i)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, SourceProofAnswer{SourceProof: sp.Marshal(), CompactionIndex: e.Index, Compaction: e.Receipt, CompactionProof: e.Proof})
}

func (s *Server) serveCheckpointAt(w http.ResponseWriter, r *http.Request) {
	size, err := strconv.ParseUint(chi.URLParam(r, "size"), 10, 64)
	if err != nil {
		s.writeError(w, r, badRequest("size must be a decimal integer"))
		return
	}
	cp, err := s.log.CheckpointAt(r.Context(), size)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if _, latest, err := s.log.Checkpoint(r.Context()); err == nil && latest.Size > size {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		// The latest tree may be published again, signed anew and with
		// other cosignatures (a witnessed checkpoint after a fail-open
		// one): not for caching.
		w.Header().Set("Cache-Control", "no-cache")
	}
	w.Write(cp)
}

// serveProof answers the tlog-proof of entry {index} against the latest
// published checkpoint, or against the one of ?size=N.
func (s *Server) serveProof(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	index, err := strconv.ParseUint(chi.URLParam(r, "index"), 10, 64)
	if err != nil {
		s.writeError(w, r, badRequest("index must be a decimal integer"))
		return
	}
	var cp []byte
	if v := r.URL.Query().Get("size"); v != "" {
		size, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			s.writeError(w, r, badRequest("size must be a decimal integer"))
			return
		}
		if index >= size {
			s.writeError(w, r, badRequest(fmt.Sprintf("entry %d is not in a tree of size %d, which holds entries 0 to %d; ask for a size above %d, or omit size for the latest checkpoint", index, size, int64(size)-1, index)))
			return
		}
		if cp, err = s.log.CheckpointAt(ctx, size); err != nil {
			s.writeError(w, r, err)
			return
		}
	} else if cp, _, err = s.log.Checkpoint(ctx); err != nil {
		s.writeError(w, r, err)
		return
	}
	proof, err := s.log.InclusionProof(ctx, index, cp)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write(proof)
}

// Consistency is the body of GET /v1/consistency.
type Consistency struct {
	From  uint64   `json:"from"`
	To    uint64   `json:"to"`
	Proof []string `json:"proof"` // standard base64 hashes
}

func (s *Server) serveConsistency(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, err1 := strconv.ParseUint(q.Get("from"), 10, 64)
	to, err2 := strconv.ParseUint(q.Get("to"), 10, 64)
	if err1 != nil || err2 != nil {
		s.writeError(w, r, badRequest("from and to must be decimal integers"))
		return
	}
	if from > to {
		s.writeError(w, r, badRequest("from must not exceed to"))
		return
	}
	path, err := s.log.ConsistencyProof(r.Context(), from, to)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := Consistency{From: from, To: to, Proof: make([]string, len(path))}
	for i, h := range path {
		out.Proof[i] = base64.StdEncoding.EncodeToString(h)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	if _, err := s.log.IntegratedSize(r.Context()); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, Refusal{Code: codeUnavailable, Detail: "log storage is not readable"})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
}
