package main

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
)

const receiptSynopsis = "memtrail verify receipt FILE [--adapters PINS.json] [--trust FILE] [--key HEX]... [--at TIME]"

// receiptReport is the answer of "verify receipt": the receipt-level check
// of one projection record, ECCR or tombstone.
type receiptReport struct {
	Result string `json:"result"` // VALID or the refusal code
	Kind   string `json:"kind,omitempty"`
	ID     string `json:"id,omitempty"`
	Member string `json:"member,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Checks are "structure" (strict parsing) and "signature" (the key
	// and the signature), as in the other reports.
	Checks []verifier.Check `json:"checks"`
	file   string
}

func (r *receiptReport) Valid() bool { return r.Result == "VALID" }

func (r *receiptReport) JSON() []byte {
	b, _ := json.MarshalIndent(r, "", "  ")
	return append(b, '\n')
}

func (r *receiptReport) Summary() string {
	what := r.file
	if r.Kind != "" {
		what = fmt.Sprintf("%s %s", r.Kind, r.ID)
	}
	if r.Valid() {
		return fmt.Sprintf("%s: VALID\n", what)
	}
	s := fmt.Sprintf("%s: %s", what, r.Result)
	if r.Member != "" {
		s += " at " + r.Member
	}
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	return s + "\n"
}

// refuse records the failure of check (structure or signature); after a
// structure failure the signature is not run.
func (r *receiptReport) refuse(check string, err error) {
	var e *receipts.Error
	if errors.As(err, &e) {
		r.Result, r.Member, r.Detail = string(e.Code), e.Member, e.Reason
		if e.Err != nil {
			if r.Detail != "" {
				r.Detail += ": "
			}
			r.Detail += e.Err.Error()
		}
	} else {
		r.Result, r.Detail = string(receipts.CodeRecordInvalid), err.Error()
	}
	r.Checks = append(r.Checks, verifier.Check{Check: check, Outcome: verifier.Failed, Code: receipts.Code(r.Result), Member: r.Member, Detail: r.Detail})
	if check == verifier.CheckStructure {
		r.Checks = append(r.Checks, verifier.Check{Check: verifier.CheckSignature, Outcome: verifier.NotRun, Detail: "the receipt did not parse"})
	}
}

// verifyReceipt checks one receipt of any kind: strict parsing (member
// sets, types, the drafts' parser invariants) and its signature under the
// keys given. Nothing beyond the receipt is checked: "verify projection"
// and "verify compaction" take the material, manifests and proofs.
func verifyReceipt(args []string) error {
	fs := newVerifyFlags("receipt")
	adaptersFlag := fs.String("adapters", "", "pinned adapter keys, for projection records: one adapter_pin object or an array of them")
	trustFlag := fs.String("trust", "", "trust file: its adapters, compactor keys and tombstone issuer keys")
	var keyFlags stringList
	fs.Var(&keyFlags, "key", "compactor or issuer public key, 64 hex digits or SPKI base64url (repeatable; used with no validity window)")
	var atFlag timeFlag
	fs.Var(&atFlag, "at", "time at which keys must be current (revocations, validity windows), RFC 3339 (default now)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := checkUsage(receiptSynopsis, fs, pos, []string{"FILE"}); err != nil {
		return err
	}
	raw, err := readInput("receipt", pos[0])
	if err != nil {
		return inputError(err)
	}
	pins, trust, err := readPins(*trustFlag, *adaptersFlag)
	if err != nil {
		return err
	}
	var compactors, issuers receipts.Keyring
	if trust != nil {
		compactors, issuers = trust.Compactors, trust.Issuers
	}
	var rawKeys []ed25519.PublicKey
	for _, k := range keyFlags {
		pub, err := receipts.ParsePublicKey(k)
		if err != nil {
			return synopsisError(receiptSynopsis, fmt.Sprintf("--key %s: %v", k, err))
		}
		rawKeys = append(rawKeys, pub)
	}
	at := atFlag.orNow()

	rep := &receiptReport{file: pos[0]}
	// A compaction submission {"eccr": …, "manifest": …}, as "memtrail
	// sign compaction" writes it, is checked as its ECCR; its manifest is
	// beyond the receipt level ("verify compaction" checks it).
	if eccr, _, ok := verifier.SplitCompactionSubmission(raw); ok {
		raw = eccr
	}
	r, err := receipts.ParseReceipt(raw)
	if err != nil {
		rep.refuse(verifier.CheckStructure, err)
		return finish(rep, fs)
	}
	rep.Kind, rep.ID = string(r.Kind()), r.ID()
	switch r := r.(type) {
	case *receipts.ProjectionRecord:
		if len(pins) == 0 {
			return synopsisError(receiptSynopsis, "a projection record is checked under pinned adapter keys: give --adapters PINS.json or a --trust file with adapters")
		}
		err = receipts.VerifyProjectionSignature(r, pins, at)
	case *receipts.Compaction:
		// The registered keys come from the trust file, which also says
		// when a kid is a key of another role.
		err = verifyUnder(r.Signature.KID, compactors, rawKeys, at, "compactor", func(receipts.Keyring) error { return trust.VerifyCompaction(r, at) }, r.VerifySignatureWithKey)
	case *receipts.Tombstone:
		err = verifyUnder(r.Signature.KID, issuers, rawKeys, at, "issuer", func(receipts.Keyring) error { return trust.VerifyTombstone(r, at) }, r.VerifySignatureWithKey)
	}
	if errors.Is(err, errNoKeys) {
		return synopsisError(receiptSynopsis, fmt.Sprintf("a %s is checked under %s keys: give --trust FILE or --key HEX", r.Kind(), map[receipts.Kind]string{receipts.KindCompaction: "compactor", receipts.KindTombstone: "issuer"}[r.Kind()]))
	}
	rep.Checks = append(rep.Checks, verifier.Check{Check: verifier.CheckStructure, Outcome: verifier.Passed})
	if err != nil {
		rep.refuse(verifier.CheckSignature, err)
	} else {
		rep.Result = verifier.Valid
		rep.Checks = append(rep.Checks, verifier.Check{Check: verifier.CheckSignature, Outcome: verifier.Passed, Detail: "signed by " + signedBy(r)})
	}
	return finish(rep, fs)
}

var errNoKeys = errors.New("no keys given")

// verifyUnder verifies an ECCR or tombstone signature naming kid: under the
// trust file's registered keys (validity windows judged at at) when one
// has that kid, else under the given raw key with that kid.
func verifyUnder(kid string, registered receipts.Keyring, raw []ed25519.PublicKey, at time.Time, role string,
	withRegistry func(receipts.Keyring) error, withKey func(ed25519.PublicKey) error) error {
	if len(registered) == 0 && len(raw) == 0 {
		return errNoKeys
	}
	if _, ok := registered[kid]; ok || len(raw) == 0 {
		return withRegistry(registered)
	}
	for _, k := range raw {
		if receipts.KeyID(k) == kid {
			return withKey(k)
		}
	}
	return &receipts.Error{Code: receipts.CodeKeyNotPinned, Member: "signature.kid", Reason: fmt.Sprintf("no %s key given has kid %s", role, kid)}
}

// signedBy names the key a receipt's signature names.
func signedBy(r receipts.Receipt) string {
	switch r := r.(type) {
	case *receipts.ProjectionRecord:
		return "adapter key " + r.Adapter.KeyID + " of " + r.Adapter.ID
	case *receipts.Compaction:
		return "compactor key " + r.Signature.KID
	case *receipts.Tombstone:
		return "issuer key " + r.Signature.KID
	}
	return ""
}
