package verifier

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/memtrail/memtrail/receipts"
)

// Valid is the result of a report in which every check that ran passed.
const Valid = "VALID"

// Codes this package adds to the closed codes of package receipts, for
// what only a verifier of logs and proofs meets. docs/verify.md lists every
// code a report can carry with the rule that produces it.
const (
	// CodeProofMalformed: a tlog-proof, checkpoint or consistency proof
	// is not in its format.
	CodeProofMalformed receipts.Code = "proof_malformed"
	// CodeCheckpointInvalid: a checkpoint carries no valid signature from
	// a log of the tlog-policy, or a signature from a key of the policy
	// does not verify.
	CodeCheckpointInvalid receipts.Code = "checkpoint_invalid"
	// CodeWitnessQuorum: the valid witness cosignatures on a checkpoint do
	// not meet the policy's quorum.
	CodeWitnessQuorum receipts.Code = "witness_quorum_not_met"
	// CodeInclusionInvalid: an inclusion proof does not lead from the
	// receipt's leaf to the checkpoint's root.
	CodeInclusionInvalid receipts.Code = "inclusion_proof_invalid"
	// CodeLogFork: two checkpoints of one log cannot both be true (same
	// size and different roots, or a consistency proof that fails).
	CodeLogFork receipts.Code = "log_fork"
	// CodeLogRollback: a checkpoint is smaller than one the same log
	// showed before.
	CodeLogRollback receipts.Code = "log_rollback"
	// CodeTreeRootMismatch: the log's entries do not hash to the root of
	// its checkpoint.
	CodeTreeRootMismatch receipts.Code = "tree_root_mismatch"
	// CodeEntryBundleInvalid: an entry bundle the checkpoint covers is
	// missing, malformed or holds the wrong number of entries.
	CodeEntryBundleInvalid receipts.Code = "entry_bundle_invalid"
	// CodeLeafNotCanonical: a logged entry is not the JCS encoding of the
	// receipt it holds.
	CodeLeafNotCanonical receipts.Code = "leaf_not_canonical"
	// CodeManifestMissing: the source manifest of a logged compaction is
	// not available from the log.
	CodeManifestMissing receipts.Code = "manifest_missing"
	// CodeObligationOverdue: an item was tombstoned and a compaction that
	// included it is still not superseded, longer than the grace period
	// after purged_at.
	CodeObligationOverdue receipts.Code = "obligation_overdue"
	// CodeSingleUseUnproven: a log answered a single-use registration
	// (the id is logged as this record, or as another) without an
	// inclusion proof of that record's leaf, at the index it named, in a
	// checkpoint of the tlog-policy.
	CodeSingleUseUnproven receipts.Code = "single_use_unproven"
)

// An Outcome is what became of one check.
type Outcome string

const (
	// Passed: the check ran and held.
	Passed Outcome = "passed"
	// Failed: the check ran and did not hold; the check names the code.
	Failed Outcome = "failed"
	// Skipped: the check needs material, policy or a registry that was
	// not supplied, so it did not run.
	Skipped Outcome = "skipped"
	// NotRun: the check could not run because an earlier one failed (the
	// record did not parse, the key was unusable), or must not run after
	// a failure (a refused record never uses up its id in a registry).
	NotRun Outcome = "not_run"
)

// A Check is one step of a verification and its outcome. Failed checks
// carry the closed code, the failing member when there is one, and a
// sentence for humans; other outcomes may carry a detail.
type Check struct {
	Check   string        `json:"check"`
	Step    int           `json:"draft_step,omitempty"` // the step of §7 of the projection draft, for projection checks
	Outcome Outcome       `json:"outcome"`
	Code    receipts.Code `json:"code,omitempty"`
	Member  string        `json:"member,omitempty"`
	Detail  string        `json:"detail,omitempty"`
}

// checklist accumulates the checks of one verification in their order,
// which is the order of precedence of their codes.
type checklist []Check

func (l *checklist) add(c Check) { *l = append(*l, c) }

func (l *checklist) pass(name string, step int, detail string) {
	l.add(Check{Check: name, Step: step, Outcome: Passed, Detail: detail})
}

func (l *checklist) skip(name string, step int, why string) {
	l.add(Check{Check: name, Step: step, Outcome: Skipped, Detail: why})
}

func (l *checklist) notRun(name string, step int, why string) {
	l.add(Check{Check: name, Step: step, Outcome: NotRun, Detail: why})
}

func (l *checklist) fail(name string, step int, code receipts.Code, member, detail string) {
	l.add(Check{Check: name, Step: step, Outcome: Failed, Code: code, Member: member, Detail: detail})
}

// failErr records a failure from a refusal error, taking its code, member
// and reason; errors without a code get the fallback code.
func (l *checklist) failErr(name string, step int, err error, fallback receipts.Code) {
	var e *receipts.Error
	if errors.As(err, &e) {
		detail := e.Reason
		if e.Err != nil {
			if detail != "" {
				detail += ": "
			}
			detail += e.Err.Error()
		}
		l.fail(name, step, e.Code, e.Member, detail)
		return
	}
	l.fail(name, step, fallback, "", err.Error())
}

// check records the outcome of err: passed when nil, failed otherwise.
func (l *checklist) check(name string, step int, err error, fallback receipts.Code, detail string) bool {
	if err != nil {
		l.failErr(name, step, err, fallback)
		return false
	}
	l.pass(name, step, detail)
	return true
}

// failed reports whether any check failed.
func (l checklist) failed() bool {
	for _, c := range l {
		if c.Outcome == Failed {
			return true
		}
	}
	return false
}

// result is the code of the first failed check, or Valid.
func (l checklist) result() string {
	for _, c := range l {
		if c.Outcome == Failed {
			return string(c.Code)
		}
	}
	return Valid
}

// count returns how many checks had outcome o.
func (l checklist) count(o Outcome) int {
	n := 0
	for _, c := range l {
		if c.Outcome == o {
			n++
		}
	}
	return n
}

// marshalReport encodes a report as indented JSON with a final newline.
// Reports hold only strings, numbers, booleans and slices, so encoding
// cannot fail.
func marshalReport(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("verifier: report does not encode: %v", err))
	}
	return append(b, '\n')
}

// summarizeChecks writes one line per check, failed ones first marked.
func summarizeChecks(b *strings.Builder, checks []Check) {
	for _, c := range checks {
		mark := map[Outcome]string{Passed: "ok  ", Failed: "FAIL", Skipped: "skip", NotRun: "----"}[c.Outcome]
		fmt.Fprintf(b, "  %s %s", mark, c.Check)
		switch {
		case c.Outcome == Failed:
			fmt.Fprintf(b, ": %s", c.Code)
			if c.Member != "" {
				fmt.Fprintf(b, " at %s", c.Member)
			}
			if c.Detail != "" {
				fmt.Fprintf(b, " (%s)", c.Detail)
			}
		case c.Detail != "":
			fmt.Fprintf(b, " (%s)", c.Detail)
		}
		b.WriteByte('\n')
	}
}
