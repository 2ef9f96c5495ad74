package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/memtrail/memtrail/internal/atomicfile"
	"github.com/memtrail/memtrail/internal/projector"
)

const projectSynopsis = "memtrail project --vault FILE.amem --key ADAPTER.pem --request FILE --selection-policy FILE [--passphrase-file FILE] [--adapter-id URI] [--key-id ID] [--id URI] [--out DIR] [--log URL [--proof-dir DIR]]"

const projectUsage = `Usage: memtrail project --vault FILE.amem --key ADAPTER.pem --request FILE
	--selection-policy FILE [--passphrase-file FILE] [--adapter-id URI]
	[--key-id ID] [--id URI] [--out DIR] [--log URL [--proof-dir DIR]]

Project memories from an ApertoMemory vault into a context, and sign the
Memory Projection Record of what was delivered (draft -01, section 7).

Every object of the vault is opened and verified natively (one Argon2id run
for the vault), its trust derived from the key that verified it against the
vault's keyring, which is recorded as the trust snapshot with the time it
was read (trust_evaluated_at). The selection policy (docs/profile.md,
"Selection policy") says which trust levels, scopes and mem-types are
eligible and how many bytes and objects the projection may hold; eligible
objects are ranked by confidence (absent last), then recency, and taken
while they fit. Every object not delivered is counted under exactly one
reason: authentication_failed or schema_invalid when the source profile
refuses it, policy_filtered when the policy does not admit it,
context_limit when it does not fit. Each delivered object is framed with
urn:apertomemory:context-frame:v0; the projection is the fragments
concatenated. Content whose trust is not "self" is data, not instructions:
whoever puts the projection in a model's context must keep it delimited as
such. The recall request is committed to by its digest, not interpreted.

It writes three files to --out (default the current directory):

	record.json     the signed record (JCS, one line)
	projection.txt  the projection bytes, exactly
	material.json   the verification material: request, policy and
	                trust-snapshot bytes, the sealed source objects, the
	                fragments, the projection and the native source results

and prints how many objects were delivered and excluded for what reason.
With --log it then submits record.json to the log (as "memtrail submit"
would; --proof-dir waits for its proof and writes it there).

The passphrase is read from --passphrase-file or the environment variable
AMEM_PASSPHRASE, never from a flag value. The adapter defaults are the
development adapter of "memtrail serve" (urn:memtrail:adapter:dev,
dev-adapter-key); --id defaults to a fresh urn:uuid.

The command exits 0 if it wrote (and, with --log, logged) the record, 1 if
it could not (a vault, key, request or policy that cannot be read, a wrong
passphrase, a policy that is not valid, a submission the log refused), and 2
on a usage error.

Example:

	$ memtrail project --vault me.amem --key memtrail-data/dev/adapter.pem \
	      --request request.json --selection-policy policy.json --out out
	projection urn:uuid:…: delivered 2 of 3 objects, 810 bytes
	  excluded 1: authentication_failed 0, schema_invalid 0, policy_filtered 1, context_limit 0
	  wrote out/record.json, out/projection.txt, out/material.json
`

func init() {
	register(&command{name: "project", synopsis: "project memories from an ApertoMemory vault and sign the projection record", run: runProject})
}

func runProject(args []string) error {
	fs := newFlagSet("project", projectUsage)
	vaultFlag := fs.String("vault", "", "ApertoMemory vault (.amem export container)")
	keyFlag := fs.String("key", "", "adapter private key (PEM PKCS#8)")
	requestFlag := fs.String("request", "", "file holding the exact recall-request bytes")
	policyFlag := fs.String("selection-policy", "", "file holding the selection policy (docs/profile.md, \"Selection policy\")")
	passFlag := passphraseFlag(fs)
	adapterFlag := fs.String("adapter-id", "urn:memtrail:adapter:dev", "adapter id")
	keyIDFlag := fs.String("key-id", "dev-adapter-key", "adapter key id")
	idFlag := fs.String("id", "", "projection_id (default a fresh urn:uuid)")
	outFlag := fs.String("out", ".", "directory to write record.json, projection.txt and material.json to")
	logFlag := fs.String("log", "", "submit the record to this log, e.g. http://127.0.0.1:8080")
	proofDirFlag := fs.String("proof-dir", "", "with --log: wait for the record's tlog-proof and write it to this directory")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := checkUsage(projectSynopsis, fs, pos, nil, "vault", "key", "request", "selection-policy"); err != nil {
		return err
	}
	if *proofDirFlag != "" && *logFlag == "" {
		return synopsisUsage(projectSynopsis, "--proof-dir needs --log", "the proof comes from the log the record is submitted to")
	}
	if *logFlag != "" {
		if _, err := parseLogURL(*logFlag); err != nil {
			return err
		}
	}
	priv, err := readKey(*keyFlag)
	if err != nil {
		return err
	}
	request, err := readCapped("recall request", *requestFlag, projector.MaxRequestSize)
	if err != nil {
		return err
	}
	policy, err := readCapped("selection policy", *policyFlag, projector.MaxPolicySize)
	if err != nil {
		return err
	}
	if _, err := projector.ParsePolicy(policy); err != nil {
		return withHint(fmt.Errorf("%s: %w", *policyFlag, err), "docs/profile.md, \"Selection policy\", defines the format")
	}
	c, id, err := openVault(*vaultFlag, *passFlag)
	if err != nil {
		return err
	}
	pid := *idFlag
	if pid == "" {
		pid = newUUID()
	}
	res, err := projector.Project(&projector.Input{Container: c, Identity: id, Request: request, Policy: policy,
		AdapterID: *adapterFlag, KeyID: *keyIDFlag, Key: priv, ProjectionID: pid})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*outFlag, 0o755); err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
	}{
		{"record.json", append(append([]byte{}, res.Record.Canonical()...), '\n')},
		{"projection.txt", res.Projection},
		{"material.json", res.Material.Marshal()},
	}
	var written []string
	for _, f := range files {
		path := filepath.Join(*outFlag, f.name)
		// The projection and the material hold memory content.
		if err := atomicfile.Write(path, f.data, 0o600); err != nil {
			return fmt.Errorf("couldn't write %s: %w", path, err)
		}
		written = append(written, path)
	}
	r := res.Record
	ex := r.Exclusions.ByReason
	fmt.Printf("projection %s: delivered %d of %d %s, %d bytes\n", r.ProjectionID, len(r.Delivered), len(c.Objects), plural(len(c.Objects), "object", "objects"), len(res.Projection))
	fmt.Printf("  excluded %d: authentication_failed %d, schema_invalid %d, policy_filtered %d, context_limit %d\n",
		r.Exclusions.Total, ex[projector.ReasonAuthenticationFailed], ex[projector.ReasonSchemaInvalid], ex[projector.ReasonPolicyFiltered], ex[projector.ReasonContextLimit])
	fmt.Printf("  wrote %s\n", strings.Join(written, ", "))
	if *logFlag == "" {
		return nil
	}
	submitArgs := []string{"--log", *logFlag}
	if *proofDirFlag != "" {
		submitArgs = append(submitArgs, "--proof-dir", *proofDirFlag)
	}
	return runSubmit(append(submitArgs, "--", written[0]))
}

// readCapped reads a whole file of at most max bytes.
func readCapped(what, path string, max int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("couldn't read the %s: %w", what, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, fmt.Errorf("couldn't read the %s: %w", what, err)
	}
	if len(b) > max {
		return nil, fmt.Errorf("the %s %s is more than the %d bytes allowed", what, path, max)
	}
	return b, nil
}
