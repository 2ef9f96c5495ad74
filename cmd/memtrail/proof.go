package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"encoding/json"

	"github.com/memtrail/memtrail/api"
)

const proofSynopsisLine = "memtrail proof --log URL (--index N | --projection ID | --compaction ID | --tombstone ID) [--size N | --wait[=DURATION]] [-o FILE]"

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

The command exits 0 if it wrote a proof, 1 if it could not (the log could
not be reached, or has no such entry or published checkpoint), 3 if the
entry is logged but no published checkpoint covered it within --wait (ask
again later), and 2 on a usage error.

Example:

	$ memtrail submit --log http://127.0.0.1:8080 p.json
	p.json: logged projection urn:uuid:6f1c… at index 0
	$ memtrail proof --log http://127.0.0.1:8080 --projection urn:uuid:6f1c… --wait -o p.tlog-proof
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
	base := logURL.String()
	client := &http.Client{Timeout: time.Minute}
	index := *indexFlag
	if index < 0 {
		kind, id := "projections", *projFlag
		switch {
		case *compFlag != "":
			kind, id = "compactions", *compFlag
		case *tombFlag != "":
			kind, id = "tombstones", *tombFlag
		}
		var e api.Entry
		if err := getJSON(client, base+"/v1/"+kind+"/"+url.PathEscape(id), &e); err != nil {
			return err
		}
		index = int64(e.Index)
	}
	u := base + "/v1/proof/" + strconv.FormatInt(index, 10)
	if *sizeFlag > 0 {
		u += "?size=" + strconv.FormatUint(*sizeFlag, 10)
	}
	var body []byte
	if waitF.on {
		body, err = waitForProof(client, u, index, waitF.d)
	} else {
		body, err = get(client, u)
	}
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
	if *outFlag != "" {
		return os.WriteFile(*outFlag, body, 0o644)
	}
	_, err = os.Stdout.Write(body)
	return err
}

// waitForProof asks u for the proof of entry index until a published
// checkpoint covers it (the log answers not_published until then), for at
// most d. It backs off from 250ms to 5s between requests.
func waitForProof(client *http.Client, u string, index int64, d time.Duration) ([]byte, error) {
	deadline := time.Now().Add(d)
	t := startTicker(func(elapsed time.Duration) string {
		return fmt.Sprintf("waiting for a published checkpoint to cover entry %d (%s of %s)", index, elapsed, d)
	})
	defer t.end()
	delay := 250 * time.Millisecond
	for {
		body, err := get(client, u)
		var lr *logRefusal
		if !errors.As(err, &lr) || lr.Code != "not_published" {
			return body, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			t.end()
			fmt.Fprintf(os.Stderr, "memtrail: entry %d is logged, but no published checkpoint covered it within %s (the log's witnesses may be slow or down)\n", index, d)
			fmt.Fprintf(os.Stderr, "memtrail: hint: ask again later, or with a longer --wait=DURATION\n")
			return nil, exitError{3}
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
