package verifier

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/memtrail/memtrail/receipts"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"
)

// A LogSource is where a log audit reads a log: the C2SP tlog-tiles
// resources (checkpoint, hash tiles, entry bundles), the source manifests
// of compactions, and consistency proofs. Package backend reads a log's
// data directory or its URL; tests can serve anything.
//
// Resources the log does not have are reported with an error wrapping
// [fs.ErrNotExist]: the audit reports those as findings against the log
// (a missing entry bundle or manifest). Any other error aborts the audit
// as an I/O failure. Methods are called concurrently.
type LogSource interface {
	ReadCheckpoint(ctx context.Context) ([]byte, error)
	ReadTile(ctx context.Context, level, index uint64, p uint8) ([]byte, error)
	ReadEntryBundle(ctx context.Context, index uint64, p uint8) ([]byte, error)
	// ReadManifest returns the manifest the log stores under a source
	// tree root ("sha256:<hex>").
	ReadManifest(ctx context.Context, root string) ([]byte, error)
	// ConsistencyProof returns the RFC 6962 consistency proof from the
	// tree of size from to the tree of size to.
	ConsistencyProof(ctx context.Context, from, to uint64) ([][]byte, error)
}

// Names of the checks of a log audit, in their order of precedence.
const (
	CheckCheckpoint  = "checkpoint"
	CheckSavedState  = "saved_state"
	CheckTreeRoot    = "tree_root"
	CheckReceipts    = "receipts"
	CheckLineage     = "lineage"
	CheckObligations = "obligations"
)

// DefaultGrace is how long an erasure obligation may stay open before it
// is a violation, unless the audit says otherwise.
const DefaultGrace = 24 * time.Hour

// MaxReportedFindings caps the findings a report and a state list; the
// counts by code are always complete.
const MaxReportedFindings = 10000

// AuditOptions configures [AuditLog].
type AuditOptions struct {
	// Policy is the tlog-policy under which the log's checkpoint must
	// open (the log's key and the witness quorum). Required.
	Policy *Policy
	// Trust is the trust file whose keys must have signed every receipt,
	// and whose lattice orders labels. Required.
	Trust *receipts.Trust
	// At is the audit time: open obligations are aged from their
	// tombstone's purged_at to At. Required. Nothing else depends on it:
	// each receipt is judged at its own time and at the time the log had
	// certainly reached when it logged it.
	At time.Time
	// Grace is how long after purged_at an obligation may stay open
	// before it is a violation (obligation_overdue). Zero means none.
	Grace time.Duration
	// State is a saved state of an earlier audit of the same log, or nil.
	// With it, the checkpoint must be consistent with the saved one, and
	// only the entries added since are read (unless the trust file
	// changed, when every entry is audited again).
	State *AuditState
	// Workers is the number of entries verified in parallel (default
	// GOMAXPROCS).
	Workers int
	// Progress, when set, is called from one goroutine as entries are
	// audited, with the number done and the number to do in this run.
	Progress func(done, total uint64)
}

// AuditReport is the outcome of [AuditLog].
type AuditReport struct {
	Kind       string  `json:"kind"` // "log"
	Result     string  `json:"result"`
	Origin     string  `json:"origin,omitempty"`
	TreeSize   *uint64 `json:"tree_size,omitempty"`
	RootHash   string  `json:"root_hash,omitempty"`
	Checkpoint string  `json:"checkpoint,omitempty"`
	AuditTime  string  `json:"audit_time"`
	GraceSec   int64   `json:"grace_sec"`
	// ResumedFrom is the tree size of the saved state the audit resumed
	// from, when it did.
	ResumedFrom *uint64 `json:"resumed_from,omitempty"`
	// EntriesAudited counts the entries read and verified in this run.
	EntriesAudited uint64 `json:"entries_audited"`
	// Counts counts the log's entries by kind, over the whole log.
	Counts Counts `json:"counts"`
	// FindingCounts counts every finding by code; Findings lists them
	// (at most MaxReportedFindings, in check and index order).
	FindingCounts     map[receipts.Code]uint64 `json:"finding_counts"`
	Findings          []Finding                `json:"findings"`
	FindingsTruncated bool                     `json:"findings_truncated,omitempty"`
	Obligations       []Obligation             `json:"open_obligations"`
	// Fork is the evidence when the log's checkpoint cannot be a later
	// state of the saved one.
	Fork   *ForkEvidence `json:"fork,omitempty"`
	Checks []Check       `json:"checks"`
}

// A Finding is one violation found by an audit: its closed code, the
// check that found it, the entry it concerns (absent for findings about
// the log as a whole) and the evidence.
type Finding struct {
	Code     receipts.Code `json:"code"`
	Check    string        `json:"check"`
	Index    *uint64       `json:"index,omitempty"`
	Kind     string        `json:"kind,omitempty"`
	ID       string        `json:"id,omitempty"`
	Member   string        `json:"member,omitempty"`
	Detail   string        `json:"detail"`
	Evidence *Evidence     `json:"evidence,omitempty"`
}

// Evidence backs a finding with what anyone can recompute or look up:
// hashes are standard base64 as in checkpoints and proofs, indexes are log
// indexes.
type Evidence struct {
	// LeafHash is the entry's RFC 6962 leaf hash, SHA-256(0x00 || entry).
	LeafHash string `json:"leaf_hash,omitempty"`
	// CommittedLeafHash is the leaf hash the log's own hash tile holds for
	// the entry, when it differs from the entry's.
	CommittedLeafHash string `json:"committed_leaf_hash,omitempty"`
	ExpectedRoot      string `json:"expected_root,omitempty"`
	ComputedRoot      string `json:"computed_root,omitempty"`
	// Bundle is the index of an entry bundle.
	Bundle *uint64 `json:"bundle,omitempty"`
	// FirstIndex is where an id was first logged, or where a compaction
	// was first superseded.
	FirstIndex      *uint64 `json:"first_index,omitempty"`
	Item            string  `json:"item,omitempty"`
	TombstoneID     string  `json:"tombstone_id,omitempty"`
	TombstoneIndex  *uint64 `json:"tombstone_index,omitempty"`
	PurgedAt        int64   `json:"purged_at,omitempty"`
	CompactionID    string  `json:"compaction_id,omitempty"`
	CompactionIndex *uint64 `json:"compaction_index,omitempty"`
	ManifestRoot    string  `json:"manifest_root,omitempty"`
	// CompactedOutputHash is a compaction's output, whose tombstone
	// discharges it.
	CompactedOutputHash string `json:"compacted_output_hash,omitempty"`
	KID                 string `json:"kid,omitempty"`
	// LoggedAfter is the time the log had certainly passed when it logged
	// the entry (see docs/verify.md, "When the log logged an entry").
	LoggedAfter string `json:"logged_after,omitempty"`
	AgeSec      int64  `json:"age_sec,omitempty"`
}

func b64(h []byte) string { return base64.StdEncoding.EncodeToString(h) }

// Valid reports whether the audit found nothing wrong.
func (r *AuditReport) Valid() bool { return r.Result == Valid }

// JSON returns the report as indented JSON.
func (r *AuditReport) JSON() []byte { return marshalReport(r) }

// Summary returns the report for humans.
func (r *AuditReport) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "log %s", orUnknown(r.Origin))
	if r.TreeSize != nil {
		fmt.Fprintf(&b, " at size %d", *r.TreeSize)
	}
	fmt.Fprintf(&b, ": %s\n", r.Result)
	if r.ResumedFrom != nil {
		fmt.Fprintf(&b, "  resumed from size %d; ", *r.ResumedFrom)
	} else {
		b.WriteString("  ")
	}
	fmt.Fprintf(&b, "%s audited in this run (%s, %s, %s in the log",
		count(r.EntriesAudited, "entry", "entries"), count(r.Counts.Projections, "projection", "projections"),
		count(r.Counts.Compactions, "compaction", "compactions"), count(r.Counts.Tombstones, "tombstone", "tombstones"))
	if r.Counts.Unparsed > 0 {
		fmt.Fprintf(&b, ", %s", count(r.Counts.Unparsed, "entry that is not a receipt", "entries that are not receipts"))
	}
	b.WriteString(")\n")
	summarizeChecks(&b, r.Checks)
	if len(r.FindingCounts) > 0 {
		codes := make([]string, 0, len(r.FindingCounts))
		for c := range r.FindingCounts {
			codes = append(codes, string(c))
		}
		sort.Strings(codes)
		b.WriteString("  findings:")
		for _, c := range codes {
			fmt.Fprintf(&b, " %s×%d", c, r.FindingCounts[receipts.Code(c)])
		}
		b.WriteByte('\n')
		for i, f := range r.Findings {
			if i == 20 {
				fmt.Fprintf(&b, "    … %d more in the JSON report\n", len(r.Findings)-20)
				break
			}
			at := "log"
			if f.Index != nil {
				at = fmt.Sprintf("entry %d", *f.Index)
			}
			fmt.Fprintf(&b, "    %s: %s: %s\n", at, f.Code, f.Detail)
		}
	}
	if len(r.Obligations) > 0 {
		fmt.Fprintf(&b, "  open obligations (grace %s): %d\n", time.Duration(r.GraceSec)*time.Second, len(r.Obligations))
		for i, o := range r.Obligations {
			if i == 20 {
				fmt.Fprintf(&b, "    … %d more in the JSON report\n", len(r.Obligations)-20)
				break
			}
			fmt.Fprintf(&b, "    %s\n", describeObligation(o))
		}
	}
	if r.Fork != nil {
		fmt.Fprintf(&b, "  evidence (%s, conclusive %v):\n    saved:\n%s    now:\n%s", r.Fork.Kind, r.Fork.Conclusive,
			indent(r.Fork.Older, "      "), indent(r.Fork.Newer, "      "))
	}
	return b.String()
}

// AuditLog audits a whole log: it opens the log's checkpoint under the
// tlog-policy; with a saved state, checks that the checkpoint is
// consistent with the saved one (a fork or rollback is reported with both
// checkpoints as evidence, and nothing more is read); reads every entry
// the checkpoint covers that the state does not, through the tiles, and
// recomputes the tree root from the leaves; re-verifies every receipt
// (strict parse, canonical leaf, signature under the key valid at the
// receipt's own time, and for compactions the manifest rules); applies the
// lineage rules in log order, judging revoked keys at the time the log had
// certainly reached when it logged each entry; and lists the open erasure obligations,
// which are violations once older than the grace period.
//
// Receipts are parsed and verified on opts.Workers goroutines; the tree
// and the lineage are applied in order on one.
//
// It returns the report and, when the audit completed with the entries
// hashing to the checkpoint's root, the state to resume from next time
// (findings included). The error is non-nil only for I/O failures and
// caller mistakes; everything found wrong with the log is in the report.
func AuditLog(ctx context.Context, src LogSource, opts AuditOptions) (*AuditReport, *AuditState, error) {
	if opts.Policy == nil || opts.Trust == nil || opts.At.IsZero() {
		return nil, nil, errors.New("verifier: AuditOptions needs a Policy, a Trust and a time")
	}
	rep := &AuditReport{Kind: "log", AuditTime: receipts.FormatTimestamp(opts.At), GraceSec: int64(opts.Grace / time.Second),
		FindingCounts: map[receipts.Code]uint64{}, Findings: []Finding{}, Obligations: []Obligation{}}
	var l checklist
	finish := func() { rep.Checks = l; rep.Result = l.result() }
	stop := func(why string, names ...string) {
		for _, n := range names {
			l.notRun(n, 0, why)
		}
		finish()
	}

	raw, err := src.ReadCheckpoint(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("verifier: couldn't read the log's checkpoint: %w", err)
	}
	cp, err := OpenCheckpoint(opts.Policy, raw)
	if err != nil {
		_, code := checkpointCode(err)
		l.fail(CheckCheckpoint, 0, code, "", err.Error())
		rep.Checkpoint = string(raw)
		stop("the checkpoint did not open", CheckSavedState, CheckTreeRoot, CheckReceipts, CheckLineage, CheckObligations)
		return rep, nil, nil
	}
	rep.Origin, rep.TreeSize, rep.RootHash, rep.Checkpoint = cp.Origin, &cp.Size, b64(cp.Hash[:]), string(cp.Raw)
	l.pass(CheckCheckpoint, 0, fmt.Sprintf("signed by %s, quorum %q met by %s", cp.LogKey, opts.Policy.Quorum(), cosignerList(cp.Cosignatures)))

	a := &auditor{src: src, opts: opts, cp: cp, g: newLineage(), skew: opts.Trust.Freshness.MaxClockSkew,
		counts: map[receipts.Code]uint64{}, persistCounts: map[receipts.Code]uint64{}}
	a.workers = opts.Workers
	if a.workers <= 0 {
		a.workers = runtime.GOMAXPROCS(0)
	}
	rf := compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	a.rng = rf.NewEmptyRange(0)
	var from uint64
	trustDigest := TrustDigest(opts.Trust)
	if s := opts.State; s != nil {
		if s.Origin != cp.Origin {
			return nil, nil, fmt.Errorf("verifier: the saved state is of log %q, not %q", s.Origin, cp.Origin)
		}
		old := &Checkpoint{Origin: s.Origin, Size: s.TreeSize, Raw: s.Checkpoint}
		copy(old.Hash[:], s.RootHash)
		var proof [][]byte
		if old.Size > 0 && cp.Size > old.Size {
			if proof, err = src.ConsistencyProof(ctx, old.Size, cp.Size); err != nil {
				return nil, nil, fmt.Errorf("verifier: couldn't get a consistency proof from size %d to %d: %w", old.Size, cp.Size, err)
			}
		}
		err := CheckConsistency(old, cp, proof)
		var fe *ForkError
		switch {
		case errors.As(err, &fe):
			rep.Fork = forkEvidence(fe)
			code := forkCode(fe)
			l.fail(CheckSavedState, 0, code, "", fe.Error())
			rep.FindingCounts[code]++
			rep.Findings = append(rep.Findings, Finding{Code: code, Check: CheckSavedState, Detail: fe.Error(),
				Evidence: &Evidence{ExpectedRoot: b64(old.Hash[:]), ComputedRoot: b64(cp.Hash[:])}})
			stop("the log's checkpoint is not a later state of the saved one", CheckTreeRoot, CheckReceipts, CheckLineage, CheckObligations)
			return rep, nil, nil
		case err != nil:
			l.fail(CheckSavedState, 0, CodeProofMalformed, "", "the log's consistency proof is malformed: "+err.Error())
			stop("no valid consistency proof", CheckTreeRoot, CheckReceipts, CheckLineage, CheckObligations)
			return rep, nil, nil
		}
		if s.TrustDigest == trustDigest {
			if err := a.resume(s); err != nil {
				return nil, nil, err
			}
			from = s.TreeSize
			rep.ResumedFrom = u64(s.TreeSize)
			l.pass(CheckSavedState, 0, fmt.Sprintf("size %d extends the saved size %d; resuming there", cp.Size, s.TreeSize))
		} else {
			l.pass(CheckSavedState, 0, fmt.Sprintf("size %d extends the saved size %d; the trust file changed since, so every entry is audited again", cp.Size, s.TreeSize))
		}
	} else {
		l.skip(CheckSavedState, 0, "no saved state: every entry is audited")
	}

	start, err := rf.NewRange(a.rng.Begin(), a.rng.End(), append([][]byte(nil), a.rng.Hashes()...))
	if err != nil {
		return nil, nil, fmt.Errorf("verifier: %w", err)
	}
	if err := a.crawl(ctx, from, cp.Size); err != nil {
		return nil, nil, err
	}
	rep.EntriesAudited = a.audited

	treeOK := false
	switch {
	case a.bundleFinding != nil:
		a.add(*a.bundleFinding)
		l.fail(CheckTreeRoot, 0, a.bundleFinding.Code, "", a.bundleFinding.Detail)
	default:
		root := rootOf(a.rng)
		if !bytes.Equal(root, cp.Hash[:]) {
			f := Finding{Code: CodeTreeRootMismatch, Check: CheckTreeRoot,
				Detail:   fmt.Sprintf("the %d entries hash to a root that is not the checkpoint's", cp.Size),
				Evidence: &Evidence{ExpectedRoot: b64(cp.Hash[:]), ComputedRoot: b64(root)}}
			a.localize(ctx, start, from, &f)
			a.add(f)
			l.fail(CheckTreeRoot, 0, f.Code, "", f.Detail)
		} else {
			treeOK = true
			l.pass(CheckTreeRoot, 0, count(cp.Size, "leaf hashes", "leaves hash")+" to the checkpoint's root")
		}
	}
	for _, f := range a.receiptFindings {
		a.add(f)
	}
	for _, f := range a.lineageFindings {
		a.add(f)
	}
	crawled := a.bundleFinding == nil
	for _, c := range []struct {
		name   string
		detail string
	}{{CheckReceipts, count(a.audited, "receipt", "receipts") + " verified in this run"}, {CheckLineage, "lineage rules hold in log order"}} {
		if f := a.first(c.name); f != nil {
			l.fail(c.name, 0, f.Code, f.Member, f.Detail)
		} else if crawled {
			l.pass(c.name, 0, c.detail)
		} else {
			l.notRun(c.name, 0, "the log could not be read to the end")
		}
	}
	if crawled {
		obligations, overdue := a.g.obligations(opts.At, opts.Grace)
		rep.Obligations = obligations
		for _, f := range overdue {
			a.add(f)
		}
		if f := a.first(CheckObligations); f != nil {
			l.fail(CheckObligations, 0, f.Code, "", f.Detail)
		} else {
			l.pass(CheckObligations, 0, count(len(obligations), "open obligation", "open obligations")+", none older than the grace period")
		}
	} else {
		l.notRun(CheckObligations, 0, "the log could not be read to the end")
	}
	rep.Counts = a.g.counts
	rep.FindingCounts = a.counts
	rep.Findings, rep.FindingsTruncated = a.sortedFindings()
	finish()

	if !treeOK {
		return rep, nil, nil
	}
	state := a.state(trustDigest)
	return rep, state, nil
}

// auditor carries one run of AuditLog.
type auditor struct {
	src     LogSource
	opts    AuditOptions
	cp      *Checkpoint
	workers int
	g       *lineage
	skew    time.Duration
	rng     *compact.Range

	audited         uint64
	receiptFindings []Finding
	lineageFindings []Finding
	bundleFinding   *Finding

	counts        map[receipts.Code]uint64 // every finding, by code
	persistCounts map[receipts.Code]uint64 // receipt and lineage findings, which a state keeps
	findings      []Finding
}

func (a *auditor) add(f Finding) {
	a.counts[f.Code]++
	if f.Check == CheckReceipts || f.Check == CheckLineage {
		a.persistCounts[f.Code]++
	}
	a.findings = append(a.findings, f)
}

// first returns the first finding of check, by index.
func (a *auditor) first(check string) *Finding {
	var best *Finding
	for i := range a.findings {
		f := &a.findings[i]
		if f.Check == check && (best == nil || f.Index != nil && (best.Index == nil || *f.Index < *best.Index)) {
			best = f
		}
	}
	return best
}

var checkOrder = map[string]int{CheckSavedState: 0, CheckTreeRoot: 1, CheckReceipts: 2, CheckLineage: 3, CheckObligations: 4}

// sortedFindings sorts the findings in check and index order and returns
// at most MaxReportedFindings of them, always including each check's first
// (see keep), and whether any were left out.
func (a *auditor) sortedFindings() ([]Finding, bool) {
	fs := a.findings
	sort.SliceStable(fs, func(i, j int) bool {
		if checkOrder[fs[i].Check] != checkOrder[fs[j].Check] {
			return checkOrder[fs[i].Check] < checkOrder[fs[j].Check]
		}
		switch {
		case fs[i].Index == nil || fs[j].Index == nil:
			return fs[i].Index == nil && fs[j].Index != nil
		}
		return *fs[i].Index < *fs[j].Index
	})
	kept := a.keep(MaxReportedFindings, func(string) bool { return true })
	return kept, len(kept) < len(a.findings)
}

// keep returns at most limit of the findings of the checks in, in the
// order a.findings has, always including the first finding of each such
// check (by index, as first chooses it): a check's outcome is derived from
// its first finding, so a report or a state that lists a check's findings
// only in part must still list that one.
func (a *auditor) keep(limit int, in func(check string) bool) []Finding {
	firsts := map[*Finding]bool{}
	for c := range checkOrder {
		if in(c) {
			if f := a.first(c); f != nil {
				firsts[f] = true
			}
		}
	}
	room := limit - len(firsts)
	out := []Finding{}
	for i := range a.findings {
		f := &a.findings[i]
		switch {
		case !in(f.Check):
		case firsts[f]:
			out = append(out, *f)
		case room > 0:
			out = append(out, *f)
			room--
		}
	}
	return out
}

// auditBatch is the entries of one bundle, verified by a worker and then
// applied in order.
type auditBatch struct {
	first   uint64
	entries [][]byte
	results []entryResult
	err     error    // an I/O failure
	finding *Finding // the bundle itself is missing or malformed
	done    chan struct{}
}

// fetchWorkers is how many entry bundles are read ahead in parallel.
const fetchWorkers = 8

func (a *auditor) crawl(ctx context.Context, from, size uint64) error {
	if from >= size {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	total := size - from
	work := make(chan *auditBatch, a.workers*2)
	ordered := make(chan *auditBatch, a.workers*8)
	var wg sync.WaitGroup
	for range a.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				a.verifyBatch(ctx, b)
				close(b.done)
			}
		}()
	}
	go func() {
		defer close(work)
		defer close(ordered)
		sizeFn := func(context.Context) (uint64, error) { return size, nil }
		for bundle, err := range client.EntryBundles(ctx, fetchWorkers, sizeFn, a.src.ReadEntryBundle, from, total) {
			b := &auditBatch{done: make(chan struct{})}
			ri := bundle.RangeInfo
			switch {
			case err != nil && errors.Is(err, fs.ErrNotExist):
				b.finding = bundleFinding(ri.Index, "is missing: "+err.Error())
			case err != nil:
				b.err = fmt.Errorf("verifier: couldn't read an entry bundle: %w", err)
			default:
				var eb api.EntryBundle
				want := layout.EntryBundleWidth
				if ri.Partial > 0 {
					want = int(ri.Partial)
				}
				if err := eb.UnmarshalText(bundle.Data); err != nil {
					b.finding = bundleFinding(ri.Index, "is malformed: "+err.Error())
				} else if n := len(eb.Entries); n != want && !(ri.Partial > 0 && n == layout.EntryBundleWidth) {
					b.finding = bundleFinding(ri.Index, fmt.Sprintf("holds %d entries, want %d", n, want))
				} else {
					b.first = ri.Index*layout.EntryBundleWidth + uint64(ri.First)
					b.entries = eb.Entries[ri.First : ri.First+ri.N]
				}
			}
			if b.err != nil || b.finding != nil {
				close(b.done)
				select {
				case ordered <- b:
				case <-ctx.Done():
				}
				return
			}
			select {
			case ordered <- b:
			case <-ctx.Done():
				return
			}
			select {
			case work <- b:
			case <-ctx.Done():
				close(b.done)
				return
			}
		}
	}()

	var failure error
	lastProgress := time.Time{}
	for b := range ordered {
		if failure != nil || a.bundleFinding != nil {
			continue // drain
		}
		select {
		case <-b.done:
		case <-ctx.Done():
			failure = ctx.Err()
			cancel()
			continue
		}
		if b.err != nil {
			failure = b.err
			cancel()
			continue
		}
		if b.finding != nil {
			a.bundleFinding = b.finding
			cancel()
			continue
		}
		if err := ctx.Err(); err != nil {
			failure = err
			continue
		}
		for i := range b.results {
			e := &b.results[i]
			if err := a.rng.Append(e.leafHash, nil); err != nil {
				failure = fmt.Errorf("verifier: %w", err)
				cancel()
				break
			}
			a.receiptFindings = append(a.receiptFindings, e.findings...)
			a.lineageFindings = append(a.lineageFindings, a.g.apply(e, a.skew)...)
			a.audited++
		}
		if a.opts.Progress != nil && (time.Since(lastProgress) > 100*time.Millisecond || a.audited == total) {
			lastProgress = time.Now()
			a.opts.Progress(a.audited, total)
		}
	}
	wg.Wait()
	if failure != nil && a.bundleFinding == nil {
		return failure
	}
	return nil
}

func bundleFinding(index uint64, what string) *Finding {
	return &Finding{Code: CodeEntryBundleInvalid, Check: CheckTreeRoot,
		Detail: fmt.Sprintf("entry bundle %d, which the checkpoint covers, %s", index, what), Evidence: &Evidence{Bundle: u64(index)}}
}

func (a *auditor) verifyBatch(ctx context.Context, b *auditBatch) {
	b.results = make([]entryResult, len(b.entries))
	for i, leaf := range b.entries {
		if ctx.Err() != nil {
			b.err = ctx.Err()
			return
		}
		if err := a.verifyEntry(ctx, b.first+uint64(i), leaf, &b.results[i]); err != nil {
			b.err = err
			return
		}
	}
}

// verifyEntry verifies one logged receipt on its own: everything but the
// lineage rules, which need the log's order. The error is an I/O failure.
func (a *auditor) verifyEntry(ctx context.Context, index uint64, leaf []byte, e *entryResult) error {
	e.index = index
	e.leafHash = rfc6962.DefaultHasher.HashLeaf(leaf)
	finding := func(err error, fallback receipts.Code, ev *Evidence) {
		f := Finding{Code: fallback, Check: CheckReceipts, Index: u64(index), Kind: string(e.kind), ID: e.id, Detail: err.Error()}
		var re *receipts.Error
		if errors.As(err, &re) {
			f.Code, f.Member, f.Detail = re.Code, re.Member, re.Reason
			if re.Err != nil {
				f.Detail = strings.TrimPrefix(f.Detail+": "+re.Err.Error(), ": ")
			}
		}
		if ev == nil {
			ev = &Evidence{}
		}
		ev.LeafHash = b64(e.leafHash)
		f.Evidence = ev
		e.findings = append(e.findings, f)
	}
	r, err := receipts.ParseReceipt(leaf)
	if err != nil {
		finding(err, receipts.CodeRecordInvalid, nil)
		return nil
	}
	e.kind, e.id, e.idHash = r.Kind(), strings.Clone(r.ID()), hashID(r.ID())
	if !bytes.Equal(leaf, r.Canonical()) {
		finding(&receipts.Error{Code: CodeLeafNotCanonical, Reason: "the entry is not the JCS encoding of the receipt it holds"}, CodeLeafNotCanonical, nil)
	}
	t := a.opts.Trust
	switch r := r.(type) {
	case *receipts.ProjectionRecord:
		// Judged at created_at: the key valid then and not revoked then.
		// created_at is the signer's word, so the lineage stage also
		// judges the revocation at the time the log had certainly reached
		// (see lineage.apply).
		pin, err := receipts.FindAdapterPin(t.Adapters, r.Adapter.ID, r.Adapter.KeyID)
		if err == nil {
			err = receipts.VerifyProjectionWithPin(r, pin, r.CreatedAt)
		}
		if err != nil {
			finding(err, receipts.CodeSignatureInvalid, nil)
			return nil
		}
		e.at, e.pin = r.CreatedAt, pin
	case *receipts.Tombstone:
		// Judged at purged_at, and in the lineage stage at the log's
		// floor, as projections are.
		if err := t.VerifyTombstone(r, r.PurgedTime()); err != nil {
			finding(err, receipts.CodeSignatureInvalid, &Evidence{KID: r.Signature.KID})
			return nil
		}
		e.at, e.key = r.PurgedTime(), t.Issuers[r.Signature.KID]
		e.item, e.purgedAt = receipts.DigestBytes(r.ItemDigest), r.PurgedAt
	case *receipts.Compaction:
		k, ok := t.Compactors[r.Signature.KID]
		if !ok {
			finding(t.NotPinnedError(receipts.RoleCompactor, r.Signature.KID),
				receipts.CodeKeyNotPinned, &Evidence{KID: r.Signature.KID})
			return nil
		}
		if err := r.VerifySignatureWithKey(k.PublicKey); err != nil {
			finding(err, receipts.CodeSignatureInvalid, &Evidence{KID: r.Signature.KID})
			return nil
		}
		e.key = k
		e.root = strings.Clone(r.SourceItemsMerkleRoot)
		e.supersedes = strings.Clone(r.Supersedes)
		e.output = receipts.DigestBytes(r.CompactedOutputHash)
		bloom, err := receipts.ParseBloomFilter(r.TombstoneBloomFilterB64)
		if err != nil {
			finding(err, receipts.CodeBloomFilterInvalid, nil)
		}
		e.bloom = bloom
		raw, err := a.src.ReadManifest(ctx, r.SourceItemsMerkleRoot)
		if errors.Is(err, fs.ErrNotExist) {
			finding(&receipts.Error{Code: CodeManifestMissing, Member: "source_items_merkle_root", Reason: "the log has no manifest for root " + r.SourceItemsMerkleRoot},
				CodeManifestMissing, &Evidence{ManifestRoot: e.root})
			e.verified = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("verifier: couldn't read manifest %s: %w", r.SourceItemsMerkleRoot, err)
		}
		mf, err := receipts.ParseManifest(raw)
		if err == nil {
			err = mf.CheckAgainst(r, t.Lattice)
		}
		if err != nil {
			finding(err, receipts.CodeManifestInvalid, &Evidence{ManifestRoot: e.root})
		} else {
			e.items = make([]digest, len(mf.Items))
			for i := range mf.Items {
				e.items[i] = receipts.DigestBytes(mf.Items[i].ItemDigest)
			}
		}
	}
	e.verified = true
	return nil
}

// localize looks for the entry behind a root mismatch: if the log's own
// level-0 hash tiles reproduce the checkpoint's root, the first entry
// whose leaf hash differs from its tile's is the altered one. It reads the
// entries again, a bundle at a time, so that a normal audit keeps no leaf
// hashes.
func (a *auditor) localize(ctx context.Context, start *compact.Range, from uint64, f *Finding) {
	size := a.cp.Size
	rf := compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	r, err := rf.NewRange(start.Begin(), start.End(), append([][]byte(nil), start.Hashes()...))
	if err != nil {
		return
	}
	var culprit *uint64
	var got, want []byte
	for ri := range layout.Range(from, size-from, size) {
		first := ri.Index*layout.EntryBundleWidth + uint64(ri.First)
		committed, err := client.FetchLeafHashes(ctx, a.src.ReadTile, first, uint64(ri.N), size)
		if err != nil {
			f.Detail += "; the log's hash tiles could not be read to locate the entry: " + err.Error()
			return
		}
		for _, h := range committed {
			if err := r.Append(h, nil); err != nil {
				return
			}
		}
		if culprit != nil {
			continue
		}
		raw, err := a.src.ReadEntryBundle(ctx, ri.Index, ri.Partial)
		var eb api.EntryBundle
		if err != nil || eb.UnmarshalText(raw) != nil || len(eb.Entries) < int(ri.First+ri.N) {
			return
		}
		for i, h := range committed {
			if lh := rfc6962.DefaultHasher.HashLeaf(eb.Entries[int(ri.First)+i]); !bytes.Equal(lh, h) {
				culprit, got, want = u64(first+uint64(i)), lh, h
				break
			}
		}
	}
	if !bytes.Equal(rootOf(r), a.cp.Hash[:]) {
		f.Detail += "; the log's hash tiles do not reproduce the checkpoint's root either"
		return
	}
	if culprit != nil {
		f.Index = culprit
		f.Detail = fmt.Sprintf("entry %d is not the entry the checkpoint commits to: its leaf hash differs from the one in the log's hash tile, which reproduces the checkpoint's root", *culprit)
		f.Evidence.LeafHash = b64(got)
		f.Evidence.CommittedLeafHash = b64(want)
	}
}

// count says "1 entry" or "n entries".
func count[N int | uint64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
