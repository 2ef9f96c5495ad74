package witness

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// A Log is a transparency log whose checkpoints the witness cosigns.
type Log struct {
	// Origin is the first line of the log's checkpoints.
	Origin string
	// VKey is the signed-note verifier key of the log. Supported signature
	// types are 0x01 (Ed25519), 0x02 (ECDSA P-256), 0x04 (Ed25519
	// cosignature/v1), 0x05 (RFC 6962 STH) and 0x06 (ML-DSA-44).
	VKey string
}

// maxLogsSize bounds the size of a log list.
const maxLogsSize = 16 << 20

// logsHeader is the first line of a log list.
const logsHeader = "logs/v0"

// ParseLogs parses a log list, the format of the LOGS file:
//
//	logs/v0
//	vkey <verifier key>
//	origin <origin line>
//	vkey <verifier key>
//	...
//
// The first line that is neither empty nor a comment must be "logs/v0".
// Each "vkey" line starts the entry of one log. An "origin" line may follow
// it; without one, the origin is the key name. A log whose key is being
// rotated is listed twice, with the same origin and each key: checkpoints
// signed by either are accepted. Lines starting with '#' and empty lines are
// ignored, and so are lines of an entry starting with any other keyword
// (lists published for witness networks carry, for example, "qpd" and
// "contact"). Leading and trailing spaces are removed from every line.
//
// ParseLogs refuses the whole list on any invalid key, a keyword outside
// an entry, a second origin in one entry, an origin that is not valid UTF-8
// or contains control characters, and a (origin, key) pair listed twice.
func ParseLogs(data []byte) ([]Log, error) {
	if len(data) > maxLogsSize {
		return nil, fmt.Errorf("witness: log list is larger than %d bytes", maxLogsSize)
	}
	var logs []Log
	sawHeader, sawOrigin := false, false
	lineNo := 0
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		lineNo++
		text := strings.TrimSpace(string(line))
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if !utf8.ValidString(text) || strings.IndexFunc(text, unicode.IsControl) >= 0 {
			return nil, fmt.Errorf("witness: log list line %d: invalid characters", lineNo)
		}
		if !sawHeader {
			if text != logsHeader {
				return nil, fmt.Errorf("witness: log list line %d: got %q, want the header %q", lineNo, text, logsHeader)
			}
			sawHeader = true
			continue
		}
		keyword, value, _ := strings.Cut(text, " ")
		value = strings.TrimSpace(value)
		switch {
		case keyword == "vkey":
			v, err := fnote.NewVerifier(value)
			if err != nil {
				return nil, fmt.Errorf("witness: log list line %d: invalid vkey: %w", lineNo, err)
			}
			logs = append(logs, Log{Origin: v.Name(), VKey: value})
			sawOrigin = false
		case len(logs) == 0:
			return nil, fmt.Errorf("witness: log list line %d: %q before the first vkey", lineNo, keyword)
		case keyword == "origin":
			if sawOrigin {
				return nil, fmt.Errorf("witness: log list line %d: second origin for one vkey", lineNo)
			}
			if value == "" {
				return nil, fmt.Errorf("witness: log list line %d: empty origin", lineNo)
			}
			logs[len(logs)-1].Origin = value
			sawOrigin = true
		}
	}
	if !sawHeader {
		return nil, fmt.Errorf("witness: log list has no %q header", logsHeader)
	}
	seen := make(map[Log]bool, len(logs))
	for _, l := range logs {
		if seen[l] {
			return nil, fmt.Errorf("witness: log list names key %q for origin %q twice", l.VKey, l.Origin)
		}
		seen[l] = true
	}
	return logs, nil
}

// FormatLogs encodes logs as a log list that ParseLogs reads back.
func FormatLogs(logs []Log) []byte {
	var b bytes.Buffer
	b.WriteString(logsHeader + "\n")
	for _, l := range logs {
		fmt.Fprintf(&b, "vkey %s\norigin %s\n", l.VKey, l.Origin)
	}
	return b.Bytes()
}

// logSet is an immutable set of known logs, swapped as a whole on reload.
type logSet struct {
	logs      []Log
	verifiers map[string]note.Verifiers // by origin
	keys      map[string][]string       // by origin: its keys as "name+hash"
}

func newLogSet(logs []Log) (*logSet, error) {
	byOrigin := make(map[string][]note.Verifier)
	for _, l := range logs {
		if l.Origin == "" || strings.ContainsRune(l.Origin, '\n') || !utf8.ValidString(l.Origin) {
			return nil, fmt.Errorf("witness: invalid origin %q", l.Origin)
		}
		v, err := fnote.NewVerifier(l.VKey)
		if err != nil {
			return nil, fmt.Errorf("witness: invalid vkey for %q: %w", l.Origin, err)
		}
		for _, other := range byOrigin[l.Origin] {
			if other.Name() == v.Name() && other.KeyHash() == v.KeyHash() {
				return nil, fmt.Errorf("witness: two keys named %q with ID %08x for %q", v.Name(), v.KeyHash(), l.Origin)
			}
		}
		byOrigin[l.Origin] = append(byOrigin[l.Origin], v)
	}
	s := &logSet{logs: slices.Clone(logs), verifiers: make(map[string]note.Verifiers, len(byOrigin)), keys: make(map[string][]string, len(byOrigin))}
	for origin, vs := range byOrigin {
		s.verifiers[origin] = note.VerifierList(vs...)
		for _, v := range vs {
			s.keys[origin] = append(s.keys[origin], fmt.Sprintf("%s+%08x", v.Name(), v.KeyHash()))
		}
	}
	return s, nil
}
