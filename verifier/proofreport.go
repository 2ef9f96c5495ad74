package verifier

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/memtrail/memtrail/receipts"
)

// Names of the checks of proof and consistency reports.
const (
	CheckReceipt        = "receipt"
	CheckProofFormat    = "proof_format"
	CheckLogSignature   = "log_signature"
	CheckWitnessQuorum  = "witness_quorum"
	CheckInclusion      = "inclusion"
	CheckOldCheckpoint  = "old_checkpoint"
	CheckNewCheckpoint  = "new_checkpoint"
	CheckConsistencyRun = "consistency"
)

// ProofReport is the outcome of [VerifyReceiptProof].
type ProofReport struct {
	Kind        string   `json:"kind"` // "proof"
	Result      string   `json:"result"`
	ReceiptKind string   `json:"receipt_kind,omitempty"`
	ReceiptID   string   `json:"receipt_id,omitempty"`
	LeafHash    string   `json:"leaf_hash,omitempty"` // standard base64, as in tlog-proof
	Index       *uint64  `json:"index,omitempty"`
	Origin      string   `json:"origin,omitempty"`
	TreeSize    *uint64  `json:"tree_size,omitempty"`
	RootHash    string   `json:"root_hash,omitempty"`
	Witnesses   []string `json:"witnesses,omitempty"`
	Checks      []Check  `json:"checks"`
}

// Valid reports whether the proof verified.
func (r *ProofReport) Valid() bool { return r.Result == Valid }

// JSON returns the report as indented JSON.
func (r *ProofReport) JSON() []byte { return marshalReport(r) }

// Summary returns the report for humans.
func (r *ProofReport) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "proof of %s %s: %s\n", orUnknown(r.ReceiptKind), orUnknown(r.ReceiptID), r.Result)
	if r.Index != nil && r.TreeSize != nil {
		fmt.Fprintf(&b, "  entry %d of %s at size %d\n", *r.Index, r.Origin, *r.TreeSize)
	}
	summarizeChecks(&b, r.Checks)
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

// checkpointCode maps an OpenCheckpoint failure to its code.
func checkpointCode(err error) (check string, code receipts.Code) {
	switch {
	case errors.Is(err, ErrQuorum):
		return CheckWitnessQuorum, CodeWitnessQuorum
	case errors.Is(err, ErrMalformed):
		return CheckLogSignature, CodeProofMalformed
	}
	return CheckLogSignature, CodeCheckpointInvalid
}

// VerifyReceiptProof checks a C2SP tlog-proof for a receipt under a
// tlog-policy: the leaf is the receipt's canonical bytes (JCS of the full
// signed receipt, which a compaction submission's "eccr" member also
// gives), so the leaf hash is recomputed from the receipt; then the proof's
// format, the log's signature on the checkpoint for its origin, the
// witness quorum, and the inclusion path.
//
// The receipt's own signature is not judged here (that needs a trust file:
// see [VerifyProjection], [VerifyCompaction] and [AuditLog]); the proof
// shows that the log holds exactly these bytes.
func VerifyReceiptProof(p *Policy, tlogProof, receipt []byte) *ProofReport {
	rep := &ProofReport{Kind: "proof"}
	var l checklist
	defer func() { rep.Checks = l; rep.Result = l.result() }()
	notRun := func(why string, names ...string) {
		for _, n := range names {
			l.notRun(n, 0, why)
		}
	}
	leaf, kind, id, err := receiptLeaf(receipt)
	if err != nil {
		l.failErr(CheckReceipt, 0, err, receipts.CodeRecordInvalid)
		notRun("no receipt to prove", CheckProofFormat, CheckLogSignature, CheckWitnessQuorum, CheckInclusion)
		return rep
	}
	leafHash := LeafHash(leaf)
	rep.ReceiptKind, rep.ReceiptID, rep.LeafHash = string(kind), id, base64.StdEncoding.EncodeToString(leafHash)
	l.pass(CheckReceipt, 0, fmt.Sprintf("%d-byte leaf", len(leaf)))

	ip, err := ParseProof(tlogProof)
	if err != nil {
		l.fail(CheckProofFormat, 0, CodeProofMalformed, "", "not a c2sp.org/tlog-proof@v1 proof")
		notRun("the proof did not parse", CheckLogSignature, CheckWitnessQuorum, CheckInclusion)
		return rep
	}
	rep.Index = &ip.Index
	l.pass(CheckProofFormat, 0, fmt.Sprintf("index %d, %d path hashes", ip.Index, len(ip.Path)))
	c, err := OpenCheckpoint(p, ip.Checkpoint)
	if err != nil {
		check, code := checkpointCode(err)
		if check == CheckWitnessQuorum {
			l.pass(CheckLogSignature, 0, "")
		}
		l.fail(check, 0, code, "checkpoint", err.Error())
		if check == CheckLogSignature {
			l.notRun(CheckWitnessQuorum, 0, "the checkpoint did not open")
		}
		l.notRun(CheckInclusion, 0, "the checkpoint did not open")
		return rep
	}
	recordCheckpoint(&rep.Origin, &rep.TreeSize, &rep.RootHash, &rep.Witnesses, c)
	l.pass(CheckLogSignature, 0, fmt.Sprintf("signed by %s", c.LogKey))
	l.pass(CheckWitnessQuorum, 0, fmt.Sprintf("quorum %q met by %s", p.Quorum(), cosignerList(c.Cosignatures)))
	if err := VerifyInclusion(ip.Index, c.Size, leafHash, ip.Path, c.Hash[:]); err != nil {
		l.fail(CheckInclusion, 0, CodeInclusionInvalid, "", err.Error())
		return rep
	}
	l.pass(CheckInclusion, 0, fmt.Sprintf("entry %d of %d", ip.Index, c.Size))
	return rep
}

func recordCheckpoint(origin *string, size **uint64, root *string, witnesses *[]string, c *Checkpoint) {
	*origin = c.Origin
	s := c.Size
	*size = &s
	*root = base64.StdEncoding.EncodeToString(c.Hash[:])
	for _, cs := range c.Cosignatures {
		*witnesses = append(*witnesses, cs.Witness)
	}
}

// receiptLeaf parses a receipt — a projection record, an ECCR, a
// tombstone, or a compaction submission {"eccr": …, "manifest": …} — and
// returns its log leaf.
func receiptLeaf(b []byte) ([]byte, receipts.Kind, string, error) {
	if jd, v, err := parseStrictJSON("receipt", b); err == nil && v.Kind() == receipts.JSONObject {
		if e := get(v, "eccr"); e != nil && e.Kind() == receipts.JSONObject {
			raw, _ := jd.MemberBytes("eccr")
			c, err := receipts.ParseCompaction(raw)
			if err != nil {
				return nil, "", "", err
			}
			return c.Canonical(), c.Kind(), c.ID(), nil
		}
	}
	r, err := receipts.ParseReceipt(b)
	if err != nil {
		return nil, "", "", err
	}
	if len(r.Canonical()) > receipts.MaxLeafSize {
		return nil, "", "", &receipts.Error{Code: receipts.CodeTooLarge, Reason: "a log entry is at most 65,535 bytes"}
	}
	return r.Canonical(), r.Kind(), r.ID(), nil
}

// ConsistencyReport is the outcome of [VerifyCheckpoints].
type ConsistencyReport struct {
	Kind    string  `json:"kind"` // "consistency"
	Result  string  `json:"result"`
	Origin  string  `json:"origin,omitempty"`
	OldSize *uint64 `json:"old_size,omitempty"`
	NewSize *uint64 `json:"new_size,omitempty"`
	// Fork is the evidence when the two checkpoints cannot both be true.
	Fork   *ForkEvidence `json:"fork,omitempty"`
	Checks []Check       `json:"checks"`
}

// ForkEvidence is a fork or rollback as a report carries it: both signed
// checkpoints verbatim, and the consistency proof if one was checked.
type ForkEvidence struct {
	Kind       ForkKind `json:"kind"`
	Conclusive bool     `json:"conclusive"` // the two checkpoints alone prove it
	Older      string   `json:"older_checkpoint"`
	Newer      string   `json:"newer_checkpoint"`
	Proof      []string `json:"proof,omitempty"` // standard base64 hashes
}

func forkEvidence(fe *ForkError) *ForkEvidence {
	ev := &ForkEvidence{Kind: fe.Kind, Conclusive: fe.Conclusive(), Older: string(fe.Older), Newer: string(fe.Newer)}
	for _, h := range fe.Proof {
		ev.Proof = append(ev.Proof, base64.StdEncoding.EncodeToString(h))
	}
	return ev
}

func forkCode(fe *ForkError) receipts.Code {
	if fe.Kind == ForkRollback {
		return CodeLogRollback
	}
	return CodeLogFork
}

// Valid reports whether the checkpoints are consistent.
func (r *ConsistencyReport) Valid() bool { return r.Result == Valid }

// JSON returns the report as indented JSON.
func (r *ConsistencyReport) JSON() []byte { return marshalReport(r) }

// Summary returns the report for humans.
func (r *ConsistencyReport) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "consistency of %s", orUnknown(r.Origin))
	if r.OldSize != nil && r.NewSize != nil {
		fmt.Fprintf(&b, " from size %d to %d", *r.OldSize, *r.NewSize)
	}
	fmt.Fprintf(&b, ": %s\n", r.Result)
	summarizeChecks(&b, r.Checks)
	if r.Fork != nil {
		fmt.Fprintf(&b, "  evidence (%s, conclusive %v):\n    older:\n%s    newer:\n%s", r.Fork.Kind, r.Fork.Conclusive,
			indent(r.Fork.Older, "      "), indent(r.Fork.Newer, "      "))
	}
	return b.String()
}

func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	if !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
	return b.String()
}

// VerifyCheckpoints opens two checkpoints of one log under a tlog-policy
// and checks that the newer extends the older with the consistency proof
// (empty when the sizes are equal or the older tree is empty). When they
// cannot both be true, the report's result is log_fork or log_rollback and
// its Fork member carries both signed checkpoints as evidence.
func VerifyCheckpoints(p *Policy, older, newer []byte, proof [][]byte) *ConsistencyReport {
	rep := &ConsistencyReport{Kind: "consistency"}
	var l checklist
	defer func() { rep.Checks = l; rep.Result = l.result() }()
	open := func(name string, b []byte) *Checkpoint {
		c, err := OpenCheckpoint(p, b)
		if err != nil {
			_, code := checkpointCode(err)
			l.fail(name, 0, code, "", err.Error())
			return nil
		}
		l.pass(name, 0, fmt.Sprintf("%s at size %d, quorum %q met", c.Origin, c.Size, p.Quorum()))
		return c
	}
	oc := open(CheckOldCheckpoint, older)
	nc := open(CheckNewCheckpoint, newer)
	if oc == nil || nc == nil {
		l.notRun(CheckConsistencyRun, 0, "a checkpoint did not open")
		return rep
	}
	rep.Origin = oc.Origin
	rep.OldSize, rep.NewSize = &oc.Size, &nc.Size
	if oc.Origin != nc.Origin {
		l.fail(CheckConsistencyRun, 0, CodeCheckpointInvalid, "", fmt.Sprintf("the checkpoints are of two logs, %q and %q", oc.Origin, nc.Origin))
		return rep
	}
	err := CheckConsistency(oc, nc, proof)
	var fe *ForkError
	switch {
	case errors.As(err, &fe):
		rep.Fork = forkEvidence(fe)
		l.fail(CheckConsistencyRun, 0, forkCode(fe), "", fe.Error())
	case err != nil:
		l.fail(CheckConsistencyRun, 0, CodeProofMalformed, "", err.Error())
	default:
		l.pass(CheckConsistencyRun, 0, fmt.Sprintf("size %d extends size %d", nc.Size, oc.Size))
	}
	return rep
}
