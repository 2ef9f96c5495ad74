package verifier

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/memtrail/memtrail/internal/tlogfmt"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// Limits on a tlog-policy file. The spec recommends supporting at least 32
// logs, 32 witnesses and 32 groups; these leave room well beyond that while
// bounding the work a hostile file can cause.
const (
	maxPolicySize      = 64 << 10
	maxPolicyLogs      = 256
	maxPolicyWitnesses = 256
	maxPolicyGroups    = 256
)

// Signature types of vkeys, from c2sp.org/signed-note and
// c2sp.org/tlog-cosignature.
const (
	keyTypeEd25519       = 0x01 // Ed25519 note signature
	keyTypeCosignatureV1 = 0x04 // Ed25519 timestamped cosignature/v1
	keyTypeMLDSA44       = 0x06 // ML-DSA-44 subtree/v1 cosignature
)

// quorumNone is the predefined name for a quorum that requires no
// cosignatures.
const quorumNone = "none"

// Policy is a parsed [C2SP tlog-policy]: the logs whose checkpoints are
// accepted, the witnesses whose cosignatures count, and the quorum rule those
// cosignatures must satisfy. A Policy is immutable and safe for concurrent use.
//
// The zero Policy accepts nothing; build one with [ParsePolicy].
//
// [C2SP tlog-policy]: https://c2sp.org/tlog-policy
type Policy struct {
	logs       []Log
	logTypes   []byte // vkey type of each log key
	witnesses  []Witness
	groups     []Group
	components []component   // witnesses and groups, in definition order
	members    [][]component // members of each group, resolved
	quorum     component     // kind componentNone for "quorum none"

	verifiers note.Verifiers
	signers   map[keyID]component // note key (name, hash) → log or witness
}

// Log is a log line of a [Policy]. Its checkpoints are accepted when signed by
// VKey, whose key name is the log's origin.
type Log struct {
	Origin string // the key name of VKey, which must equal the checkpoint origin
	VKey   string // signed-note verifier key, type 0x01, 0x04 or 0x06
	URL    string // optional; empty when the line has none
}

// Witness is a witness line of a [Policy].
type Witness struct {
	Name    string // the name the policy uses for it in groups and the quorum
	KeyName string // the signed-note key name inside VKey
	VKey    string // cosignature verifier key, type 0x04 (Ed25519) or 0x06 (ML-DSA-44)
	URL     string // optional; empty when the line has none
}

// Group is a group line of a [Policy]: it is satisfied when at least Threshold
// of its Members (witnesses or earlier groups) are.
type Group struct {
	Name      string
	Threshold int
	Members   []string
}

type componentKind uint8

const (
	componentNone componentKind = iota
	componentLog
	componentWitness
	componentGroup
)

// component refers to a log, witness or group of a Policy by index.
type component struct {
	kind  componentKind
	index int
}

type keyID struct {
	name string
	hash uint32
}

// PolicyError reports a tlog-policy file that does not parse. It matches
// [ErrMalformed] with [errors.Is].
type PolicyError struct {
	Line int // 1-based line number; 0 when the error concerns the whole file
	Err  error
}

func (e *PolicyError) Error() string {
	if e.Line == 0 {
		return "tlog-policy: " + e.Err.Error()
	}
	return fmt.Sprintf("tlog-policy line %d: %v", e.Line, e.Err)
}

func (e *PolicyError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrMalformed].
func (e *PolicyError) Is(target error) bool { return target == ErrMalformed }

// ParsePolicy parses a [C2SP tlog-policy] file.
//
// The parser is strict: it accepts exactly the syntax of the spec and fails on
// anything else, naming the offending line. Lines are separated by newlines;
// fields by spaces and tabs only; empty lines and lines whose first
// non-blank character is "#" are ignored. A "#" elsewhere is not a comment.
// The only control characters allowed are tab and newline (so a file with
// CRLF line endings is refused). The last line may lack its newline.
//
//	log <vkey> [<url>]
//	witness <name> <vkey> [<url>]
//	group <name> all|any|<k> <name>...
//	quorum <name>|none
//
// Beyond the grammar, ParsePolicy requires that:
//
//   - log keys have type 0x01 (Ed25519), 0x04 or 0x06, and witness keys type
//     0x04 (Ed25519 cosignature/v1) or 0x06 (ML-DSA-44 cosignature); the key
//     ID in each vkey matches its key;
//   - no public key appears twice, whatever its name or type, not even once
//     as a log and once as a witness;
//   - witness and group names are unique, are not "none", and groups and the
//     quorum name only what earlier lines defined; a group lists each member
//     at most once and has 1 ≤ k ≤ n;
//   - there is exactly one quorum line;
//   - URLs, when present, are absolute (scheme and host);
//   - the file is at most 64 KiB, with at most 256 logs, 256 witnesses and
//     256 groups.
//
// A policy without log lines parses, but no checkpoint opens under it.
//
// [C2SP tlog-policy]: https://c2sp.org/tlog-policy
func ParsePolicy(text []byte) (*Policy, error) {
	p, err := parsePolicy(text)
	if err != nil {
		return nil, fmt.Errorf("verifier: %w", err)
	}
	return p, nil
}

func parsePolicy(text []byte) (*Policy, error) {
	if len(text) > maxPolicySize {
		return nil, &PolicyError{Err: fmt.Errorf("file is %d bytes, more than the limit of %d", len(text), maxPolicySize)}
	}
	p := &Policy{signers: make(map[keyID]component)}
	names := make(map[string]component)
	keyLines := make(map[string]int) // raw public key → line
	idLines := make(map[keyID]int)   // key name and ID → line
	quorumLine := 0
	var verifiers []note.Verifier

	lines := bytes.Split(text, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	for i, raw := range lines {
		n := i + 1
		fail := func(format string, args ...any) error {
			return &PolicyError{Line: n, Err: fmt.Errorf(format, args...)}
		}
		for _, c := range raw {
			if c < 0x20 && c != '\t' || c == 0x7f {
				return nil, fail("control character 0x%02x", c)
			}
		}
		fields := splitFields(string(raw))
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		// addKey records a log or witness key, refusing duplicates.
		addKey := func(k parsedKey, c component) error {
			if prev, ok := keyLines[string(k.material)]; ok {
				return fail("public key already listed on line %d", prev)
			}
			id := keyID{k.name, k.hash}
			if prev, ok := idLines[id]; ok {
				return fail("key name %q and key ID %08x already used on line %d", k.name, k.hash, prev)
			}
			keyLines[string(k.material)] = n
			idLines[id] = n
			p.signers[id] = c
			verifiers = append(verifiers, k.verifier)
			return nil
		}
		switch fields[0] {
		case "log":
			if len(fields) < 2 || len(fields) > 3 {
				return nil, fail("want \"log <vkey> [<url>]\", got %d fields", len(fields))
			}
			k, err := parseVKey(fields[1])
			if err != nil {
				return nil, fail("log key: %w", err)
			}
			switch k.typ {
			case keyTypeEd25519, keyTypeCosignatureV1, keyTypeMLDSA44:
			default:
				return nil, fail("log key %q has unsupported type 0x%02x", k.name, k.typ)
			}
			l := Log{Origin: k.name, VKey: fields[1]}
			if len(fields) == 3 {
				if err := checkURL(fields[2]); err != nil {
					return nil, fail("log URL: %w", err)
				}
				l.URL = fields[2]
			}
			if len(p.logs) == maxPolicyLogs {
				return nil, fail("more than %d logs", maxPolicyLogs)
			}
			if err := addKey(k, component{componentLog, len(p.logs)}); err != nil {
				return nil, err
			}
			p.logs = append(p.logs, l)
			p.logTypes = append(p.logTypes, k.typ)

		case "witness":
			if len(fields) < 3 || len(fields) > 4 {
				return nil, fail("want \"witness <name> <vkey> [<url>]\", got %d fields", len(fields))
			}
			name := fields[1]
			if err := checkNewName(name, names); err != nil {
				return nil, fail("witness: %w", err)
			}
			k, err := parseVKey(fields[2])
			if err != nil {
				return nil, fail("witness %q key: %w", name, err)
			}
			if k.typ != keyTypeCosignatureV1 && k.typ != keyTypeMLDSA44 {
				return nil, fail("witness %q key has type 0x%02x, want a cosignature key of type 0x04 (Ed25519) or 0x06 (ML-DSA-44)", name, k.typ)
			}
			w := Witness{Name: name, KeyName: k.name, VKey: fields[2]}
			if len(fields) == 4 {
				if err := checkURL(fields[3]); err != nil {
					return nil, fail("witness %q URL: %w", name, err)
				}
				w.URL = fields[3]
			}
			if len(p.witnesses) == maxPolicyWitnesses {
				return nil, fail("more than %d witnesses", maxPolicyWitnesses)
			}
			c := component{componentWitness, len(p.witnesses)}
			if err := addKey(k, c); err != nil {
				return nil, err
			}
			p.witnesses = append(p.witnesses, w)
			p.components = append(p.components, c)
			names[name] = c

		case "group":
			if len(fields) < 4 {
				return nil, fail("want \"group <name> all|any|<k> <name>...\" with at least one member")
			}
			name, k, members := fields[1], fields[2], fields[3:]
			if err := checkNewName(name, names); err != nil {
				return nil, fail("group: %w", err)
			}
			g := Group{Name: name, Members: members}
			switch k {
			case "all":
				g.Threshold = len(members)
			case "any":
				g.Threshold = 1
			default:
				t, ok := tlogfmt.ParseDecimal(k)
				if !ok || t < 1 || t > uint64(len(members)) {
					return nil, fail("group %q threshold %q is not all, any or a decimal from 1 to %d", name, k, len(members))
				}
				g.Threshold = int(t)
			}
			seen := make(map[string]bool, len(members))
			resolved := make([]component, 0, len(members))
			for _, m := range members {
				if m == quorumNone {
					return nil, fail("group %q lists %q, which cannot be a member", name, quorumNone)
				}
				if _, ok := names[m]; !ok {
					return nil, fail("group %q lists %q, which no earlier line defines", name, m)
				}
				if seen[m] {
					return nil, fail("group %q lists %q twice", name, m)
				}
				seen[m] = true
				resolved = append(resolved, names[m])
			}
			if len(p.groups) == maxPolicyGroups {
				return nil, fail("more than %d groups", maxPolicyGroups)
			}
			c := component{componentGroup, len(p.groups)}
			p.groups = append(p.groups, g)
			p.members = append(p.members, resolved)
			p.components = append(p.components, c)
			names[name] = c

		case "quorum":
			if len(fields) != 2 {
				return nil, fail("want \"quorum <name>\", got %d fields", len(fields))
			}
			if quorumLine != 0 {
				return nil, fail("second quorum line (the first is line %d)", quorumLine)
			}
			if fields[1] == quorumNone {
				p.quorum = component{kind: componentNone}
			} else {
				c, ok := names[fields[1]]
				if !ok {
					return nil, fail("quorum %q is not a witness or group defined on an earlier line", fields[1])
				}
				p.quorum = c
			}
			quorumLine = n

		default:
			return nil, fail("unknown keyword %q", fields[0])
		}
	}
	if quorumLine == 0 {
		return nil, &PolicyError{Err: errors.New("no quorum line")}
	}
	p.verifiers = note.VerifierList(verifiers...)
	return p, nil
}

// splitFields splits a policy line on runs of spaces and tabs. Bytes with the
// high bit set are opaque: they never separate fields.
func splitFields(line string) []string {
	return strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
}

func checkNewName(name string, names map[string]component) error {
	if name == quorumNone {
		return fmt.Errorf("name %q is reserved", quorumNone)
	}
	if _, ok := names[name]; ok {
		return fmt.Errorf("name %q is already defined", name)
	}
	return nil
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", s)
	}
	return nil
}

// parsedKey is a vkey with its verifier.
type parsedKey struct {
	verifier note.Verifier
	name     string
	hash     uint32
	typ      byte
	material []byte // the public key, without the type byte
}

// parseVKey parses a signed-note verifier key of type 0x01, 0x04 or 0x06,
// checking that its key ID matches the key.
func parseVKey(vkey string) (parsedKey, error) {
	name, rest, ok1 := strings.Cut(vkey, "+")
	hash16, key64, ok2 := strings.Cut(rest, "+")
	if !ok1 || !ok2 || name == "" || len(hash16) != 8 {
		return parsedKey{}, errors.New("not a vkey <name>+<hex key ID>+<base64 key>")
	}
	hash, err := strconv.ParseUint(hash16, 16, 32)
	if err != nil {
		return parsedKey{}, fmt.Errorf("vkey %q: key ID is not hexadecimal", name)
	}
	key, err := base64.StdEncoding.Strict().DecodeString(key64)
	if err != nil || len(key) < 2 || base64.StdEncoding.EncodeToString(key) != key64 {
		return parsedKey{}, fmt.Errorf("vkey %q: key is not canonical base64", name)
	}
	k := parsedKey{name: name, hash: uint32(hash), typ: key[0], material: key[1:]}
	switch k.typ {
	case keyTypeEd25519:
		k.verifier, err = note.NewVerifier(vkey)
	case keyTypeCosignatureV1, keyTypeMLDSA44:
		// NewVerifierForCosignatureV1 derives the key ID from the key
		// without checking the one written in the vkey, so check it here.
		if want := vkeyID(name, key); want != k.hash {
			return parsedKey{}, fmt.Errorf("vkey %q: key ID %08x does not match the key (want %08x)", name, k.hash, want)
		}
		k.verifier, err = fnote.NewVerifierForCosignatureV1(vkey)
	default:
		return parsedKey{}, fmt.Errorf("vkey %q: unsupported key type 0x%02x", name, k.typ)
	}
	if err != nil {
		return parsedKey{}, fmt.Errorf("vkey %q: %w", name, err)
	}
	if k.verifier.Name() != name || k.verifier.KeyHash() != k.hash {
		return parsedKey{}, fmt.Errorf("vkey %q: key ID %08x does not match the key", name, k.hash)
	}
	return k, nil
}

// vkeyID is the signed-note key ID: SHA-256(name || "\n" || type || key)[:4].
func vkeyID(name string, typedKey []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte("\n"))
	h.Write(typedKey)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// Logs returns the policy's logs, in file order.
func (p *Policy) Logs() []Log { return append([]Log(nil), p.logs...) }

// Witnesses returns the policy's witnesses, in file order.
func (p *Policy) Witnesses() []Witness { return append([]Witness(nil), p.witnesses...) }

// Groups returns the policy's groups, in file order, with thresholds resolved
// to numbers.
func (p *Policy) Groups() []Group {
	gs := make([]Group, len(p.groups))
	for i, g := range p.groups {
		gs[i] = Group{Name: g.Name, Threshold: g.Threshold, Members: append([]string(nil), g.Members...)}
	}
	return gs
}

// Quorum returns the name of the witness or group that must be satisfied, or
// "none" when no cosignature is required.
func (p *Policy) Quorum() string {
	return p.componentName(p.quorum)
}

func (p *Policy) componentName(c component) string {
	switch c.kind {
	case componentWitness:
		return p.witnesses[c.index].Name
	case componentGroup:
		return p.groups[c.index].Name
	}
	return quorumNone
}

// String returns the policy in canonical tlog-policy form: logs first, then
// witnesses and groups in their original order, then the quorum, one space
// between fields, thresholds as numbers, no comments. Parsing the result
// gives back an equivalent Policy.
func (p *Policy) String() string {
	var b strings.Builder
	for _, l := range p.logs {
		b.WriteString("log " + l.VKey)
		if l.URL != "" {
			b.WriteString(" " + l.URL)
		}
		b.WriteString("\n")
	}
	for _, c := range p.components {
		switch c.kind {
		case componentWitness:
			w := p.witnesses[c.index]
			b.WriteString("witness " + w.Name + " " + w.VKey)
			if w.URL != "" {
				b.WriteString(" " + w.URL)
			}
		case componentGroup:
			g := p.groups[c.index]
			fmt.Fprintf(&b, "group %s %d %s", g.Name, g.Threshold, strings.Join(g.Members, " "))
		}
		b.WriteString("\n")
	}
	if p.verifiers != nil {
		b.WriteString("quorum " + p.Quorum() + "\n")
	}
	return b.String()
}

// quorumMet reports whether the witnesses marked in cosigned (indexed like
// p.witnesses) satisfy the quorum. Groups only refer to earlier groups, so one
// pass in definition order evaluates every group exactly once.
func (p *Policy) quorumMet(cosigned []bool) bool {
	if p.verifiers == nil {
		return false // the zero Policy accepts nothing
	}
	groupMet := make([]bool, len(p.groups))
	met := func(c component) bool {
		switch c.kind {
		case componentWitness:
			return cosigned[c.index]
		case componentGroup:
			return groupMet[c.index]
		}
		return c.kind == componentNone
	}
	for i, g := range p.groups {
		n := 0
		for _, m := range p.members[i] {
			if met(m) {
				n++
			}
		}
		groupMet[i] = n >= g.Threshold
	}
	return met(p.quorum)
}

// ErrPolicyTooComplex is returned by [Policy.QuorumImplies] when the
// quorums are too large to compare exhaustively.
var ErrPolicyTooComplex = errors.New("quorums too large to compare")

// maxImpliesSteps bounds the search of [Policy.QuorumImplies]: policies of
// a few dozen witnesses with thresholds are compared in well under a
// second; beyond, the answer is ErrPolicyTooComplex.
const maxImpliesSteps = 1 << 20

// QuorumImplies reports whether every set of witness cosignatures that
// satisfies p's quorum also satisfies q's: whether a checkpoint of a log
// both policies name that opens under p also opens under q. Witnesses are
// matched by their verifier keys, not by the names the two files give
// them. So p is at least as strict as q when it holds: "quorum none" is
// implied by every policy and implies only "quorum none"; adding a
// witness that must also cosign, or raising a threshold, keeps the
// implication; removing a required witness, lowering a threshold, or
// replacing a witness by another breaks it.
//
// It searches the minimal sets of p's witnesses that satisfy p's quorum
// for one that does not satisfy q's. The search is bounded, and beyond the
// bound QuorumImplies returns false and an error wrapping
// [ErrPolicyTooComplex].
func (p *Policy) QuorumImplies(q *Policy) (bool, error) {
	if p.verifiers == nil || q.verifiers == nil {
		return false, errors.New("verifier: QuorumImplies on a zero Policy")
	}
	if p.sameQuorum(q) {
		return true, nil // a new URL, a comment or a log line changed
	}
	// qIndex[i] is the index in q of p's witness i, or -1.
	qIndex := make([]int, len(p.witnesses))
	for i, w := range p.witnesses {
		qIndex[i] = -1
		for j, v := range q.witnesses {
			if v.VKey == w.VKey {
				qIndex[i] = j
			}
		}
	}
	in := make([]bool, len(p.witnesses))    // the set being built
	maybe := make([]bool, len(p.witnesses)) // in, or not yet decided
	qSet := make([]bool, len(q.witnesses))
	steps := 0
	// search decides witnesses from i on; it returns false when it found
	// a set satisfying p and not q.
	var search func(i int) (bool, error)
	search = func(i int) (bool, error) {
		if steps++; steps > maxImpliesSteps {
			return false, fmt.Errorf("verifier: %w (more than %d steps)", ErrPolicyTooComplex, maxImpliesSteps)
		}
		if p.quorumMet(in) {
			// Every superset satisfies p too, and satisfies q if this
			// set does (quorums are monotone): check this one only.
			for j := range qSet {
				qSet[j] = false
			}
			for k, ok := range in {
				if ok && qIndex[k] >= 0 {
					qSet[qIndex[k]] = true
				}
			}
			return q.quorumMet(qSet), nil
		}
		if i == len(p.witnesses) || !p.quorumMet(maybe) {
			return true, nil // p cannot be satisfied on this branch
		}
		in[i] = true
		ok, err := search(i + 1)
		in[i] = false
		if !ok || err != nil {
			return ok, err
		}
		maybe[i] = false
		ok, err = search(i + 1)
		maybe[i] = true
		return ok, err
	}
	for i := range maybe {
		maybe[i] = true
	}
	return search(0)
}

// sameQuorum reports whether p and q define the same witnesses (names and
// keys), groups and quorum, in the same order, whatever their URLs.
func (p *Policy) sameQuorum(q *Policy) bool {
	if len(p.witnesses) != len(q.witnesses) || len(p.groups) != len(q.groups) || len(p.components) != len(q.components) || p.quorum != q.quorum {
		return false
	}
	for i, w := range p.witnesses {
		if v := q.witnesses[i]; v.Name != w.Name || v.VKey != w.VKey {
			return false
		}
	}
	for i, g := range p.groups {
		h := q.groups[i]
		if h.Name != g.Name || h.Threshold != g.Threshold || !slices.Equal(h.Members, g.Members) {
			return false
		}
	}
	return slices.Equal(p.components, q.components)
}
