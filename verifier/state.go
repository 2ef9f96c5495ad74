package verifier

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/memtrail/memtrail/internal/tlogfmt"
	"github.com/memtrail/memtrail/receipts"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
)

// idRecord is the size of one id record in a state: 16 bytes of hash, 8 of
// index.
const idRecord = 24

// StateVersion is the state_version of an audit state file.
//
// Version 2 records each compaction's compacted_output_hash, whose
// tombstone discharges it; a version 1 state lacks it and is refused (audit
// from the start again).
const StateVersion = "memtrail-audit-state/v2"

// An AuditState is what a log audit keeps to resume: the checkpoint it
// audited and the compact range of the tree at that size (at most 64
// hashes, from which the next run recomputes the larger tree's root from
// the new leaves alone), a digest of the trust file it judged under, and
// the lineage state — every single-use id, every compaction and tombstone —
// with the findings so far. Its JSON form, the state file:
//
//	{"state_version": "memtrail-audit-state/v2",
//	 "origin": "example.com/log",
//	 "tree_size": 1000000,
//	 "root_hash": "<base64>",
//	 "checkpoint": "<the signed checkpoint, verbatim>",
//	 "range": ["<base64>", …],
//	 "trust_digest": "sha256:…",
//	 "time_floor": "2026-…Z" | null,
//	 "counts": {"projections": …, "compactions": …, "tombstones": …, "unparsed": …},
//	 "ids": {"projection": "<base64>", "compaction": "<base64>", "tombstone": "<base64>"},
//	 "compactions": [{"id": …, "index": …, "manifest_root": …, "items": [<digest>, …] | null,
//	                  "supersedes": …, "superseded_by": …, "superseded_at": …,
//	                  "compacted_output_hash": …}, …],
//	 "tombstones": [{"id": …, "index": …, "item": …, "purged_at": …}, …],
//	 "finding_counts": {"<code>": <n>, …},
//	 "findings": [<finding as in the report>, …]}
//
// Who trusts it: the auditor who wrote it. The state is not signed; an
// attacker who can write it can make a later audit skip entries or forget
// findings. Keep it where the audit's output is kept.
type AuditState struct {
	Origin      string
	Checkpoint  []byte
	TreeSize    uint64
	RootHash    []byte
	Range       [][]byte
	TrustDigest string
	TimeFloor   *time.Time
	Counts      Counts
	// IDs holds, for each receipt kind, the single-use ids logged so far
	// as 24-byte records in log order: the first 16 bytes of the SHA-256
	// of the id, then the index where it was first logged (uint64, big
	// endian).
	IDs         map[receipts.Kind][]byte
	Compactions []StateCompaction
	Tombstones  []StateTombstone
	// FindingCounts and Findings are the receipt and lineage findings of
	// the entries below TreeSize (Findings capped at MaxReportedFindings,
	// always holding the first finding of each of the two checks, from
	// which a resumed audit derives their outcomes).
	FindingCounts map[receipts.Code]uint64
	Findings      []Finding
}

// StateCompaction is a logged compaction in an audit state.
type StateCompaction struct {
	ID           string   `json:"id"`
	Index        uint64   `json:"index"`
	ManifestRoot string   `json:"manifest_root"`
	Items        []string `json:"items"` // nil when the manifest could not be read
	Supersedes   string   `json:"supersedes"`
	SupersededBy string   `json:"superseded_by"`
	SupersededAt uint64   `json:"superseded_at"`
	OutputHash   string   `json:"compacted_output_hash"`
}

// StateTombstone is a logged tombstone in an audit state.
type StateTombstone struct {
	ID       string `json:"id"`
	Index    uint64 `json:"index"`
	Item     string `json:"item"`
	PurgedAt int64  `json:"purged_at"`
}

type stateJSON struct {
	Version       string            `json:"state_version"`
	Origin        string            `json:"origin"`
	TreeSize      uint64            `json:"tree_size"`
	RootHash      string            `json:"root_hash"`
	Checkpoint    string            `json:"checkpoint"`
	Range         []string          `json:"range"`
	TrustDigest   string            `json:"trust_digest"`
	TimeFloor     *string           `json:"time_floor"`
	Counts        Counts            `json:"counts"`
	IDs           map[string]string `json:"ids"`
	Compactions   []StateCompaction `json:"compactions"`
	Tombstones    []StateTombstone  `json:"tombstones"`
	FindingCounts map[string]uint64 `json:"finding_counts"`
	Findings      []Finding         `json:"findings"`
}

// TrustDigest returns the digest of a trust file's canonical form, which a
// state records so that a resumed audit judges under the same keys.
func TrustDigest(t *receipts.Trust) string { return digestOf(receipts.MarshalTrust(t)) }

// MaxStateSize caps an audit state file.
const MaxStateSize = 4 << 30

const docState = "audit state"

// stateNames are the member names a state file may use, outside the free
// names of ids and finding_counts.
var stateNames = func() map[string]bool {
	m := map[string]bool{}
	for _, t := range []any{stateJSON{}, StateCompaction{}, StateTombstone{}, Finding{}, Evidence{}, Counts{}} {
		b, _ := json.Marshal(t)
		var fields map[string]any
		json.Unmarshal(b, &fields)
		for k := range fields {
			m[k] = true
		}
	}
	// omitempty members do not show in a zero value.
	for _, k := range []string{"index", "kind", "id", "member", "evidence", "leaf_hash", "committed_leaf_hash", "expected_root",
		"computed_root", "bundle", "first_index", "item", "tombstone_id", "tombstone_index", "purged_at", "compaction_id",
		"compaction_index", "manifest_root", "compacted_output_hash", "kid", "logged_after", "age_sec"} {
		m[k] = true
	}
	return m
}()

// checkStateNames checks every member name in exact case, except the keys
// of finding_counts, which are data, and of ids, which are receipt kinds.
func checkStateNames(v *jvalue, path string) error {
	switch v.Kind() {
	case receipts.JSONArray:
		for i := range v.Len() {
			e := v.Elem(i)
			if err := checkStateNames(&e, path+"[]"); err != nil {
				return err
			}
		}
	case receipts.JSONObject:
		if path == "ids" || path == "finding_counts" {
			if path == "ids" {
				for i := range v.Len() {
					name, _ := v.Member(i)
					if name != string(receipts.KindProjection) && name != string(receipts.KindCompaction) && name != string(receipts.KindTombstone) {
						return &InputError{Document: docState, Member: "ids." + name, Reason: "unknown receipt kind"}
					}
				}
			}
			return nil
		}
		for i := range v.Len() {
			name, m := v.Member(i)
			if !stateNames[name] {
				return &InputError{Document: docState, Member: receipts.MemberPath(path, name), Reason: "unknown member"}
			}
			if err := checkStateNames(&m, receipts.MemberPath(path, name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// ParseAuditState parses a state file strictly and checks that it is
// coherent: the checkpoint text names the origin, size and root; the
// compact range has the hashes of a tree of that size and hashes to that
// root; every index is below the size. Errors are *[InputError] and match
// [ErrMalformed].
func ParseAuditState(data []byte) (*AuditState, error) {
	if len(data) > MaxStateSize {
		return nil, &InputError{Document: docState, Reason: "larger than 4 GiB"}
	}
	_, v, err := parseStrictJSON(docState, data)
	if err != nil {
		return nil, err
	}
	if v.Kind() != receipts.JSONObject {
		return nil, &InputError{Document: docState, Reason: "not a JSON object"}
	}
	if err := checkStateNames(v, ""); err != nil {
		return nil, err
	}
	var j stateJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, &InputError{Document: docState, Reason: err.Error()}
	}
	bad := func(member, format string, args ...any) error {
		return &InputError{Document: docState, Member: member, Reason: fmt.Sprintf(format, args...)}
	}
	if j.Version == "memtrail-audit-state/v1" {
		return nil, bad("state_version", "is %q, which does not record the compactions' outputs; audit the log from the start again (without the state) to write a %q state", j.Version, StateVersion)
	}
	if j.Version != StateVersion {
		return nil, bad("state_version", "must be %q", StateVersion)
	}
	s := &AuditState{Origin: j.Origin, TreeSize: j.TreeSize, Checkpoint: []byte(j.Checkpoint), TrustDigest: j.TrustDigest, Counts: j.Counts,
		Compactions: j.Compactions, Tombstones: j.Tombstones, Findings: j.Findings}
	root, ok := tlogfmt.ParseHash(j.RootHash)
	if !ok {
		return nil, bad("root_hash", "must be a base64 SHA-256 hash")
	}
	s.RootHash = root[:]
	text, _, found := strings.Cut(j.Checkpoint, "\n\n")
	c, err := parseCheckpointText(text + "\n")
	if !found || err != nil {
		return nil, bad("checkpoint", "is not a signed checkpoint")
	}
	if c.Origin != j.Origin || c.Size != j.TreeSize || c.Hash != root {
		return nil, bad("checkpoint", "does not name the state's origin, tree size and root hash")
	}
	for i, h := range j.Range {
		d, ok := tlogfmt.ParseHash(h)
		if !ok {
			return nil, bad(fmt.Sprintf("range[%d]", i), "must be a base64 SHA-256 hash")
		}
		s.Range = append(s.Range, d[:])
	}
	if _, err := stateRange(s); err != nil {
		return nil, bad("range", "%v", err)
	}
	if !receipts.IsDigest(j.TrustDigest) {
		return nil, bad("trust_digest", "must be a sha256 digest")
	}
	if j.TimeFloor != nil {
		t, err := receipts.ParseTimestamp(*j.TimeFloor)
		if err != nil {
			return nil, bad("time_floor", "%v", err)
		}
		s.TimeFloor = &t
	}
	below := func(member string, idx uint64) error {
		if idx >= j.TreeSize {
			return bad(member, "index %d is not below tree_size %d", idx, j.TreeSize)
		}
		return nil
	}
	s.IDs = map[receipts.Kind][]byte{}
	for kind, enc := range j.IDs {
		b, err := base64.StdEncoding.Strict().DecodeString(enc)
		if err != nil || len(b)%idRecord != 0 {
			return nil, bad("ids."+kind, "must be base64 of 24-byte records")
		}
		for i := 0; i < len(b); i += idRecord {
			if err := below("ids."+kind, binary.BigEndian.Uint64(b[i+16:i+idRecord])); err != nil {
				return nil, err
			}
		}
		s.IDs[receipts.Kind(kind)] = b
	}
	for i, c := range s.Compactions {
		p := fmt.Sprintf("compactions[%d]", i)
		if !isPrintableID(c.ID) || !receipts.IsDigest(c.ManifestRoot) || !receipts.IsDigest(c.OutputHash) || c.Supersedes != "" && !isPrintableID(c.Supersedes) ||
			c.SupersededBy != "" && !isPrintableID(c.SupersededBy) {
			return nil, bad(p, "has a malformed id, root or output")
		}
		if err := below(p+".index", c.Index); err != nil {
			return nil, err
		}
		if c.SupersededBy != "" {
			if err := below(p+".superseded_at", c.SupersededAt); err != nil {
				return nil, err
			}
		}
		for _, it := range c.Items {
			if !receipts.IsDigest(it) {
				return nil, bad(p+".items", "%q is not a sha256 digest", it)
			}
		}
	}
	for i, t := range s.Tombstones {
		p := fmt.Sprintf("tombstones[%d]", i)
		if !isPrintableID(t.ID) || !receipts.IsDigest(t.Item) || t.PurgedAt < 1 {
			return nil, bad(p, "has a malformed id, item or purged_at")
		}
		if err := below(p+".index", t.Index); err != nil {
			return nil, err
		}
	}
	s.FindingCounts = map[receipts.Code]uint64{}
	for code, n := range j.FindingCounts {
		if code == "" || receipts.HasControl(code) {
			return nil, bad("finding_counts", "has a malformed code")
		}
		s.FindingCounts[receipts.Code(code)] = n
	}
	for i, f := range s.Findings {
		if f.Code == "" || (f.Check != CheckReceipts && f.Check != CheckLineage) {
			return nil, bad(fmt.Sprintf("findings[%d]", i), "must be a receipt or lineage finding with a code")
		}
	}
	if s.Findings == nil {
		s.Findings = []Finding{}
	}
	return s, nil
}

// stateRange rebuilds the compact range of a state and checks its root.
func stateRange(s *AuditState) (*compact.Range, error) {
	rf := &compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	hashes := make([][]byte, len(s.Range))
	for i, h := range s.Range {
		hashes[i] = bytes.Clone(h)
	}
	r, err := rf.NewRange(0, s.TreeSize, hashes)
	if err != nil {
		return nil, err
	}
	root := rootOf(r)
	if !bytes.Equal(root, s.RootHash) {
		return nil, fmt.Errorf("the range hashes to %s, not the root hash", b64(root))
	}
	return r, nil
}

// rootOf returns the root hash of a range that starts at 0, the hash of
// the empty string for the empty tree.
func rootOf(r *compact.Range) []byte {
	root, err := r.GetRootHash(nil)
	if err != nil || root == nil {
		return rfc6962.DefaultHasher.EmptyRoot()
	}
	return root
}

// Marshal writes the state file. ParseAuditState reads it back to an equal
// state.
func (s *AuditState) Marshal() []byte {
	j := stateJSON{Version: StateVersion, Origin: s.Origin, TreeSize: s.TreeSize, RootHash: b64(s.RootHash), Checkpoint: string(s.Checkpoint),
		Range: []string{}, TrustDigest: s.TrustDigest, Counts: s.Counts, IDs: map[string]string{},
		Compactions: s.Compactions, Tombstones: s.Tombstones, FindingCounts: map[string]uint64{}, Findings: s.Findings}
	for _, h := range s.Range {
		j.Range = append(j.Range, b64(h))
	}
	if s.TimeFloor != nil {
		t := receipts.FormatTimestamp(*s.TimeFloor)
		j.TimeFloor = &t
	}
	for k, ids := range s.IDs {
		j.IDs[string(k)] = base64.StdEncoding.EncodeToString(ids)
	}
	for c, n := range s.FindingCounts {
		j.FindingCounts[string(c)] = n
	}
	if j.Compactions == nil {
		j.Compactions = []StateCompaction{}
	}
	if j.Tombstones == nil {
		j.Tombstones = []StateTombstone{}
	}
	if j.Findings == nil {
		j.Findings = []Finding{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&j); err != nil {
		panic("verifier: state does not encode: " + err.Error())
	}
	return buf.Bytes()
}

// resume loads a saved state into the auditor.
func (a *auditor) resume(s *AuditState) error {
	r, err := stateRange(s)
	if err != nil {
		return fmt.Errorf("verifier: saved state: %w", err)
	}
	a.rng = r
	g := newLineage()
	for kind, ids := range s.IDs {
		m := g.ids[kind]
		if m == nil {
			return fmt.Errorf("verifier: saved state: unknown receipt kind %q", kind)
		}
		for i := 0; i+idRecord <= len(ids); i += idRecord {
			h := idHash(ids[i : i+16])
			if _, dup := m[h]; dup {
				return fmt.Errorf("verifier: saved state: an id of kind %s is listed twice", kind)
			}
			m[h] = binary.BigEndian.Uint64(ids[i+16 : i+idRecord])
		}
	}
	cs := append([]StateCompaction(nil), s.Compactions...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].Index < cs[j].Index })
	for _, sc := range cs {
		c := &lineageCompaction{id: sc.ID, index: sc.Index, root: sc.ManifestRoot, supersedes: sc.Supersedes,
			supersededBy: sc.SupersededBy, supersededAt: sc.SupersededAt, output: receipts.DigestBytes(sc.OutputHash)}
		if sc.Items != nil {
			c.items = digestsOf(sc.Items)
		}
		g.add(c)
	}
	for _, st := range s.Tombstones {
		item := receipts.DigestBytes(st.Item)
		if _, dup := g.tombstones[item]; dup {
			return fmt.Errorf("verifier: saved state: item %s is tombstoned twice", st.Item)
		}
		g.addTombstone(&lineageTombstone{id: st.ID, index: st.Index, item: item, purgedAt: st.PurgedAt})
	}
	if s.TimeFloor != nil {
		g.floor, g.hasFloor = *s.TimeFloor, true
	}
	g.counts = s.Counts
	a.g = g
	for c, n := range s.FindingCounts {
		a.counts[c] += n
		a.persistCounts[c] += n
	}
	a.findings = append(a.findings, s.Findings...)
	return nil
}

// state returns the state after a completed audit.
func (a *auditor) state(trustDigest string) *AuditState {
	s := &AuditState{Origin: a.cp.Origin, Checkpoint: a.cp.Raw, TreeSize: a.cp.Size, RootHash: bytes.Clone(a.cp.Hash[:]),
		TrustDigest: trustDigest, Counts: a.g.counts, IDs: map[receipts.Kind][]byte{}, FindingCounts: map[receipts.Code]uint64{}}
	type rec struct {
		h   idHash
		idx uint64
	}
	for kind, m := range a.g.ids {
		recs := make([]rec, 0, len(m))
		for h, idx := range m {
			recs = append(recs, rec{h, idx})
		}
		sort.Slice(recs, func(i, j int) bool { return recs[i].idx < recs[j].idx })
		b := make([]byte, 0, len(recs)*idRecord)
		for _, r := range recs {
			b = append(b, r.h[:]...)
			b = binary.BigEndian.AppendUint64(b, r.idx)
		}
		s.IDs[kind] = b
	}
	for _, h := range a.rng.Hashes() {
		s.Range = append(s.Range, bytes.Clone(h))
	}
	if a.g.hasFloor {
		t := a.g.floor
		s.TimeFloor = &t
	}
	for _, c := range a.g.compactions {
		sc := StateCompaction{ID: c.id, Index: c.index, ManifestRoot: c.root, Supersedes: c.supersedes,
			SupersededBy: c.supersededBy, SupersededAt: c.supersededAt, OutputHash: c.output.String()}
		if c.items != nil {
			sc.Items = make([]string, len(c.items))
			for i, it := range c.items {
				sc.Items[i] = it.String()
			}
		}
		s.Compactions = append(s.Compactions, sc)
	}
	sort.Slice(s.Compactions, func(i, j int) bool { return s.Compactions[i].Index < s.Compactions[j].Index })
	for _, t := range a.g.tombstones {
		s.Tombstones = append(s.Tombstones, StateTombstone{ID: t.id, Index: t.index, Item: t.item.String(), PurgedAt: t.purgedAt})
	}
	sort.Slice(s.Tombstones, func(i, j int) bool { return s.Tombstones[i].Index < s.Tombstones[j].Index })
	for c, n := range a.persistCounts {
		s.FindingCounts[c] = n
	}
	// At most MaxReportedFindings, but always the first of each check, so
	// that a resumed audit derives the same check outcomes as a whole one.
	s.Findings = a.keep(MaxReportedFindings, func(c string) bool { return c == CheckReceipts || c == CheckLineage })
	return s
}
