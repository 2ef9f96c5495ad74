package main

import (
	"bytes"
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
	"unicode"

	"github.com/memtrail/memtrail/api"
	"github.com/memtrail/memtrail/receipts"
)

const lookupUsage = `Usage:

	memtrail lookup --log URL [--json] ID | DIGEST
	memtrail lookup --log URL [--json] projection|compaction|tombstone ID
	memtrail lookup --log URL [--json] item DIGEST
	memtrail lookup --log URL [--json] obligations [--limit N]
	memtrail lookup --log URL [--json] log

Ask a memtrail log what it holds: what GET /v1/... answers (docs/api.md,
"Lookups"), as readable text, or with --json as the log's JSON answer, one
line per answer, for scripts.

	ID              the entry whose projection_id, compaction_event_id or
	                tombstone_id it is (every kind that has it is shown)
	DIGEST, item    an item's state (unknown, retained, purged or
	                awaiting_recompaction), the compactions that include it
	                in log order and their states, those whose output it
	                is, its tombstone, and the obligations it leaves open
	projection, tombstone
	                the entry: index, leaf hash, what the receipt says, and
	                whether a published checkpoint proves it yet
	compaction      the same, and its lineage state (current,
	                awaiting_recompaction, awaiting_erasure, superseded,
	                erased), manifest root, item count, how many of its
	                items are tombstoned, its compacted output, what it
	                supersedes, and what superseded or erased it
	obligations     the open erasure obligations of the whole log: each
	                tombstoned item of a compaction neither superseded nor
	                erased, at most --limit of them (1 to 10000, default
	                1000) and how many there are
	log             the origin, verifier key, and published and integrated
	                sizes

The log is not trusted here: what it says is shown as it says it. "memtrail
proof" fetches an entry's proof and "memtrail verify" checks everything
offline; "memtrail verify log" audits the obligations. Answers are read up to
16 MiB.

Flags may come before or after the arguments; "--" ends the flags.

The command exits 0 if the log answered, 1 if it has no such entry or could
not be asked, and 2 on a usage error.

Example:

	$ memtrail lookup --log http://127.0.0.1:8080 item sha256:6f1c…
	item sha256:6f1c…
	  state        awaiting_recompaction
	  tombstone    urn:uuid:9a2e… at index 7, purged_at 1796083200 (2026-12-01T00:00:00Z)
	  compactions  1, in log order:
	    index 3  urn:uuid:51b0…  awaiting_recompaction
	  open obligations  1: a compaction that includes it must be superseded, or its output tombstoned
	    index 3  urn:uuid:51b0…  awaiting_recompaction
`

const lookupSynopsis = "memtrail lookup --log URL [--json] (ID | DIGEST | projection ID | compaction ID | tombstone ID | item DIGEST | obligations [--limit N] | log)"

func init() {
	register(&command{name: "lookup", synopsis: "look up entries, items, compactions and obligations in a log", run: runLookup})
}

// Caps on a log's answers: an entry holds one receipt (at most 65,535
// bytes) and its proof; an item's compactions and the obligations are
// lists.
const (
	maxEntryAnswer = 1 << 20
	maxListAnswer  = 16 << 20
)

func runLookup(args []string) error {
	fs := newFlagSet("lookup", lookupUsage)
	logFlag := fs.String("log", "", "log URL, e.g. http://127.0.0.1:8080")
	jsonFlag := fs.Bool("json", false, "write the log's JSON answers, one a line")
	limitFlag := fs.Int("limit", 1000, "most obligations listed (1 to 10000)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *logFlag == "" {
		return missingFlag(lookupSynopsis, "--log URL", "the log's base URL, such as http://127.0.0.1:8080")
	}
	if len(pos) == 0 {
		return synopsisUsage(lookupSynopsis, "missing what to look up", "give an id, an item digest, or one of projection, compaction, tombstone, item, obligations, log")
	}
	want := map[string]int{"projection": 2, "compaction": 2, "tombstone": 2, "item": 2, "obligations": 1, "log": 1}
	if n, ok := want[pos[0]]; ok && len(pos) != n {
		if len(pos) < n {
			what := "ID"
			if pos[0] == "item" {
				what = "DIGEST"
			}
			return synopsisUsage(lookupSynopsis, fmt.Sprintf("missing the %s after %q", what, pos[0]))
		}
		return synopsisUsage(lookupSynopsis, fmt.Sprintf("unexpected argument %q", pos[n]))
	}
	if _, ok := want[pos[0]]; !ok && len(pos) != 1 {
		return synopsisUsage(lookupSynopsis, fmt.Sprintf("unexpected argument %q", pos[1]), "look up one id or digest at a time")
	}
	if *limitFlag < 1 || *limitFlag > 10000 {
		return synopsisUsage(lookupSynopsis, fmt.Sprintf("--limit %d is not from 1 to 10000", *limitFlag))
	}
	logURL, err := parseLogURL(*logFlag)
	if err != nil {
		return err
	}
	lk := &lookup{client: &http.Client{Timeout: time.Minute}, base: logURL.String(), json: *jsonFlag}
	defer lk.out.WriteTo(os.Stdout)
	switch pos[0] {
	case "projection", "compaction", "tombstone":
		return lk.entry(pos[0], pos[1])
	case "item":
		if !receipts.IsDigest(pos[1]) {
			return synopsisUsage(lookupSynopsis, fmt.Sprintf("%q is not an item digest", pos[1]), "an item digest is \"sha256:\" followed by 64 lowercase hex digits")
		}
		return lk.item(pos[1])
	case "obligations":
		return lk.obligations(*limitFlag)
	case "log":
		return lk.logInfo()
	}
	if receipts.IsDigest(pos[0]) {
		return lk.item(pos[0])
	}
	return lk.anyKind(pos[0])
}

// lookup asks one log and writes what it answers to out.
type lookup struct {
	client *http.Client
	base   string
	json   bool
	out    bytes.Buffer
}

// fetch GETs path from the log, reading at most max bytes of the answer,
// and decodes it into v. A refusal is a *logRefusal.
func (lk *lookup) fetch(path string, max int64, v any) ([]byte, error) {
	resp, err := lk.client.Get(lk.base + path)
	if err != nil {
		return nil, withHint(fmt.Errorf("couldn't reach the log: %w", err), "check --log: is \"memtrail serve\" running at "+lk.base+"?")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("couldn't read the log's answer to %s: %w", path, err)
	}
	if int64(len(body)) > max {
		return nil, fmt.Errorf("the log's answer to %s is over %d bytes: not what a memtrail log answers", path, max)
	}
	if resp.StatusCode != http.StatusOK {
		r := &logRefusal{status: resp.StatusCode}
		if json.Unmarshal(body, &r.Refusal) != nil || r.Code == "" {
			r.Refusal = api.Refusal{Code: resp.Status, Detail: fmt.Sprintf("%.200q", body)}
		}
		return nil, r
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, fmt.Errorf("the log's answer to %s is not what a memtrail log answers: %v", path, err)
	}
	return body, nil
}

// emitJSON writes an answer as one line.
func (lk *lookup) emitJSON(body []byte) {
	var c bytes.Buffer
	if json.Compact(&c, body) == nil {
		body = c.Bytes()
	}
	lk.out.Write(body)
	lk.out.WriteByte('\n')
}

func (lk *lookup) printf(format string, args ...any) { fmt.Fprintf(&lk.out, format, args...) }

var lookupPaths = map[string]string{"projection": "projections", "compaction": "compactions", "tombstone": "tombstones"}

// entry looks up the entry of kind with id.
func (lk *lookup) entry(kind, id string) error {
	found, err := lk.tryEntry(kind, id)
	if err == nil && !found {
		err = fmt.Errorf("the log has no %s %s", kind, printable(id))
	}
	return err
}

// tryEntry looks up the entry of kind with id and shows it; found is false
// when the log has none.
func (lk *lookup) tryEntry(kind, id string) (found bool, err error) {
	path := "/v1/" + lookupPaths[kind] + "/" + url.PathEscape(id)
	var body []byte
	var e api.Entry
	var c api.CompactionState
	if kind == "compaction" {
		body, err = lk.fetch(path, maxEntryAnswer, &c)
		e = c.Entry
	} else {
		body, err = lk.fetch(path, maxEntryAnswer, &e)
	}
	var lr *logRefusal
	if errors.As(err, &lr) && lr.Code == "not_found" {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if lk.json {
		lk.emitJSON(body)
		return true, nil
	}
	lk.printf("%s %s\n", kind, printable(e.ID))
	lk.printf("  index          %d\n", e.Index)
	switch kind {
	case "compaction":
		lk.printf("  state          %s\n", compactionStateText(&c))
		lk.printf("  manifest root  %s\n", printable(c.ManifestRoot))
		lk.printf("  items          %d (%d tombstoned)\n", c.ItemCount, c.PurgedItems)
		lk.printf("  output         %s\n", printable(c.OutputHash))
		if c.Supersedes != "" {
			lk.printf("  supersedes     %s\n", printable(c.Supersedes))
		}
		if c.SupersededBy != "" {
			lk.printf("  superseded by  %s at index %d\n", printable(c.SupersededBy), c.SupersededAt)
		}
		if c.ErasedBy != "" {
			lk.printf("  erased by      %s at index %d\n", printable(c.ErasedBy), c.ErasedAt)
		}
	case "tombstone":
		var t struct {
			Item     string `json:"item_digest"`
			PurgedAt int64  `json:"purged_at"`
			Reason   string `json:"reason"`
		}
		if json.Unmarshal(e.Receipt, &t) == nil {
			lk.printf("  item           %s\n", printable(t.Item))
			lk.printf("  purged_at      %s\n", unixText(t.PurgedAt))
			lk.printf("  reason         %s\n", printable(t.Reason))
		}
	case "projection":
		var p struct {
			CreatedAt string `json:"created_at"`
			Adapter   struct {
				ID    string `json:"id"`
				KeyID string `json:"key_id"`
			} `json:"adapter"`
			Delivered []json.RawMessage `json:"delivered"`
		}
		if json.Unmarshal(e.Receipt, &p) == nil {
			lk.printf("  adapter        %s (key %s)\n", printable(p.Adapter.ID), printable(p.Adapter.KeyID))
			lk.printf("  created_at     %s\n", printable(p.CreatedAt))
			lk.printf("  delivered      %d %s\n", len(p.Delivered), plural(len(p.Delivered), "fragment", "fragments"))
		}
	}
	lk.printf("  leaf hash      %s\n", printable(e.LeafHash))
	if e.Proof != "" {
		lk.printf("  proof          published: memtrail proof --log %s --index %d\n", lk.base, e.Index)
	} else {
		lk.printf("  proof          not yet published: memtrail proof --log %s --index %d --wait\n", lk.base, e.Index)
	}
	return true, nil
}

func compactionStateText(c *api.CompactionState) string {
	switch c.State {
	case "awaiting_recompaction":
		return fmt.Sprintf("awaiting_recompaction: %s tombstoned, and no compaction supersedes it yet", ofN(c.PurgedItems, c.ItemCount, "item was", "items were"))
	case "awaiting_erasure":
		return fmt.Sprintf("awaiting_erasure: %s tombstoned, so no compaction can supersede it: only a tombstone of its output discharges it", ofN(c.PurgedItems, c.ItemCount, "item was", "items were"))
	case "superseded":
		return "superseded by " + printable(c.SupersededBy)
	case "erased":
		return "erased by " + printable(c.ErasedBy) + ": its output was tombstoned"
	}
	return printable(c.State)
}

// itemCompactionState is the state of a compaction listed in an item's
// answer, with what superseded or erased it.
func itemCompactionState(c api.ItemCompaction) string {
	switch {
	case c.SupersededBy != "":
		return "superseded by " + printable(c.SupersededBy)
	case c.ErasedBy != "":
		return "erased by " + printable(c.ErasedBy)
	case c.State == "awaiting_erasure":
		return "awaiting_erasure: only a tombstone of its output discharges it"
	}
	return printable(c.State)
}

// anyKind looks id up as a projection, a compaction and a tombstone.
func (lk *lookup) anyKind(id string) error {
	n := 0
	for _, kind := range []string{"projection", "compaction", "tombstone"} {
		found, err := lk.tryEntry(kind, id)
		if err != nil {
			return err
		}
		if found {
			n++
		}
	}
	if n == 0 {
		return withHint(fmt.Errorf("the log has no projection, compaction or tombstone with the id %s", printable(id)),
			"ids are compared exactly, case included; an item is looked up by its digest, sha256:…")
	}
	return nil
}

func (lk *lookup) item(digest string) error {
	var st api.ItemState
	body, err := lk.fetch("/v1/items/"+digest, maxListAnswer, &st)
	if err != nil {
		return err
	}
	if lk.json {
		lk.emitJSON(body)
		return nil
	}
	lk.printf("item %s\n", printable(st.Item))
	lk.printf("  state        %s\n", printable(st.State))
	if st.Tombstone != nil {
		lk.printf("  tombstone    %s at index %d, purged_at %s\n", printable(st.Tombstone.ID), st.Tombstone.Index, unixText(st.Tombstone.PurgedAt))
	} else {
		lk.printf("  tombstone    none\n")
	}
	if len(st.Compactions) == 0 {
		lk.printf("  compactions  none include it\n")
	} else {
		lk.printf("  compactions  %d, in log order:\n", len(st.Compactions))
		for _, c := range st.Compactions {
			lk.printf("    index %d  %s  %s\n", c.Index, printable(c.ID), itemCompactionState(c))
		}
	}
	if len(st.OutputOf) > 0 {
		lk.printf("  output of    %d %s, in log order (a tombstone of it erases %s):\n", len(st.OutputOf), plural(len(st.OutputOf), "compaction", "compactions"), plural(len(st.OutputOf), "it", "them"))
		for _, c := range st.OutputOf {
			lk.printf("    index %d  %s  %s\n", c.Index, printable(c.ID), itemCompactionState(c))
		}
	}
	if len(st.Obligations) > 0 {
		lk.printf("  open obligations  %d: %s\n", len(st.Obligations), plural(len(st.Obligations), "a compaction that includes it must be superseded, or its output tombstoned", "compactions that include it must be superseded, or their outputs tombstoned"))
		for _, c := range st.Obligations {
			lk.printf("    index %d  %s  %s\n", c.Index, printable(c.ID), itemCompactionState(c))
		}
	}
	return nil
}

func (lk *lookup) obligations(limit int) error {
	var o api.Obligations
	body, err := lk.fetch("/v1/obligations?limit="+strconv.Itoa(limit), maxListAnswer, &o)
	if err != nil {
		return err
	}
	if lk.json {
		lk.emitJSON(body)
		return nil
	}
	if o.Count == 0 {
		lk.printf("no open obligations: every compaction that included a tombstoned item is superseded or erased\n")
		return nil
	}
	lk.printf("%d open %s: %s\n", o.Count, plural(o.Count, "obligation", "obligations"),
		plural(o.Count, "a compaction neither superseded nor erased includes a tombstoned item", "compactions neither superseded nor erased include tombstoned items"))
	for _, ob := range o.Obligations {
		lk.printf("  compaction %s (index %d) includes %s, tombstoned by %s (index %d, purged_at %s)\n",
			printable(ob.CompactionID), ob.CompactionIndex, printable(ob.Item), printable(ob.TombstoneID), ob.TombstoneIndex, unixText(ob.PurgedAt))
	}
	if o.Truncated {
		lk.printf("  … %d more (--limit %d; at most 10000)\n", o.Count-len(o.Obligations), limit)
	}
	return nil
}

func (lk *lookup) logInfo() error {
	var info api.LogInfo
	body, err := lk.fetch("/v1/log", maxEntryAnswer, &info)
	if err != nil {
		return err
	}
	if lk.json {
		lk.emitJSON(body)
		return nil
	}
	lk.printf("log %s\n", printable(info.Origin))
	lk.printf("  verifier key     %s\n", printable(info.VerifierKey))
	lk.printf("  published size   %d\n", info.TreeSize)
	lk.printf("  integrated size  %d\n", info.IntegratedSize)
	return nil
}

// printable returns s as it is when it is plain printable text, and quoted
// otherwise, so that what a log answers cannot drive the terminal.
func printable(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) || r == ' ' {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

// escapeControl returns s with each character that is not printable (a
// control character, an escape sequence's start) written as a Go escape.
func escapeControl(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsPrint(r) || r == ' ' {
			b.WriteRune(r)
		} else {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

// unixText shows a Unix time with its UTC date.
func unixText(t int64) string {
	if t <= 0 || t >= 1<<53 {
		return strconv.FormatInt(t, 10)
	}
	return fmt.Sprintf("%d (%s)", t, time.Unix(t, 0).UTC().Format(time.RFC3339))
}
