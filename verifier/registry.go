package verifier

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/memtrail/memtrail/receipts"
)

// A Registry records the single use of projection ids. It is the seam
// between the pure verifier and wherever registrations live: the registry
// file of package backend, or a memtrail log.
//
// Contract, for every implementation:
//
//   - Register is atomic: of any number of concurrent calls for one id, in
//     this process or any other sharing the registry, at most one returns a
//     registration of a new use; the others return a *[ReplayError] (or an
//     error).
//   - A registration is durable when Register returns it.
//   - Register returns a *ReplayError, naming the earlier registration,
//     when the id was used before, and an *[UnprovenError] when the
//     registry's answer could not be proven (a log that gave no valid
//     inclusion proof); any other error means the registry could not
//     answer, and the verification is neither accepted nor refused.
//
// [VerifyProjection] calls Register last, only for a record that passed
// every other check.
type Registry interface {
	Register(ctx context.Context, id string, record []byte, at time.Time) (*Registration, error)
}

// A Registration is where and when a projection id was registered.
type Registration struct {
	Registry     string  `json:"registry"` // the registry file's path or the log's URL
	ProjectionID string  `json:"projection_id"`
	RecordDigest string  `json:"record_digest"` // "sha256:" + hex of SHA-256(canonical record)
	RegisteredAt string  `json:"registered_at,omitempty"`
	LogIndex     *uint64 `json:"log_index,omitempty"` // registrations in a log
	// Existing is set when the log already held exactly this record under
	// the id: the id is bound to this record and to no other.
	Existing bool `json:"existing,omitempty"`
	// Proof is, for a registration in a log, the tlog-proof that proved
	// the record logged at LogIndex in a checkpoint of the tlog-policy.
	Proof string `json:"proof,omitempty"`
}

func (r *Registration) describe() string {
	s := "registered " + r.ProjectionID + " in " + r.Registry
	if r.LogIndex != nil {
		s += " at index " + strconv.FormatUint(*r.LogIndex, 10)
		if r.Existing {
			s = r.ProjectionID + " is logged once, as this record, in " + r.Registry + " at index " + strconv.FormatUint(*r.LogIndex, 10)
		}
		if r.Proof != "" {
			s += " (inclusion proven under the tlog-policy)"
		}
	}
	if r.RegisteredAt != "" {
		s += " at " + r.RegisteredAt
	}
	return s
}

// ReplayError refuses a projection id that a registry already holds. It
// matches code projection_replay with [receipts.ErrorCode].
type ReplayError struct {
	ProjectionID string
	First        Registration // the earlier registration
}

func (e *ReplayError) Error() string {
	s := fmt.Sprintf("projection_id %s was already used", e.ProjectionID)
	if e.First.LogIndex != nil {
		s += fmt.Sprintf(" by the record logged at index %d of %s", *e.First.LogIndex, e.First.Registry)
	} else {
		s += " in " + e.First.Registry
	}
	if e.First.RegisteredAt != "" {
		s += ", registered at " + e.First.RegisteredAt
	}
	if e.First.RecordDigest != "" {
		s += ", record " + e.First.RecordDigest
	}
	return s
}

// Unwrap exposes the closed code.
func (e *ReplayError) Unwrap() error {
	return &receipts.Error{Code: receipts.CodeProjectionReplay, Member: "projection_id", Reason: e.Error()}
}

// RefusedError is a registry's refusal of the record itself. A log
// verifies a record before it logs it, and refuses one it does not accept
// (trust evaluated too long ago, a key it does not pin) with a closed code:
// that is a verdict on the record, not a failure to answer, and a retry
// gets the same one. [VerifyProjection] reports it as a failed single_use
// check with the log's code.
type RefusedError struct {
	ProjectionID string
	Registry     string
	Code         receipts.Code
	Member       string // the member the refusal names, or ""
	Reason       string // the registry's detail
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s refused to register %s: %s", e.Registry, e.ProjectionID, e.Reason)
}

// UnprovenError refuses a log's answer about a projection id that does not
// come with the proof it needs: an inclusion proof of the logged record's
// leaf, at the index the log named, in a checkpoint that opens under the
// tlog-policy. Its Code is [CodeSingleUseUnproven] when the log gave no
// proof or a record that does not fit, or the code of the proof's failure
// (proof_malformed, checkpoint_invalid, witness_quorum_not_met,
// inclusion_proof_invalid). [VerifyProjection] reports it as a failed
// single_use check: what the log says without proof is never accepted.
type UnprovenError struct {
	ProjectionID string
	Code         receipts.Code
	Reason       string
}

func (e *UnprovenError) Error() string {
	return fmt.Sprintf("single use of %s is not proven: %s", e.ProjectionID, e.Reason)
}

// ProveLoggedProjection checks a log's evidence about projection id: that
// logged (a projection record, as the log returned it) has that
// projection_id and is the entry at index of a log of policy p, by the
// tlog-proof tlogProof. It returns the logged record's leaf (its canonical
// bytes), so that the caller can tell whether it is the record being
// verified. Every failure is an *[UnprovenError].
func ProveLoggedProjection(p *Policy, id string, index uint64, logged, tlogProof []byte) ([]byte, error) {
	unproven := func(code receipts.Code, format string, args ...any) error {
		return &UnprovenError{ProjectionID: id, Code: code, Reason: fmt.Sprintf(format, args...)}
	}
	if p == nil {
		return nil, unproven(CodeSingleUseUnproven, "no tlog-policy to check the log's proof under")
	}
	r, err := receipts.ParseProjectionRecord(logged)
	if err != nil {
		return nil, unproven(CodeSingleUseUnproven, "the log's entry at index %d is not a projection record: %v", index, err)
	}
	if r.ProjectionID != id {
		return nil, unproven(CodeSingleUseUnproven, "the log answered with the record of %s at index %d", r.ProjectionID, index)
	}
	if len(tlogProof) == 0 {
		return nil, unproven(CodeSingleUseUnproven, "the log gave no inclusion proof of its entry at index %d", index)
	}
	leaf := r.Canonical()
	ip, _, err := VerifyProof(p, tlogProof, LeafHash(leaf))
	if err != nil {
		return nil, unproven(ProofErrorCode(err), "the log's proof for index %d does not verify: %v", index, err)
	}
	if ip.Index != index {
		return nil, unproven(CodeInclusionInvalid, "the log named index %d, but its proof is for index %d", index, ip.Index)
	}
	return leaf, nil
}

// ProofErrorCode maps an error of [VerifyProof] or [OpenCheckpoint] to its
// closed code: inclusion_proof_invalid, witness_quorum_not_met,
// proof_malformed or checkpoint_invalid.
func ProofErrorCode(err error) receipts.Code {
	if errors.Is(err, ErrInclusion) {
		return CodeInclusionInvalid
	}
	_, code := checkpointCode(err)
	return code
}

// RegistryHeader is the first line of a registry file.
const RegistryHeader = "memtrail-projection-registry/v1"

// A RegistryFile is the contents of a projection registry file: a header
// line, then one line per registration, oldest first, each
//
//	<registered_at> <record_digest> <projection_id>
//
// separated by single spaces and ended by a newline:
//
//	memtrail-projection-registry/v1
//	2026-07-29T17:01:00.000Z sha256:5b1c…e2 urn:memory-projection:apertomemory:composition-01
//
// registered_at is the verification time in the form receipts use
// (milliseconds, "Z"); record_digest is "sha256:" and the hex SHA-256 of
// the record's canonical bytes, so the line says which record used the id;
// projection_id is the id, which as an absolute URI has no spaces. Ids
// are unique. Nothing else is allowed: no blank lines, comments or carriage
// returns. [ParseRegistry] and [RegistryFile.Format] round-trip byte for
// byte.
type RegistryFile struct {
	Entries []RegistryEntry
	ids     map[string]int
}

// A RegistryEntry is one line of a registry file.
type RegistryEntry struct {
	RegisteredAt time.Time
	RecordDigest string
	ProjectionID string
}

// MaxRegistrySize caps a registry file (about four million entries).
const MaxRegistrySize = 1 << 30

const docRegistry = "projection registry"

// NewRegistryFile returns an empty registry, for a registry file not yet
// written.
func NewRegistryFile() *RegistryFile { return &RegistryFile{ids: map[string]int{}} }

// ParseRegistry parses a registry file strictly. A registry file always
// has its header line, so an empty input is refused: it is most likely a
// truncated registry, and reading it as an empty one would let every id be
// used again. (A registry not yet written is [NewRegistryFile].) Errors
// are *[InputError] and match [ErrMalformed].
func ParseRegistry(data []byte) (*RegistryFile, error) {
	f := NewRegistryFile()
	if len(data) == 0 {
		return nil, &InputError{Document: docRegistry, Reason: "is empty, without even its header line (a truncated registry?); a new registry is started by giving a path that does not exist yet"}
	}
	if len(data) > MaxRegistrySize {
		return nil, &InputError{Document: docRegistry, Reason: "larger than 1 GiB"}
	}
	if data[len(data)-1] != '\n' {
		return nil, &InputError{Document: docRegistry, Reason: "does not end with a newline"}
	}
	lines := bytes.Split(data[:len(data)-1], []byte("\n"))
	if string(lines[0]) != RegistryHeader {
		return nil, &InputError{Document: docRegistry, Member: "line 1", Reason: "is not " + strconv.Quote(RegistryHeader)}
	}
	f.Entries = make([]RegistryEntry, 0, len(lines)-1)
	for i, line := range lines[1:] {
		where := "line " + strconv.Itoa(i+2)
		fields := strings.Split(string(line), " ")
		if len(fields) != 3 {
			return nil, &InputError{Document: docRegistry, Member: where, Reason: "is not \"<registered_at> <record_digest> <projection_id>\""}
		}
		t, err := receipts.ParseTimestamp(fields[0])
		if err != nil || receipts.FormatTimestamp(t) != fields[0] {
			return nil, &InputError{Document: docRegistry, Member: where, Reason: "registered_at is not a timestamp such as 2026-07-29T17:01:00.000Z"}
		}
		if !receipts.IsDigest(fields[1]) {
			return nil, &InputError{Document: docRegistry, Member: where, Reason: "record_digest is not \"sha256:\" and 64 lowercase hex digits"}
		}
		if !isPrintableID(fields[2]) {
			return nil, &InputError{Document: docRegistry, Member: where, Reason: "projection_id is not 1 to 2048 printable ASCII characters"}
		}
		if j, dup := f.ids[fields[2]]; dup {
			return nil, &InputError{Document: docRegistry, Member: where, Reason: "repeats the id of line " + strconv.Itoa(j+2)}
		}
		f.ids[fields[2]] = len(f.Entries)
		f.Entries = append(f.Entries, RegistryEntry{RegisteredAt: t, RecordDigest: fields[1], ProjectionID: fields[2]})
	}
	return f, nil
}

// Lookup returns the registration of id.
func (f *RegistryFile) Lookup(id string) (RegistryEntry, bool) {
	if f.ids == nil {
		f.reindex()
	}
	i, ok := f.ids[id]
	if !ok {
		return RegistryEntry{}, false
	}
	return f.Entries[i], true
}

func (f *RegistryFile) reindex() {
	f.ids = make(map[string]int, len(f.Entries))
	for i, e := range f.Entries {
		f.ids[e.ProjectionID] = i
	}
}

// Add appends a registration; it fails if the id is registered already or
// the entry could not be written as a registry line.
func (f *RegistryFile) Add(e RegistryEntry) error {
	if _, dup := f.Lookup(e.ProjectionID); dup {
		return fmt.Errorf("verifier: %s is already registered", e.ProjectionID)
	}
	if !isPrintableID(e.ProjectionID) || !receipts.IsDigest(e.RecordDigest) {
		return fmt.Errorf("verifier: registration of %q cannot be written", e.ProjectionID)
	}
	f.ids[e.ProjectionID] = len(f.Entries)
	f.Entries = append(f.Entries, RegistryEntry{RegisteredAt: e.RegisteredAt.UTC().Truncate(time.Millisecond), RecordDigest: e.RecordDigest, ProjectionID: e.ProjectionID})
	return nil
}

// Format returns the registry file's bytes.
func (f *RegistryFile) Format() []byte {
	n := len(RegistryHeader) + 1
	for _, e := range f.Entries {
		n += 24 + 1 + 71 + 1 + len(e.ProjectionID) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, RegistryHeader+"\n"...)
	for _, e := range f.Entries {
		b = append(b, receipts.FormatTimestamp(e.RegisteredAt)...)
		b = append(b, ' ')
		b = append(b, e.RecordDigest...)
		b = append(b, ' ')
		b = append(b, e.ProjectionID...)
		b = append(b, '\n')
	}
	return b
}
