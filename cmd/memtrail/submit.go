package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memtrail/memtrail/api"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
)

const submitSynopsis = "memtrail submit --log URL [--wait] [--proof-dir DIR] [--policy TLOG_POLICY] [--json] FILE..."

const submitUsage = `Usage: ` + submitSynopsis + `

Submit receipts to a memtrail log. Each FILE holds one submission: a
projection record, a tombstone, or a compaction as {"eccr": ..., "manifest":
...} (what "memtrail sign" writes); the kind is detected. One file goes to its
kind's endpoint; several go as NDJSON batches of up to 5,000.

--wait waits until a published checkpoint covers each entry and gets its
proof; --proof-dir DIR (which implies --wait) writes each proof to
DIR/<file name>.tlog-proof, ready for "memtrail verify proof", and says
where on a line of its own. The log waits up to a minute for a checkpoint
(its witnesses may be slow or down); an entry it logged without a proof is
reported with "no proof yet", and the command says how to fetch the proof
later with "memtrail proof --wait".

A log run with --witness-fail-open may prove an entry against a checkpoint
published without its witness quorum, which clients requiring its policy
refuse: the log says so in its answer, and the entry is reported with
"proof without the witness quorum" and how to fetch a witnessed proof
later ("memtrail proof --policy TLOG_POLICY --wait"). --policy TLOG_POLICY
(which implies --wait) judges each proof here instead, under that C2SP
tlog-policy (the log's DATA/log.policy, or an auditor's own): the leaf hash
of the file's receipt, the log's signature, the witness quorum and the
inclusion path, as "memtrail verify proof" does.

Flags may come before or after the FILE arguments; "--" ends the flags.

One line per file reports where it was logged or why it was refused (--json
writes the server's answers as JSON lines instead, with "sent": true). A
file that cannot be read, is empty or is not a JSON receipt is checked here
and not sent: its line says "not sent" with the reason (with --json,
"sent": false, a code and a detail, and no HTTP status), whether it is
submitted alone or with others, and the other files are still sent. When
standard error is a terminal it shows progress there: the files sent, and
how long the log has been waiting for a checkpoint; otherwise it shows none.

The command exits 0 if every file was logged (with a proof that meets the
witness quorum, when --wait, --proof-dir or --policy asked for one), 1 if
any was refused or could not be sent, or a proof failed --policy otherwise
than by its quorum, 3 if every file was logged but some proof asked for did
not arrive in time or lacks the witness quorum (the entries are logged: do
not submit them again, fetch their proofs later), and 2 on a usage error.

Example:

	$ memtrail submit --log http://127.0.0.1:8080 --proof-dir proofs p.json t.json
	p.json: logged projection urn:uuid:6f1c… at index 0
	p.json: proof written to proofs/p.json.tlog-proof
	t.json: logged tombstone urn:uuid:9a2e… at index 1
	t.json: proof written to proofs/t.json.tlog-proof
`

func init() {
	register(&command{name: "submit", synopsis: "submit receipts to a log", run: runSubmit})
}

// batchChunk is the most lines sent in one /v1/batch request.
const batchChunk = 5000

func runSubmit(args []string) error {
	fs := newFlagSet("submit", submitUsage)
	logFlag := fs.String("log", "", "log URL, e.g. http://127.0.0.1:8080")
	waitFlag := fs.Bool("wait", false, "wait for each entry's proof")
	proofDirFlag := fs.String("proof-dir", "", "write each entry's tlog-proof to this directory (implies --wait)")
	jsonFlag := fs.Bool("json", false, "write the server's answers as JSON lines")
	timeoutFlag := fs.Duration("timeout", 5*time.Minute, "give up on a request after this long")
	policyFlag := fs.String("policy", "", "C2SP tlog-policy to verify each proof under (the log's DATA/log.policy, or an auditor's); implies --wait")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *logFlag == "":
		return missingFlag(submitSynopsis, "--log URL", "the log's base URL, such as http://127.0.0.1:8080")
	case len(files) == 0:
		return synopsisUsage(submitSynopsis, "no FILE to submit", "name one or more files that \"memtrail sign\" wrote")
	}
	base, err := parseLogURL(*logFlag)
	if err != nil {
		return err
	}
	wait := *waitFlag || *proofDirFlag != "" || *policyFlag != ""
	var policy *verifier.Policy
	if *policyFlag != "" {
		if policy, err = readPolicyFlag(*policyFlag); err != nil {
			return err
		}
	}
	if *proofDirFlag != "" {
		if err := os.MkdirAll(*proofDirFlag, 0o755); err != nil {
			return err
		}
	}
	client := &http.Client{Timeout: *timeoutFlag}
	results := make([]api.BatchResult, len(files))
	notSent := make([]*api.Refusal, len(files)) // why a file was not sent
	var send []int                              // the files to send
	var bodies [][]byte
	var endpoints []string
	bodyOf := make([][]byte, len(files))
	for i, f := range files {
		body, ep, refusal := readSubmission(f)
		if refusal != nil {
			notSent[i] = refusal
			continue
		}
		bodyOf[i] = body
		send = append(send, i)
		bodies = append(bodies, body)
		endpoints = append(endpoints, ep)
	}
	progress := newProgress(len(send))
	if len(send) == 1 {
		wt := progress.waiting(wait, 1)
		res, err := submitOne(client, base, endpoints[0], bodies[0], wait)
		wt.end()
		if err != nil {
			return err
		}
		results[send[0]] = res
		progress.add(1)
	} else {
		for start := 0; start < len(send); start += batchChunk {
			end := min(start+batchChunk, len(send))
			wt := progress.waiting(wait, end-start)
			res, err := submitBatch(client, base, bodies[start:end], wait)
			wt.end()
			if err != nil {
				return err
			}
			for k, r := range res {
				results[send[start+k]] = r
			}
			progress.add(end - start)
		}
	}
	progress.done()
	failed := 0
	var noProof []string  // "memtrail proof" commands for entries logged without a proof
	var noQuorum []string // the same, for entries whose proof lacks the witness quorum
	var badProof []string // files whose proof does not verify under --policy
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for i, res := range results {
		if res.Accepted == nil {
			failed++
		}
		if r := notSent[i]; r != nil {
			if *jsonFlag {
				b, _ := json.Marshal(struct {
					File string `json:"file"`
					Line int    `json:"line"`
					Sent bool   `json:"sent"`
					*api.Refusal
				}{files[i], i + 1, false, r})
				out.Write(append(b, '\n'))
			} else {
				fmt.Fprintf(out, "%s: not sent (%s): %s\n", files[i], r.Code, r.Detail)
			}
			continue
		}
		// A proof is judged under --policy, when given, before it is
		// reported; without it, the log's word on its quorum is what
		// there is.
		proofInvalid := ""
		if res.Accepted != nil && res.Proof != "" && policy != nil {
			rep := verifier.VerifyReceiptProof(policy, []byte(res.Proof), bodyOf[i])
			switch c := failedCheck(rep.Checks); {
			case rep.Valid():
				res.ProofWithoutQuorum = ""
			case c.Check == verifier.CheckWitnessQuorum:
				res.ProofWithoutQuorum = "its checkpoint lacks the witness quorum of " + *policyFlag
			default:
				proofInvalid = fmt.Sprintf("%s %s: %s", c.Check, c.Code, c.Detail)
			}
		}
		if *jsonFlag {
			res.Line = i + 1
			b, _ := json.Marshal(struct {
				File string `json:"file"`
				Sent bool   `json:"sent"`
				api.BatchResult
				ProofInvalid string `json:"proof_invalid,omitempty"`
			}{files[i], true, res, proofInvalid})
			out.Write(append(b, '\n'))
		} else if res.Accepted != nil {
			fmt.Fprintf(out, "%s: logged %s %s at index %d\n", files[i], res.Kind, res.ID, res.Index)
		} else {
			// The log's detail starts with the code, already given.
			detail := strings.TrimPrefix(res.Detail, res.Code+": ")
			fmt.Fprintf(out, "%s: refused (%d %s): %s\n", files[i], res.Status, escapeControl(res.Code), escapeControl(detail))
		}
		if res.Accepted != nil && wait && res.Proof == "" {
			fetch := fmt.Sprintf("memtrail proof --log %s --index %d --wait", base, res.Index)
			if *proofDirFlag != "" {
				fetch += " -o " + filepath.Join(*proofDirFlag, filepath.Base(files[i])+".tlog-proof")
			}
			noProof = append(noProof, fetch)
			if !*jsonFlag {
				why := res.ProofPending
				if why == "" {
					why = "the log answered without one"
				}
				fmt.Fprintf(out, "%s: no proof yet: %s\n", files[i], why)
			}
		}
		if proofInvalid != "" {
			badProof = append(badProof, files[i])
			if !*jsonFlag {
				fmt.Fprintf(out, "%s: the proof does not verify under %s: %s\n", files[i], *policyFlag, proofInvalid)
			}
		} else if res.Accepted != nil && res.Proof != "" && res.ProofWithoutQuorum != "" {
			// "proof --wait" alone would take the proof without the
			// quorum again: --policy makes it wait for a witnessed one.
			pol := *policyFlag
			if pol == "" {
				pol = "TLOG_POLICY"
			}
			fetch := fmt.Sprintf("memtrail proof --log %s --index %d --policy %s --wait", base, res.Index, pol)
			if *proofDirFlag != "" {
				fetch += " -o " + filepath.Join(*proofDirFlag, filepath.Base(files[i])+".tlog-proof")
			}
			noQuorum = append(noQuorum, fetch)
			if !*jsonFlag {
				fmt.Fprintf(out, "%s: proof without the witness quorum: %s\n", files[i], res.ProofWithoutQuorum)
			}
		}
		if res.Accepted != nil && *proofDirFlag != "" && res.Proof != "" {
			p := filepath.Join(*proofDirFlag, filepath.Base(files[i])+".tlog-proof")
			if err := os.WriteFile(p, []byte(res.Proof), 0o644); err != nil {
				return err
			}
			if !*jsonFlag {
				fmt.Fprintf(out, "%s: proof written to %s\n", files[i], p)
			}
		}
	}
	out.Flush()
	if len(noProof) > 0 {
		fmt.Fprintf(os.Stderr, "memtrail: %s logged but %s no proof yet; do not submit %s again, fetch %s later with:\n",
			ofN(len(noProof), len(files), "entry was", "entries were"), plural(len(noProof), "has", "have"), plural(len(noProof), "it", "them"), plural(len(noProof), "its proof", "their proofs"))
		for _, c := range noProof {
			fmt.Fprintf(os.Stderr, "\t%s\n", c)
		}
	}
	if len(noQuorum) > 0 {
		n := len(noQuorum)
		fmt.Fprintf(os.Stderr, "memtrail: %s logged but %s the witness quorum, and clients requiring the policy refuse %s; do not submit %s again, fetch %s once the witnesses have cosigned a later checkpoint:\n",
			ofN(n, len(files), "entry was", "entries were"), plural(n, "its proof lacks", "their proofs lack"), plural(n, "it", "them"), plural(n, "it", "them"), plural(n, "a witnessed proof", "witnessed proofs"))
		for _, c := range noQuorum {
			fmt.Fprintf(os.Stderr, "\t%s\n", c)
		}
		if *policyFlag == "" {
			fmt.Fprintf(os.Stderr, "memtrail: hint: TLOG_POLICY is the policy the proofs must meet: the log's DATA/log.policy, or your own\n")
		}
	}
	if len(badProof) > 0 {
		fmt.Fprintf(os.Stderr, "memtrail: the log's proofs of %s do not verify under %s\n", strings.Join(badProof, ", "), *policyFlag)
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "memtrail: %s not logged\n", ofN(failed, len(files), "submission was", "submissions were"))
	}
	if failed > 0 || len(badProof) > 0 {
		return exitError{1}
	}
	if len(noProof) > 0 || len(noQuorum) > 0 {
		return exitError{3}
	}
	return nil
}

// failedCheck returns the first failed check (the zero Check if none).
func failedCheck(checks []verifier.Check) verifier.Check {
	for _, c := range checks {
		if c.Outcome == verifier.Failed {
			return c
		}
	}
	return verifier.Check{}
}

// readSubmission reads a file to submit and picks its endpoint by the
// receipt's kind, parsed locally. A file that cannot be read or is not a
// receipt is not sent: the refusal says why, with the code the log would
// give (record_invalid) or file_unreadable.
func readSubmission(path string) (body []byte, endpoint string, refusal *api.Refusal) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, "", &api.Refusal{Code: "file_unreadable", Detail: "couldn't read it: " + err.Error()}
	}
	body = bytes.TrimSpace(b)
	if len(body) == 0 {
		return nil, "", &api.Refusal{Code: string(receipts.CodeRecordInvalid), Detail: "the file is empty"}
	}
	ep, err := endpointFor(body)
	if err != nil {
		return nil, "", &api.Refusal{Code: string(receipts.CodeRecordInvalid), Detail: err.Error()}
	}
	return body, ep, nil
}

// endpointFor picks the endpoint by the receipt's kind, parsed locally.
func endpointFor(body []byte) (string, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(body, &probe); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return "", fmt.Errorf("not valid JSON: byte %d: %s", se.Offset, strings.TrimPrefix(err.Error(), "json: "))
		case errors.As(err, &te):
			return "", errors.New("not a JSON object")
		}
		return "", fmt.Errorf("not a JSON object: %w", err)
	}
	switch {
	case probe["eccr"] != nil:
		return "/v1/compactions", nil
	case probe["tombstone_version"] != nil:
		return "/v1/tombstones", nil
	case probe["@version"] != nil:
		return "/v1/projections", nil
	case probe["eccr_version"] != nil:
		return "", errors.New(`a compaction is submitted with its manifest as {"eccr": ..., "manifest": ...}; "memtrail sign compaction" writes that form`)
	}
	return "", errors.New("not a receipt: no @version, tombstone_version or eccr member")
}

func submitOne(client *http.Client, base *url.URL, ep string, body []byte, wait bool) (api.BatchResult, error) {
	u := base.String() + ep
	if wait {
		u += "?wait=proof"
	}
	resp, err := client.Post(u, "application/json", bytes.NewReader(body))
	if err != nil {
		return api.BatchResult{}, withHint(fmt.Errorf("couldn't reach the log: %w", err), "is \"memtrail serve\" running at "+base.String()+"?")
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return api.BatchResult{}, fmt.Errorf("couldn't read the answer: %w", err)
	}
	res := api.BatchResult{Status: resp.StatusCode}
	if resp.StatusCode == http.StatusCreated {
		res.Accepted = &api.Accepted{}
		err = json.Unmarshal(raw, res.Accepted)
	} else {
		res.Refusal = &api.Refusal{}
		err = json.Unmarshal(raw, res.Refusal)
	}
	if err != nil {
		return api.BatchResult{}, fmt.Errorf("unexpected answer (%s): %.200s", resp.Status, raw)
	}
	return res, nil
}

func submitBatch(client *http.Client, base *url.URL, bodies [][]byte, wait bool) ([]api.BatchResult, error) {
	var buf bytes.Buffer
	for _, b := range bodies {
		if bytes.IndexByte(b, '\n') >= 0 {
			// NDJSON needs one line per submission: re-encode compactly.
			var c bytes.Buffer
			if err := json.Compact(&c, b); err == nil {
				b = c.Bytes()
			}
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	u := base.String() + "/v1/batch"
	if wait {
		u += "?wait=proof"
	}
	resp, err := client.Post(u, "application/x-ndjson", &buf)
	if err != nil {
		return nil, withHint(fmt.Errorf("couldn't reach the log: %w", err), "is \"memtrail serve\" running at "+base.String()+"?")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, fmt.Errorf("batch refused (%s): %.300s", resp.Status, raw)
	}
	out := make([]api.BatchResult, 0, len(bodies))
	dec := json.NewDecoder(resp.Body)
	for len(out) < len(bodies) {
		var r api.BatchResult
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("batch answer ended after %d of %d results: %w", len(out), len(bodies), err)
		}
		out = append(out, r)
	}
	return out, nil
}

// progress reports on a terminal how many of n items are done, and how
// long the log has been waiting for a checkpoint to cover them.
type progress struct {
	n, done_ int
	tty      bool
}

func newProgress(n int) *progress {
	return &progress{n: n, tty: stderrIsTerminal()}
}

// waiting shows, while a request for k entries is answered, how long it
// has taken: with wait, the log answers once a published checkpoint covers
// them, which takes up to a minute when its witnesses are slow or down.
func (p *progress) waiting(wait bool, k int) *ticker {
	if !wait {
		return noTicker()
	}
	return startTicker(func(elapsed time.Duration) string {
		prefix := ""
		if p.n > 1 {
			prefix = fmt.Sprintf("%d/%d sent; ", p.done_, p.n)
		}
		return fmt.Sprintf("%swaiting for a published checkpoint to cover %s (%s; the log waits up to a minute)", prefix, plural(k, "1 entry", fmt.Sprintf("%d entries", k)), elapsed)
	})
}

func (p *progress) add(k int) {
	p.done_ += k
	if p.tty && p.n > 1 {
		fmt.Fprintf(os.Stderr, "\r\033[K%d/%d", p.done_, p.n)
	}
}

func (p *progress) done() {
	if p.tty && p.n > 1 {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
}
