package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/memtrail/memtrail/api"
	"github.com/memtrail/memtrail/internal/tlogfmt"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
	"github.com/memtrail/memtrail/verifier/backend"
	tapi "github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/api/layout"
)

const proofSynopsisLine = "memtrail proof --log URL (--index N | --projection ID | --compaction ID | --tombstone ID) [--size N | --wait[=DURATION]] [--policy TLOG_POLICY] [-o FILE]"

const proofUsage = `Usage: ` + proofSynopsisLine + `

Fetch the C2SP tlog-proof of one log entry, named by its index or by the
id of its projection record, compaction or tombstone: its index, inclusion
path and the signed checkpoint (with witness cosignatures) it is proved
against — by default the latest published checkpoint, or the one of size N
(the log archives the checkpoints it publishes, so N must be a size it
published a checkpoint at; GET /v1/log gives the latest). The proof is
written to standard output or FILE; "memtrail verify proof" checks it
offline.

An entry is logged at once but proved only once a published checkpoint
covers it (within the log's --checkpoint-interval, or longer while its
witnesses are slow): until then the log answers not_published. --wait asks
again until the proof is there, backing off from 250ms to 5s between
requests, for at most DURATION (default 2m; --wait=10m waits longer). On a
terminal it shows how long it has waited on standard error.

--policy TLOG_POLICY judges the proof here, under that C2SP tlog-policy
(the log's DATA/log.policy, or an auditor's own), as "memtrail verify
proof" does: the log's signature on the checkpoint, the witness quorum and
the inclusion path of the entry, read from the log's entry bundle (an
entry named by its id must be the receipt with that id). A log run with
--witness-fail-open may prove an entry against a checkpoint published
without its witness quorum: such a proof is written all the same, the
command says it lacks the quorum and exits 3, and with --wait it asks
again until a proof meets the quorum (the log publishes the same tree
again once its witnesses cosign it). A proof that fails otherwise is not
written.

The command exits 0 if it wrote a proof (that verifies under --policy,
when given), 1 if it could not (the log could not be reached, or has no
such entry or published checkpoint) or the proof fails --policy otherwise
than by its quorum, 3 if the entry is logged but no published checkpoint
covered it within --wait, or the proof lacks the witness quorum of
--policy (ask again later), and 2 on a usage error.

Example:

	$ memtrail submit --log http://127.0.0.1:8080 p.json
	p.json: logged projection urn:uuid:6f1c… at index 0
	$ memtrail proof --log http://127.0.0.1:8080 --projection urn:uuid:6f1c… --wait -o p.tlog-proof
	$ memtrail proof --log http://127.0.0.1:8080 --index 0 --policy memtrail-data/log.policy -o p.tlog-proof
`

func init() {
	register(&command{name: "proof", synopsis: "fetch the tlog-proof of a log entry", run: runProof})
}

// defaultProofWait is how long "proof --wait" waits when given no
// duration.
const defaultProofWait = 2 * time.Minute

// waitFlag is a boolean flag that may carry a duration: --wait, or
// --wait=10m.
type waitFlag struct {
	on  bool
	d   time.Duration
	def time.Duration
}

func (f *waitFlag) IsBoolFlag() bool { return true }

func (f *waitFlag) String() string {
	if f == nil || !f.on {
		return ""
	}
	return f.d.String()
}

func (f *waitFlag) Set(s string) error {
	switch s {
	case "true":
		f.on, f.d = true, f.def
		return nil
	case "false":
		f.on = false
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return errors.New("not a positive duration such as 30s or 10m")
	}
	f.on, f.d = true, d
	return nil
}

func runProof(args []string) error {
	fs := newFlagSet("proof", proofUsage)
	logFlag := fs.String("log", "", "log URL")
	indexFlag := fs.Int64("index", -1, "entry index")
	projFlag := fs.String("projection", "", "projection_id")
	compFlag := fs.String("compaction", "", "compaction_event_id")
	tombFlag := fs.String("tombstone", "", "tombstone_id")
	sizeFlag := fs.Uint64("size", 0, "prove against the published checkpoint of this size")
	waitF := &waitFlag{def: defaultProofWait}
	fs.Var(waitF, "wait", "until a published checkpoint covers the entry, ask again for up to this long (--wait: 2m; --wait=10m)")
	outFlag := fs.String("o", "", "write the proof to this file")
	policyFlag := fs.String("policy", "", "C2SP tlog-policy to verify the proof under (the log's DATA/log.policy, or an auditor's); exit 3 if it lacks the witness quorum")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	n := 0
	for _, set := range []bool{*indexFlag >= 0, *projFlag != "", *compFlag != "", *tombFlag != ""} {
		if set {
			n++
		}
	}
	switch {
	case *logFlag == "":
		return missingFlag(proofSynopsisLine, "--log URL", "the log's base URL, such as http://127.0.0.1:8080")
	case n == 0:
		return missingFlag(proofSynopsisLine, "--index N, --projection ID, --compaction ID or --tombstone ID", "name the entry to prove")
	case n > 1:
		return synopsisUsage(proofSynopsisLine, "give exactly one of --index, --projection, --compaction and --tombstone")
	case len(pos) != 0:
		return synopsisUsage(proofSynopsisLine, fmt.Sprintf("unexpected argument %q: the entry is named by a flag", pos[0]))
	case waitF.on && *sizeFlag > 0:
		return synopsisUsage(proofSynopsisLine, "give --size or --wait, not both: --size names a checkpoint the log has already published")
	}
	logURL, err := parseLogURL(*logFlag)
	if err != nil {
		return err
	}
	var policy *verifier.Policy
	if *policyFlag != "" {
		if policy, err = readPolicyFlag(*policyFlag); err != nil {
			return err
		}
	}
	base := logURL.String()
	client := &http.Client{Timeout: time.Minute}
	index := *indexFlag
	var kind receipts.Kind // of the entry named by its id
	var id string
	if index < 0 {
		path := "projections"
		kind, id = receipts.KindProjection, *projFlag
		switch {
		case *compFlag != "":
			path, kind, id = "compactions", receipts.KindCompaction, *compFlag
		case *tombFlag != "":
			path, kind, id = "tombstones", receipts.KindTombstone, *tombFlag
		}
		var e api.Entry
		if err := getJSON(client, base+"/v1/"+path+"/"+url.PathEscape(id), &e); err != nil {
			return err
		}
		index = int64(e.Index)
	}
	u := base + "/v1/proof/" + strconv.FormatInt(index, 10)
	if *sizeFlag > 0 {
		u += "?size=" + strconv.FormatUint(*sizeFlag, 10)
	}
	var judge func(proof []byte) (*verifier.ProofReport, error)
	if policy != nil {
		pj := &proofJudge{client: client, base: base, policy: policy, index: uint64(index), kind: kind, id: id}
		judge = pj.judge
	}
	var wait time.Duration
	if waitF.on {
		wait = waitF.d
	}
	body, rep, err := fetchProof(client, u, index, wait, judge)
	var lr *logRefusal
	if errors.As(err, &lr) && lr.status == http.StatusNotFound && *sizeFlag > 0 {
		// The log's refusal says which sizes it has.
		return withHint(err, "use the size of a checkpoint the log published, or omit --size to prove against the latest")
	}
	if errors.As(err, &lr) && lr.Code == "not_published" {
		return withHint(err, "the entry is logged; its proof comes with the next published checkpoint: add --wait to ask until it is there")
	}
	if err != nil {
		return err
	}
	quorumLacking := false
	if rep != nil && !rep.Valid() {
		c := failedCheck(rep.Checks)
		if c.Check != verifier.CheckWitnessQuorum {
			return withHint(fmt.Errorf("the log's proof of entry %d does not verify under %s: %s %s: %s", index, *policyFlag, c.Check, c.Code, escapeControl(c.Detail)),
				"the proof was not written; \"memtrail verify proof\" with the receipt shows every check")
		}
		quorumLacking = true
	}
	if *outFlag != "" {
		err = os.WriteFile(*outFlag, body, 0o644)
	} else {
		_, err = os.Stdout.Write(body)
	}
	if err != nil {
		return err
	}
	if quorumLacking {
		c := failedCheck(rep.Checks)
		fmt.Fprintf(os.Stderr, "memtrail: the proof of entry %d lacks the witness quorum of %s (%s), and clients requiring that policy refuse it\n", index, *policyFlag, escapeControl(c.Detail))
		if waitF.on {
			fmt.Fprintf(os.Stderr, "memtrail: no published checkpoint that meets the quorum covered it within %s (the log's witnesses may be slow or down)\n", waitF.d)
		}
		fmt.Fprintf(os.Stderr, "memtrail: hint: the entry is logged; fetch a witnessed proof once the witnesses have cosigned a checkpoint: add --wait, or ask again later\n")
		return exitError{3}
	}
	return nil
}

// readPolicyFlag reads the C2SP tlog-policy of a --policy flag.
func readPolicyFlag(path string) (*verifier.Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("couldn't read the policy: %w", err)
	}
	p, err := verifier.ParsePolicy(b)
	if err != nil {
		return nil, withHint(fmt.Errorf("%s: %w", path, err), "--policy takes a C2SP tlog-policy, such as the log's DATA/log.policy")
	}
	return p, nil
}

// proofJudge verifies the proofs of one entry under a policy, with the
// entry read from the log's entry bundle (once: entries never change).
type proofJudge struct {
	client *http.Client
	base   string
	policy *verifier.Policy
	index  uint64
	kind   receipts.Kind // when the entry was named by its id, its kind and id
	id     string
	entry  []byte
}

// judge verifies proof. An error is one of the log's answers that cannot
// be judged: an entry bundle it cannot serve, or an entry that is not the
// receipt named.
func (j *proofJudge) judge(proof []byte) (*verifier.ProofReport, error) {
	if j.entry == nil {
		if err := j.readEntry(proof); err != nil {
			return nil, err
		}
	}
	rep := verifier.VerifyReceiptProof(j.policy, proof, j.entry)
	if j.id != "" && (rep.ReceiptKind != string(j.kind) || rep.ReceiptID != j.id) {
		return nil, fmt.Errorf("the log's entry %d is the %s %s, not the %s %s it named", j.index, orUnknownKind(rep.ReceiptKind), escapeControl(rep.ReceiptID), j.kind, escapeControl(j.id))
	}
	return rep, nil
}

func orUnknownKind(k string) string {
	if k == "" {
		return "unparsable entry"
	}
	return k
}

// readEntry reads the entry at j.index from its entry bundle: the partial
// bundle of the proof's tree size, or the full one that replaced it.
func (j *proofJudge) readEntry(proof []byte) error {
	ip, err := verifier.ParseProof(proof)
	if err != nil {
		return fmt.Errorf("the log's proof of entry %d is not a c2sp.org/tlog-proof@v1 proof", j.index)
	}
	text, _, _ := strings.Cut(string(ip.Checkpoint), "\n\n")
	c, ok := tlogfmt.ParseCheckpoint(text + "\n")
	if !ok || ip.Index >= c.Size || ip.Index != j.index {
		return fmt.Errorf("the log's proof of entry %d is not of that entry in its checkpoint", j.index)
	}
	src, err := backend.NewHTTP(j.base, j.client)
	if err != nil {
		return err
	}
	bundle := j.index / layout.EntryBundleWidth
	var p uint8
	if bundle == c.Size/layout.EntryBundleWidth {
		p = uint8(c.Size % layout.EntryBundleWidth)
	}
	raw, err := src.ReadEntryBundle(context.Background(), bundle, p)
	if err != nil {
		return withHint(fmt.Errorf("couldn't read entry %d from the log to verify its proof: %w", j.index, err), "check --log")
	}
	var eb tapi.EntryBundle
	if err := eb.UnmarshalText(raw); err != nil || uint64(len(eb.Entries)) <= j.index%layout.EntryBundleWidth {
		return fmt.Errorf("the log's entry bundle %d does not hold entry %d", bundle, j.index)
	}
	j.entry = eb.Entries[j.index%layout.EntryBundleWidth]
	return nil
}

// fetchProof gets the proof at u. With wait > 0 it asks again while the
// log answers not_published, and, with judge, while the proof lacks the
// witness quorum, for at most wait, backing off from 250ms to 5s between
// requests. It returns the proof and, with judge, its report; a proof that
// fails otherwise than by its quorum is returned at once. Waiting in vain
// for any proof is exit status 3; for a proof with the quorum, the last
// proof is returned with its report.
func fetchProof(client *http.Client, u string, index int64, wait time.Duration, judge func([]byte) (*verifier.ProofReport, error)) ([]byte, *verifier.ProofReport, error) {
	if wait <= 0 {
		body, err := get(client, u)
		if err != nil || judge == nil {
			return body, nil, err
		}
		rep, err := judge(body)
		return body, rep, err
	}
	deadline := time.Now().Add(wait)
	var lacking bool // a proof was served, without the quorum
	t := startTicker(func(elapsed time.Duration) string {
		if lacking {
			return fmt.Sprintf("waiting for a checkpoint that meets the witness quorum to cover entry %d (%s of %s)", index, elapsed, wait)
		}
		return fmt.Sprintf("waiting for a published checkpoint to cover entry %d (%s of %s)", index, elapsed, wait)
	})
	defer t.end()
	delay := 250 * time.Millisecond
	for {
		body, err := get(client, u)
		left := time.Until(deadline)
		var lr *logRefusal
		switch {
		case errors.As(err, &lr) && lr.Code == "not_published":
		case err != nil:
			return nil, nil, err
		case judge == nil:
			return body, nil, nil
		default:
			rep, err := judge(body)
			if err != nil || rep.Valid() || failedCheck(rep.Checks).Check != verifier.CheckWitnessQuorum {
				return body, rep, err
			}
			lacking = true
			if left <= 0 {
				t.end()
				return body, rep, nil
			}
		}
		if left <= 0 {
			t.end()
			fmt.Fprintf(os.Stderr, "memtrail: entry %d is logged, but no published checkpoint covered it within %s (the log's witnesses may be slow or down)\n", index, wait)
			fmt.Fprintf(os.Stderr, "memtrail: hint: ask again later, or with a longer --wait=DURATION\n")
			return nil, nil, exitError{3}
		}
		time.Sleep(min(delay, left))
		delay = min(2*delay, 5*time.Second)
	}
}

func get(client *http.Client, u string) ([]byte, error) {
	resp, err := client.Get(u)
	if err != nil {
		return nil, withHint(fmt.Errorf("couldn't reach the log: %w", err), "check --log")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		r := &logRefusal{status: resp.StatusCode}
		if json.Unmarshal(body, &r.Refusal) != nil || r.Code == "" {
			r.Refusal = api.Refusal{Code: resp.Status, Detail: fmt.Sprintf("%.200s", body)}
		}
		return nil, r
	}
	return body, nil
}

// logRefusal is a log's answer other than 200 OK.
type logRefusal struct {
	status int
	api.Refusal
}

// Error is the log's code and detail, with what could drive a terminal
// escaped: a log need not be honest.
func (r *logRefusal) Error() string { return escapeControl(r.Code + ": " + r.Detail) }

func getJSON(client *http.Client, u string, v any) error {
	body, err := get(client, u)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}
