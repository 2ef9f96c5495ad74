package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/memtrail/memtrail/internal/apertomemory"
	"github.com/memtrail/memtrail/internal/atomicfile"
	"github.com/memtrail/memtrail/internal/projector"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
	"github.com/memtrail/memtrail/verifier/backend"
	"golang.org/x/term"
)

// The help of "memtrail verify" is the help of each of its subcommands
// ("memtrail verify <what> -h" prints one), between an overview and the
// output and exit status they share.
const verifyUsage = `Usage: memtrail verify <what> [flags] [arguments]

	memtrail verify receipt FILE [--adapters PINS.json] [--trust FILE] [--key HEX]... [--at TIME]
	memtrail verify projection RECORD.json (--adapters PINS.json | --trust FILE) [--material MATERIAL.json
	        [--vault FILE.amem [--passphrase-file FILE]]] [--policy POLICY.json] [--at TIME]
	        [--registry FILE | --log URL --log-policy TLOG_POLICY]
	memtrail verify compaction ECCR.json (--trust FILE | --key HEX...) [--manifest M.json]
	        [--at TIME] [--item DIGEST --source-proof FILE]...
	memtrail verify proof PROOF.tlog-proof --receipt R.json --policy TLOG_POLICY
	memtrail verify consistency OLD_CHECKPOINT NEW_CHECKPOINT --policy TLOG_POLICY [--proof FILE | --log URL]
	memtrail verify log (--log URL | --data DIR) --policy TLOG_POLICY --trust FILE [--at TIME]
	        [--grace DURATION] [--state FILE] [--json FILE] [--workers N]

Verify memtrail's evidence offline, trusting nothing the log says: only the
pinned keys, trust file and tlog-policy given on the command line.

` +
	verifyReceiptText + "\n" + verifyProjectionText + "\n" + verifyCompactionText + "\n" +
	verifyProofText + "\n" + verifyConsistencyText + "\n" + verifyLogText + "\n" + verifyOutputText + `
Example:

	$ memtrail verify projection record.json --adapters pins.json \
	      --material material.json --policy policy.json --registry seen.reg
	projection urn:memory-projection:apertomemory:composition-01: VALID
	  verified at 2026-07-29T17:01:00.000Z, scope FULL_PROJECTION_AND_NATIVE_SOURCE_RESULTS
	  …
	$ memtrail verify log --data memtrail-data --policy log.policy --trust trust.json --state audit.state
`

const verifyReceiptText = `"receipt" is the receipt-level check of a projection record, ECCR or
tombstone (the kind is read from the file; the {"eccr": …, "manifest": …}
file "memtrail sign compaction" writes is checked as its ECCR): strict parsing — member sets,
types, enumerations, the drafts' parser invariants — and the signature,
under pinned adapter keys (--adapters, or a --trust file's adapters) for a
projection record, and under a trust file's compactor or issuer keys, or
raw public keys (--key), for an ECCR or a tombstone. Its report is
{"result":"VALID","kind":…,"id":…,"checks":[…]} or
{"result":"<code>","kind":…,"id":…,"member":…,"detail":…,"checks":[…]}, where
kind is the receipt's kind and the checks are structure and signature.
`

const verifyProjectionText = `"projection" runs the whole verifier algorithm of the Memory Projection
Record draft (§7): member sets, the pinned adapter key (--adapters, and/or
the adapters of a --trust file) and its signature,
freshness and profiles under the verification policy, the digests of the
request, policy and trust snapshot, the source objects, the native source
results, every fragment and the projection bytes given in the material, and
single use of projection_id in a registry file (--registry) or a log (--log):
the log's answer counts only with an inclusion proof of the record at the
index it names, in a checkpoint that satisfies --log-policy (a C2SP
tlog-policy). Whatever material is missing is reported as skipped.

With --vault (an ApertoMemory .amem vault; its passphrase from
--passphrase-file or AMEM_PASSPHRASE, never a flag value) step 5 runs
natively: each source object of the material is opened with the vault's
keys and its trust, authorship, author key and custody derived under the
vault's keyring and compared with the record (native_source_result_mismatch),
each fragment is framed again from its object (fragment_digest_mismatch),
and the trust snapshot is the vault keyring's, which must be the one the
record's trust was evaluated under (trust_snapshot_digest_mismatch). The
material's own native results are then not used. The report's
native_source says what verified them.
`

const verifyCompactionText = `"compaction" checks an ECCR, bare or as the {"eccr": …, "manifest": …}
submission "memtrail sign compaction" writes: the draft's parser invariants
and signature (under a trust file's compactor keys, or raw public keys with
--key), and with a manifest — the submission's, or --manifest (JSON, as in a
submission) — the profile's rules (count, root, ceiling, retention, Bloom
format); each --item/--source-proof pair checks a source-item inclusion proof.
`

const verifyProofText = `"proof" checks a C2SP tlog-proof of a receipt under a C2SP tlog-policy: the
leaf hash recomputed from the receipt, the log's signature, the witness
quorum and the inclusion path.
`

const verifyConsistencyText = `"consistency" checks that NEW_CHECKPOINT extends OLD_CHECKPOINT, with a
consistency proof from a file or fetched from the log (none is needed when
the sizes are equal: the roots must then be equal); a fork or rollback is
reported with both signed checkpoints as evidence.
`

const verifyLogText = `"log" audits a whole log through its tiles: the checkpoint under the
tlog-policy, the entries against its root, every receipt under the trust file
(at the receipt's own time; a revoked key also at the time the log had
certainly reached when it logged the receipt), and the erasure-lineage rules in log order, with
the open obligations and their age. With --state it resumes where the last
audit stopped, reading only new entries after checking consistency with the
saved checkpoint.
`

const verifyOutputText = `Every command writes a readable summary to standard error and a JSON report
(the result, each check and the closed codes) to --json FILE, or with
--json - to standard output. Without --json the report goes to standard
output unless that is a terminal: a script that reads or redirects standard
output gets the report, a person at a terminal the summary alone.
docs/verify.md describes the reports, their codes and the registry and
state files.

Exit status: 0 if and only if everything verified; 1 if something was
refused (the report's result is its code); 2 on a usage error or when an
input could not be read.
`

// verifyHelp returns the help of "memtrail verify name": its synopsis, what
// it checks, and the output and exit status every verify command shares.
func verifyHelp(name string) string {
	h := map[string]struct{ synopsis, text string }{
		"receipt":     {receiptSynopsis, verifyReceiptText},
		"projection":  {projectionSynopsis, verifyProjectionText},
		"compaction":  {compactionSynopsis, verifyCompactionText},
		"proof":       {proofSynopsis, verifyProofText},
		"consistency": {consistencySynopsis, verifyConsistencyText},
		"log":         {logSynopsis, verifyLogText},
	}[name]
	synopsis := h.synopsis
	if !strings.Contains(synopsis, "--json") {
		synopsis += " [--json FILE]"
	}
	return "Usage: " + synopsis + "\n\n" + h.text + "\n" + verifyOutputText
}

func init() {
	register(&command{name: "verify", synopsis: "verify receipts, proofs, checkpoints and erasure lineage offline", run: runVerify})
}

func runVerify(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, verifyUsage)
		return errUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout(), verifyUsage)
		return nil
	case "receipt":
		return verifyReceipt(args[1:])
	case "projection":
		return verifyProjection(args[1:])
	case "compaction":
		return verifyCompaction(args[1:])
	case "proof":
		return verifyProof(args[1:])
	case "consistency":
		return verifyConsistency(args[1:])
	case "log":
		return verifyLog(args[1:])
	}
	fmt.Fprintf(os.Stderr, "memtrail: error: unknown verify subcommand %q\n", args[0])
	fmt.Fprintf(os.Stderr, "memtrail: hint: one of receipt, projection, compaction, proof, consistency, log\n")
	return errUsage
}

// verifyOut is where the verify commands write; tests replace it.
var verifyOut struct {
	stdout, stderr io.Writer
}

func stdout() io.Writer {
	if verifyOut.stdout != nil {
		return verifyOut.stdout
	}
	return os.Stdout
}

func stderr() io.Writer {
	if verifyOut.stderr != nil {
		return verifyOut.stderr
	}
	return os.Stderr
}

// inputError reports a file that could not be read or parsed: exit 2.
// Hints err already carries (readTlogPolicy's, readTrust's) come first.
func inputError(err error, hints ...string) error {
	var he *hintError
	if errors.As(err, &he) {
		hints = append(append([]string(nil), he.hints...), hints...)
	}
	printError(stderr(), withHint(err, hints...))
	return exitError{2}
}

// synopsisError prints the synopsis of a subcommand and a hint: exit 2.
func synopsisError(synopsis string, hints ...string) error {
	fmt.Fprintf(stderr(), "Usage: %s\n", synopsis)
	for _, h := range hints {
		fmt.Fprintf(stderr(), "memtrail: hint: %s\n", h)
	}
	return errUsage
}

// report is what every verification returns.
type report interface {
	Valid() bool
	JSON() []byte
	Summary() string
}

// finish writes the summary to standard error and the JSON report where
// --json of fs says, and maps the report's result to the exit status.
// Without --json the report goes to standard output unless that is a
// terminal (a person there reads the summary; --json - shows both).
func finish(r report, fs *flag.FlagSet) error {
	var err error
	switch path := fs.Lookup("json").Value.String(); {
	case path == "-", path == "" && !stdoutIsTerminal():
		_, err = stdout().Write(r.JSON())
	case path != "":
		err = atomicfile.Write(path, r.JSON(), 0o644)
	}
	if err != nil {
		return inputError(fmt.Errorf("couldn't write the report: %w", err))
	}
	fmt.Fprint(stderr(), r.Summary())
	if !r.Valid() {
		return exitError{1}
	}
	return nil
}

// stdoutIsTerminal reports whether the verify commands write to a terminal
// (never when a test has replaced their output).
func stdoutIsTerminal() bool {
	return verifyOut.stdout == nil && term.IsTerminal(int(os.Stdout.Fd()))
}

// newVerifyFlags returns the flag set of "verify name": its usage is that
// subcommand's help, and it has the --json flag of every verify command
// (see report).
func newVerifyFlags(name string) *flag.FlagSet {
	fs := newFlagSet("verify "+name, verifyHelp(name))
	fs.SetOutput(stderr())
	fs.String("json", "", "write the JSON report to this file (\"-\": standard output); without it the report goes to standard output unless that is a terminal")
	return fs
}

// parseMixed parses flags mixed with positional arguments (parseInterleaved
// has first cut off what follows "--"). -h prints the usage text; any other
// parse failure prints only the error, a hint for the flag's format and a
// pointer to -h, not the whole usage.
func parseMixed(fs *flag.FlagSet, args []string) ([]string, error) {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	defer func() { fs.Usage = usage; fs.SetOutput(out) }()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			fs.SetOutput(out)
			if errors.Is(err, flag.ErrHelp) {
				usage()
				return nil, flag.ErrHelp
			}
			fmt.Fprintf(out, "memtrail: error: %s\n", describeFlagError(fs, err))
			if h := flagHint(fs, err); h != "" {
				fmt.Fprintf(out, "memtrail: hint: %s\n", h)
			}
			fmt.Fprintf(out, "memtrail: hint: run \"%s -h\" for its flags\n", fs.Name())
			return nil, errUsage
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// badFlag returns the flag named by a flag package "invalid value" error.
func badFlag(fs *flag.FlagSet, err error) *flag.Flag {
	var value, name string
	msg := err.Error()
	if _, e := fmt.Sscanf(msg, "invalid value %q for flag -%s", &value, &name); e != nil {
		return nil
	}
	return fs.Lookup(strings.TrimSuffix(name, ":"))
}

// describeFlagError rewrites the flag package's message in the command's
// spelling of flags (--at, not -at).
func describeFlagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	// A flag such as --wait[=DURATION] is boolean to the flag package,
	// which calls a bad duration a bad boolean.
	var value, name string
	if _, e := fmt.Sscanf(msg, "invalid boolean value %q for -%s", &value, &name); e == nil {
		if f := fs.Lookup(strings.TrimSuffix(name, ":")); f != nil {
			if _, ok := f.Value.(*waitFlag); ok {
				return strings.Replace(strings.Replace(msg, "invalid boolean value", "invalid value", 1), "for -"+f.Name, "for --"+f.Name, 1)
			}
		}
	}
	if f := badFlag(fs, err); f != nil {
		msg = strings.Replace(msg, "for flag -"+f.Name, "for --"+f.Name, 1)
		msg = strings.TrimSuffix(msg, ": parse error")
		msg = strings.TrimSuffix(msg, ": invalid syntax")
	}
	return msg
}

// flagHint says what format the flag of a bad value takes.
func flagHint(fs *flag.FlagSet, err error) string {
	f := badFlag(fs, err)
	if f == nil {
		return ""
	}
	switch f.Value.(type) {
	case *timeFlag:
		return "--" + f.Name + " takes an RFC 3339 time such as 2026-12-01T00:00:00Z"
	}
	// The flag package's own values are not exported types: tell them by
	// their default's form.
	switch {
	case f.Name == "grace" || strings.HasSuffix(f.DefValue, "s") && strings.ContainsAny(f.DefValue, "0123456789"):
		return "durations are Go durations such as 48h or 90m (no \"d\": 2 days is 48h)"
	case f.Name == "workers":
		return "--" + f.Name + " takes a whole number"
	}
	return ""
}

// timeFlag is an RFC 3339 time; zero when not given.
type timeFlag struct{ t time.Time }

func (f *timeFlag) String() string {
	if f.t.IsZero() {
		return ""
	}
	return receipts.FormatTimestamp(f.t)
}

func (f *timeFlag) Set(s string) error {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return errors.New("not an RFC 3339 time")
	}
	f.t = t.UTC()
	return nil
}

func (f *timeFlag) orNow() time.Time {
	if f.t.IsZero() {
		return time.Now().UTC()
	}
	return f.t
}

func readInput(what, path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("couldn't read the %s: %w", what, err)
	}
	return b, nil
}

// readAdapterPins reads an --adapters file; its errors are input errors.
func readAdapterPins(path string) ([]*receipts.AdapterPin, error) {
	b, err := readInput("adapter pins", path)
	if err != nil {
		return nil, inputError(err)
	}
	pins, err := receipts.ParseAdapterPins(b)
	if err != nil {
		return nil, inputError(fmt.Errorf("%s: %w", path, err), "--adapters takes adapter_pin objects, as in the interop vectors")
	}
	return pins, nil
}

// readPins returns the pinned adapter keys of a --trust file's adapters
// and of an --adapters file, either of which may be "". Both count: a key
// pinned in both is judged under the most restrictive of its pins (see
// receipts.AdapterPin), and the two may not pin different public keys
// under one adapter id and key id.
func readPins(trustPath, adaptersPath string) ([]*receipts.AdapterPin, *receipts.Trust, error) {
	var pins []*receipts.AdapterPin
	var trust *receipts.Trust
	if trustPath != "" {
		t, err := readTrust(trustPath)
		if err != nil {
			return nil, nil, inputError(err)
		}
		trust, pins = t, append(pins, t.Adapters...)
	}
	if adaptersPath != "" {
		p, err := readAdapterPins(adaptersPath)
		if err != nil {
			return nil, nil, err
		}
		for _, q := range p {
			for _, tp := range pins {
				if tp.AdapterID == q.AdapterID && tp.KeyID == q.KeyID && !tp.PublicKey.Equal(q.PublicKey) {
					return nil, nil, inputError(fmt.Errorf("%s and %s pin key %q of adapter %q to different public keys", trustPath, adaptersPath, q.KeyID, q.AdapterID),
						"a key id names one key: remove the stale pin from one of the files")
				}
			}
		}
		pins = append(pins, p...)
	}
	return pins, trust, nil
}

func readTlogPolicy(path string) (*verifier.Policy, error) {
	b, err := readInput("tlog-policy", path)
	if err != nil {
		return nil, err
	}
	p, err := verifier.ParsePolicy(b)
	if err != nil {
		return nil, withHint(fmt.Errorf("%s: %w", path, err), policyHints(b)...)
	}
	return p, nil
}

// policyHints explains a tlog-policy that does not parse, with the minimal
// policy of an unwitnessed log as the example; a file that holds only a
// verifier key (as "memtrail keygen" or the log's /v1/log gives it) is
// named as such.
func policyHints(b []byte) []string {
	fields := strings.Fields(string(b))
	vkey := "<the log's verifier key>"
	bare := len(fields) == 1 && strings.Count(fields[0], "+") >= 2
	if bare {
		vkey = fields[0]
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "log" && !bare {
			vkey = f[1]
			break
		}
	}
	example := []string{"the minimal policy for a log without witnesses is these two lines:", "    log " + vkey, "    quorum none"}
	if bare {
		return append([]string{"this file is a bare verifier key (vkey), not a tlog-policy"}, example...)
	}
	return append([]string{"a C2SP tlog-policy has log, witness and group lines and one quorum line (\"quorum none\" when no witness is required)"}, example...)
}

// checkWritable checks, before any work, that a file the command will
// write at path can be written there: it creates a temporary file beside
// it and removes it. what names the flag for the error.
func checkWritable(what, path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s %s is a directory, not a file", what, path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".check-*")
	if err != nil {
		return fmt.Errorf("%s %s cannot be written: %w", what, path, err)
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return nil
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

const projectionSynopsis = "memtrail verify projection RECORD.json (--adapters PINS.json | --trust FILE) [--material MATERIAL.json [--vault FILE.amem [--passphrase-file FILE]]] [--policy POLICY.json] [--at TIME] [--registry FILE | --log URL --log-policy TLOG_POLICY]"

func verifyProjection(args []string) error {
	fs := newVerifyFlags("projection")
	adaptersFlag := fs.String("adapters", "", "pinned adapter keys: one adapter_pin object or an array of them")
	trustFlag := fs.String("trust", "", "trust file: its adapters are pinned adapter keys (with or instead of --adapters)")
	materialFlag := fs.String("material", "", "verification material (interop verification_material shape)")
	policyFlag := fs.String("policy", "", "verification policy (interop verification_policy shape)")
	var atFlag timeFlag
	fs.Var(&atFlag, "at", "verification time, RFC 3339 (default: the policy's verification_time, or now)")
	registryFlag := fs.String("registry", "", "registry file: register projection_id for single use")
	logFlag := fs.String("log", "", "memtrail log URL: bind projection_id to this record in the log (needs --log-policy)")
	logPolicyFlag := fs.String("log-policy", "", "C2SP tlog-policy of the --log (its key and witness quorum): the log's answers count only with inclusion proofs under it")
	vaultFlag := fs.String("vault", "", "ApertoMemory vault (.amem): open the material's source objects natively (step 5)")
	passFlag := passphraseFlag(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := checkUsage(projectionSynopsis, fs, pos, []string{"RECORD.json"}); err != nil {
		return err
	}
	switch {
	case *adaptersFlag == "" && *trustFlag == "":
		return synopsisError(projectionSynopsis, "the record is checked under pinned adapter keys: give --adapters PINS.json or the log's --trust file (its adapters)")
	case *registryFlag != "" && *logFlag != "":
		return synopsisError(projectionSynopsis, "give --registry or --log, not both: each is a registry of single use")
	case *logFlag != "" && *logPolicyFlag == "":
		return synopsisError(projectionSynopsis, "--log needs --log-policy TLOG_POLICY, the log's C2SP tlog-policy (as \"verify proof --policy\" takes): single use against a log is accepted only with an inclusion proof of the record in a checkpoint that satisfies it")
	case *logPolicyFlag != "" && *logFlag == "":
		return synopsisError(projectionSynopsis, "--log-policy is the tlog-policy of the --log; give it with --log URL")
	case *vaultFlag != "" && *materialFlag == "":
		return synopsisError(projectionSynopsis, "--vault opens the source objects of --material MATERIAL.json: give both (\"memtrail project\" writes material.json)")
	case *passFlag != "" && *vaultFlag == "":
		return synopsisError(projectionSynopsis, "--passphrase-file is the passphrase of the --vault; give it with --vault FILE.amem")
	}
	if *registryFlag != "" {
		if err := checkWritable("--registry", *registryFlag); err != nil {
			return inputError(err, "the registry is written beside itself (a temporary file, then a rename): give a path in a directory that exists and that you can write; nothing was verified")
		}
	}
	record, err := readInput("record", pos[0])
	if err != nil {
		return inputError(err)
	}
	pins, _, err := readPins(*trustFlag, *adaptersFlag)
	if err != nil {
		return err
	}
	opts := verifier.ProjectionOptions{Pins: pins, Time: atFlag.t}
	if *materialFlag != "" {
		b, err := readInput("material", *materialFlag)
		if err != nil {
			return inputError(err)
		}
		if opts.Material, err = verifier.ParseMaterial(b); err != nil {
			return inputError(fmt.Errorf("%s: %w", *materialFlag, err))
		}
	}
	if *policyFlag != "" {
		b, err := readInput("verification policy", *policyFlag)
		if err != nil {
			return inputError(err)
		}
		if opts.Policy, err = verifier.ParseVerificationPolicy(b); err != nil {
			return inputError(fmt.Errorf("%s: %w", *policyFlag, err))
		}
	}
	if *vaultFlag != "" {
		c, id, err := openVault(*vaultFlag, *passFlag)
		if err != nil {
			return inputError(err)
		}
		// The opt-in reports what an object that cannot be authenticated
		// is, at most unverified, instead of refusing it: a record may
		// deliver such objects under a policy that opted in.
		v, err := c.OpenWithIdentity(id, &apertomemory.OpenOptions{AllowUnverified: true})
		if err != nil {
			return inputError(fmt.Errorf("vault %s: %w", *vaultFlag, err))
		}
		opts.Source = &projector.NativeVerifier{Vault: v, Name: *vaultFlag}
	}
	if opts.Time.IsZero() && (opts.Policy == nil || opts.Policy.VerificationTime == nil) {
		opts.Time = time.Now().UTC()
	}
	switch {
	case *registryFlag != "":
		opts.Registry = backend.NewFileRegistry(*registryFlag)
	case *logFlag != "":
		tp, err := readTlogPolicy(*logPolicyFlag)
		if err != nil {
			return inputError(err)
		}
		if opts.Registry, err = backend.NewLogRegistry(*logFlag, tp, nil); err != nil {
			return synopsisError(projectionSynopsis, err.Error())
		}
	}
	ctx, stop := signalContext()
	defer stop()
	rep, err := verifier.VerifyProjection(ctx, record, opts)
	if err != nil {
		// The registry did not answer, so there is no verdict: no report
		// and no summary, whose checks so far would read as VALID. (A
		// registry that refuses the record answers: that is a failed
		// single_use check in the report.)
		switch {
		case *registryFlag != "" && errors.Is(err, verifier.ErrMalformed):
			return inputError(err, "the record was not registered: "+*registryFlag+" is not a projection registry (docs/verify.md, \"Single use\"); a registry that does not parse is never reset — restore it or fix the line named",
				"to start a new registry, give a path that does not exist yet: it is created at the first registration")
		case *registryFlag != "" && errors.Is(err, os.ErrNotExist):
			return inputError(err, "the record was not registered: the directory of --registry must exist (it holds the registry, its lock and its temporary file)")
		case *registryFlag != "" && errors.Is(err, os.ErrPermission):
			return inputError(err, "the record was not registered: --registry, its lock file and its directory must be writable")
		}
		return inputError(err, "the record was not registered; run the verification again once the registry answers")
	}
	return finish(rep, fs)
}

const compactionSynopsis = "memtrail verify compaction ECCR.json (--trust FILE | --key HEX...) [--manifest M.json] [--at TIME] [--item DIGEST --source-proof FILE]..."

func verifyCompaction(args []string) error {
	fs := newVerifyFlags("compaction")
	trustFlag := fs.String("trust", "", "trust file: its compactor keys and sensitivity lattice")
	var keyFlags, itemFlags, proofFlags stringList
	fs.Var(&keyFlags, "key", "compactor public key, 64 hex digits (repeatable)")
	manifestFlag := fs.String("manifest", "", "the compaction's source manifest, JSON (default: the submission's, when the file is {\"eccr\", \"manifest\"})")
	var atFlag timeFlag
	fs.Var(&atFlag, "at", "time at which the trust file's keys must be current, RFC 3339 (default now)")
	fs.Var(&itemFlags, "item", "source item digest whose inclusion proof follows (repeatable, paired with --source-proof)")
	fs.Var(&proofFlags, "source-proof", "source-item proof document or the log's /v1/compactions/{id}/sources/{item}/proof answer")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := checkUsage(compactionSynopsis, fs, pos, []string{"ECCR.json"}); err != nil {
		return err
	}
	switch {
	case (*trustFlag == "") == (len(keyFlags) == 0):
		return synopsisError(compactionSynopsis, "give either --trust or --key: the signature is checked under one of them")
	case len(itemFlags) != len(proofFlags):
		return synopsisError(compactionSynopsis, "each --item needs its --source-proof, in the same order")
	}
	eccr, err := readInput("ECCR", pos[0])
	if err != nil {
		return inputError(err)
	}
	// The file "memtrail sign compaction" writes is the submission
	// {"eccr": …, "manifest": …}: its manifest is the one to check.
	var inlineManifest []byte
	if e, m, ok := verifier.SplitCompactionSubmission(eccr); ok {
		eccr, inlineManifest = e, m
	}
	opts := verifier.CompactionOptions{Time: atFlag.orNow()}
	if *trustFlag != "" {
		t, err := readTrust(*trustFlag)
		if err != nil {
			return inputError(err)
		}
		opts.Keys, opts.Lattice, opts.Trust = t.Compactors, t.Lattice, t
	}
	for _, k := range keyFlags {
		pub, err := receipts.ParsePublicKey(k)
		if err != nil || len(k) != 64 {
			return synopsisError(compactionSynopsis, fmt.Sprintf("--key %s is not a valid Ed25519 public key in 64 lowercase hex digits", k))
		}
		opts.RawKeys = append(opts.RawKeys, ed25519.PublicKey(pub))
	}
	if *manifestFlag != "" {
		if opts.Manifest, err = readManifestFlag(*manifestFlag); err != nil {
			return err
		}
		if inlineManifest != nil && !sameManifest(opts.Manifest, inlineManifest) {
			return inputError(fmt.Errorf("the --manifest %s is not the manifest in %s", *manifestFlag, pos[0]),
				"the compaction submission carries its manifest: leave out --manifest to check that one, or give the bare ECCR with --manifest")
		}
	} else {
		opts.Manifest = inlineManifest
	}
	for i, item := range itemFlags {
		if !receipts.IsDigest(item) {
			return synopsisError(compactionSynopsis, "--item takes an item digest, \"sha256:\" and 64 lowercase hex digits")
		}
		doc, err := readInput("source proof", proofFlags[i])
		if err != nil {
			return inputError(err)
		}
		opts.SourceProofs = append(opts.SourceProofs, verifier.SourceProofInput{Item: item, Document: doc})
	}
	return finish(verifier.VerifyCompaction(eccr, opts), fs)
}

// readManifestFlag reads a --manifest file: a source manifest in JSON.
// The "DIGEST LABEL [EXPIRES_AT]" lines "memtrail sign compaction" also
// takes are a producer's input, not the manifest the ECCR commits to.
func readManifestFlag(path string) ([]byte, error) {
	b, err := readInput("manifest", path)
	if err != nil {
		return nil, inputError(err)
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] != '{' {
		return nil, inputError(fmt.Errorf("%s is not a JSON source manifest", path),
			`--manifest takes the manifest as JSON, {"manifest_version": "1.0", "items": [{"item_digest": …, "sensitivity": …}, …]} (the "manifest" member of the file "memtrail sign compaction" writes), not the "DIGEST LABEL [EXPIRES_AT]" lines "sign compaction --manifest" reads`,
			"or give the file \"memtrail sign compaction\" wrote, {\"eccr\": …, \"manifest\": …}, without --manifest: its manifest is checked")
	}
	return b, nil
}

// sameManifest reports whether two manifest documents are the same
// manifest: the same bytes, or both parsing to the same canonical form.
func sameManifest(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	ma, err1 := receipts.ParseManifest(a)
	mb, err2 := receipts.ParseManifest(b)
	return err1 == nil && err2 == nil && bytes.Equal(ma.Canonical(), mb.Canonical())
}

const proofSynopsis = "memtrail verify proof PROOF.tlog-proof --receipt R.json --policy TLOG_POLICY"

func verifyProof(args []string) error {
	fs := newVerifyFlags("proof")
	receiptFlag := fs.String("receipt", "", "the receipt the proof is for (a compaction may be given as its submission)")
	policyFlag := fs.String("policy", "", "C2SP tlog-policy: the log's key and the witness quorum")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := checkUsage(proofSynopsis, fs, pos, []string{"PROOF.tlog-proof"}, "receipt", "policy"); err != nil {
		return err
	}
	proof, err := readInput("proof", pos[0])
	if err != nil {
		return inputError(err)
	}
	receipt, err := readInput("receipt", *receiptFlag)
	if err != nil {
		return inputError(err)
	}
	p, err := readTlogPolicy(*policyFlag)
	if err != nil {
		return inputError(err)
	}
	return finish(verifier.VerifyReceiptProof(p, proof, receipt), fs)
}

const consistencySynopsis = "memtrail verify consistency OLD_CHECKPOINT NEW_CHECKPOINT --policy TLOG_POLICY [--proof FILE | --log URL]"

func verifyConsistency(args []string) error {
	fs := newVerifyFlags("consistency")
	policyFlag := fs.String("policy", "", "C2SP tlog-policy: the log's key and the witness quorum")
	proofFlag := fs.String("proof", "", "consistency proof: the log's /v1/consistency answer, or one base64 hash per line")
	logFlag := fs.String("log", "", "memtrail log URL to fetch the consistency proof from")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := checkUsage(consistencySynopsis, fs, pos, []string{"OLD_CHECKPOINT", "NEW_CHECKPOINT"}, "policy"); err != nil {
		return err
	}
	switch {
	case *proofFlag != "" && *logFlag != "":
		return synopsisError(consistencySynopsis, "give --proof FILE or --log URL, not both")
	}
	var cps [2][]byte
	for i, what := range []string{"old checkpoint", "new checkpoint"} {
		if cps[i], err = readInput(what, pos[i]); err != nil {
			return inputError(err)
		}
		if bytes.HasPrefix(cps[i], []byte("c2sp.org/tlog-proof@v1\n")) {
			return inputError(fmt.Errorf("%s: this file is a tlog-proof, not a checkpoint (the %s)", pos[i], what),
				"a checkpoint is the log's signed note: the origin, the tree size and the root hash, then its signatures (GET /checkpoint or /v1/checkpoints/{size}); a tlog-proof carries one after its first empty line")
		}
	}
	older, newer := cps[0], cps[1]
	p, err := readTlogPolicy(*policyFlag)
	if err != nil {
		return inputError(err)
	}
	// The proof is needed only between two checkpoints that open, of
	// sizes 0 < old < new; otherwise the report says why without one
	// (equal sizes: the roots must be equal).
	var proof [][]byte
	oc, err1 := verifier.OpenCheckpoint(p, older)
	nc, err2 := verifier.OpenCheckpoint(p, newer)
	if err1 == nil && err2 == nil && oc.Size > 0 && oc.Size < nc.Size {
		switch {
		case *proofFlag != "":
			b, err := readInput("consistency proof", *proofFlag)
			if err != nil {
				return inputError(err)
			}
			if proof, err = backend.ParseConsistencyAnswer(b, oc.Size, nc.Size); err != nil {
				return inputError(fmt.Errorf("%s: %w", *proofFlag, err))
			}
		case *logFlag != "":
			src, err := backend.NewHTTP(*logFlag, nil)
			if err != nil {
				return synopsisError(consistencySynopsis, err.Error())
			}
			ctx, stop := signalContext()
			defer stop()
			if proof, err = src.ConsistencyProof(ctx, oc.Size, nc.Size); err != nil {
				return inputError(err, "check --log; the log serves proofs only up to its published size")
			}
		default:
			return synopsisError(consistencySynopsis, fmt.Sprintf("from size %d to %d a consistency proof is needed: give --proof FILE or --log URL", oc.Size, nc.Size))
		}
	}
	rep := verifier.VerifyCheckpoints(p, older, newer, proof)
	err = finish(rep, fs)
	if rep.Fork != nil && rep.Fork.Kind == verifier.ForkRollback {
		fmt.Fprintf(stderr(), "memtrail: hint: OLD_CHECKPOINT (size %d) is larger than NEW_CHECKPOINT (size %d): if %s is the newer one, the arguments are swapped — the older checkpoint comes first\n",
			*rep.OldSize, *rep.NewSize, pos[0])
	}
	return err
}

const logSynopsis = "memtrail verify log (--log URL | --data DIR) --policy TLOG_POLICY --trust FILE [--at TIME] [--grace DURATION] [--state FILE] [--json FILE] [--workers N]"

func verifyLog(args []string) error {
	fs := newVerifyFlags("log")
	logFlag := fs.String("log", "", "URL of the log to audit")
	dataFlag := fs.String("data", "", "data directory of the log to audit (as \"memtrail serve --data\" writes it)")
	policyFlag := fs.String("policy", "", "C2SP tlog-policy: the log's key and the witness quorum")
	trustFlag := fs.String("trust", "", "trust file: the keys every receipt must be signed with")
	var atFlag timeFlag
	fs.Var(&atFlag, "at", "audit time, from which open obligations are aged, RFC 3339 (default now)")
	graceFlag := fs.Duration("grace", verifier.DefaultGrace, "how long an erasure obligation may stay open before it is a violation")
	stateFlag := fs.String("state", "", "state file: resume from it, and save the new state there")
	jsonFlag := fs.Lookup("json").Value.String
	workersFlag := fs.Int("workers", 0, "receipts verified in parallel (default: the number of CPUs)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := checkUsage(logSynopsis, fs, pos, nil, "policy", "trust"); err != nil {
		return err
	}
	switch {
	case (*logFlag == "") == (*dataFlag == ""):
		return synopsisError(logSynopsis, "give either --log URL or --data DIR")
	case *graceFlag < 0:
		return synopsisError(logSynopsis, "--grace must not be negative")
	}
	// The audit may take hours: find out now, not after it, that its
	// results could not be saved.
	for _, out := range []struct{ flag, path string }{{"--state", *stateFlag}, {"--json", jsonFlag()}} {
		if out.path != "" && out.path != "-" {
			if err := checkWritable(out.flag, out.path); err != nil {
				return inputError(err, "give a path in a directory that exists and that you can write; nothing was audited")
			}
		}
	}
	p, err := readTlogPolicy(*policyFlag)
	if err != nil {
		return inputError(err)
	}
	trust, err := readTrust(*trustFlag)
	if err != nil {
		return inputError(err)
	}
	var src verifier.LogSource
	if *dataFlag != "" {
		if src, err = backend.NewDir(*dataFlag); err != nil {
			return inputError(err, "--data takes the directory given to \"memtrail serve --data\"")
		}
	} else if src, err = backend.NewHTTP(*logFlag, nil); err != nil {
		return synopsisError(logSynopsis, err.Error())
	}
	opts := verifier.AuditOptions{Policy: p, Trust: trust, At: atFlag.orNow(), Grace: *graceFlag, Workers: *workersFlag}
	if *stateFlag != "" {
		b, err := os.ReadFile(*stateFlag)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return inputError(fmt.Errorf("couldn't read the state file: %w", err))
		default:
			if opts.State, err = verifier.ParseAuditState(b); err != nil {
				return inputError(fmt.Errorf("%s: %w", *stateFlag, err), "remove the state file to audit the whole log again")
			}
		}
	}
	prog := newAuditProgress()
	opts.Progress = prog.update
	ctx, stop := signalContext()
	defer stop()
	rep, state, err := verifier.AuditLog(ctx, src, opts)
	prog.done()
	if err != nil {
		return inputError(err)
	}
	if *stateFlag != "" {
		switch {
		case state != nil:
			if err := atomicfile.Write(*stateFlag, state.Marshal(), 0o600); err != nil {
				return inputError(fmt.Errorf("couldn't save the state: %w", err))
			}
		case opts.State != nil:
			fmt.Fprintf(stderr(), "memtrail: the state file %s is kept as it was: this audit did not complete over a sound log\n", *stateFlag)
		}
	}
	return finish(rep, fs)
}

// auditProgress shows progress on standard error when it is a terminal.
type auditProgress struct {
	tty   bool
	start time.Time
	shown bool
}

func newAuditProgress() *auditProgress {
	return &auditProgress{tty: verifyOut.stderr == nil && stderrIsTerminal(), start: time.Now()}
}

func (p *auditProgress) update(done, total uint64) {
	if !p.tty {
		return
	}
	rate := float64(done) / max(time.Since(p.start).Seconds(), 1e-3)
	fmt.Fprintf(os.Stderr, "\raudited %d of %d entries (%.0f%%, %.0f/s)  ", done, total, 100*float64(done)/float64(max(total, 1)), rate)
	p.shown = true
}

func (p *auditProgress) done() {
	if p.shown {
		fmt.Fprintln(os.Stderr)
	}
}
