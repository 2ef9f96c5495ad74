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

const proofUsage = `Usage: memtrail proof --log URL (--index N | --projection ID | --compaction ID | --tombstone ID) [--size N] [-o FILE]

Fetch the C2SP tlog-proof of one log entry, named by its index or by the
id of its projection record, compaction or tombstone: its index, inclusion
path and the signed checkpoint (with witness cosignatures) it is proved
against — by default the latest published checkpoint, or the one of size N
(the log archives the checkpoints it publishes, so N must be a size it
published a checkpoint at; GET /v1/log gives the latest). The proof is
written to standard output or FILE; "memtrail verify proof" checks it
offline.

The command exits 0 if it wrote a proof, 1 if it could not (the log could
not be reached, or has no such entry or published checkpoint), and 2 on a
usage error.

Example:

	$ memtrail proof --log http://127.0.0.1:8080 --projection urn:uuid:6f1c… -o p.tlog-proof
`

func init() {
	register(&command{name: "proof", synopsis: "fetch the tlog-proof of a log entry", run: runProof})
}

func runProof(args []string) error {
	fs := newFlagSet("proof", proofUsage)
	logFlag := fs.String("log", "", "log URL")
	indexFlag := fs.Int64("index", -1, "entry index")
	projFlag := fs.String("projection", "", "projection_id")
	compFlag := fs.String("compaction", "", "compaction_event_id")
	tombFlag := fs.String("tombstone", "", "tombstone_id")
	sizeFlag := fs.Uint64("size", 0, "prove against the published checkpoint of this size")
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
	if *logFlag == "" || n != 1 || len(pos) != 0 {
		fmt.Fprint(os.Stderr, "Usage: memtrail proof --log URL (--index N | --projection ID | --compaction ID | --tombstone ID) [--size N] [-o FILE]\n")
		if n > 1 {
			fmt.Fprint(os.Stderr, "memtrail: hint: give exactly one of --index, --projection, --compaction and --tombstone\n")
		}
		return errUsage
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
	body, err := get(client, u)
	var lr *logRefusal
	if errors.As(err, &lr) && lr.status == http.StatusNotFound && *sizeFlag > 0 {
		// The log's refusal says which sizes it has.
		return withHint(err, "use the size of a checkpoint the log published, or omit --size to prove against the latest")
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

func (r *logRefusal) Error() string { return r.Code + ": " + r.Detail }

func getJSON(client *http.Client, u string, v any) error {
	body, err := get(client, u)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}
