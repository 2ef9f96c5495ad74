package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	mlog "github.com/memtrail/memtrail/log"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/witness"
)

const keygenUsage = `Usage: memtrail keygen --kind KIND --out FILE [--name NAME] [--key-id ID]

Generate a key. KIND is one of:

	log        the log's checkpoint key (signed-note, Ed25519); NAME is the origin
	witness    a witness cosigning key (signed-note, cosignature/v1); NAME is its name
	adapter    a projection adapter key; NAME is the adapter id (a URI), ID its key id
	compactor  an ECCR signing key
	issuer     a tombstone issuer key

The private key is written to FILE with mode 0600 (and never over an
existing file): signed-note "PRIVATE+KEY+..." for log and witness keys, PEM
PKCS#8 for the others. The public half is printed on standard output in the
form the trust file or policy wants: the verifier key for log and witness
keys, an adapter_pin for adapters, a trust-file key entry for compactors and
issuers.

The command exits 0 if it wrote a key, 1 if it could not (FILE exists or
cannot be written), and 2 on a usage error (a missing or unknown --kind, a
missing --out, or a --name or --key-id the kind needs).

Example:

	$ memtrail keygen --kind compactor --out compactor.pem
	{
	  "public_key_hex": "197f6b…",
	  "valid_from": "2026-11-30T00:00:00.000Z",
	  "valid_to": null,
	  "revoked_at": null
	}
	kid: sha256:c65d1b…
`

func init() {
	register(&command{name: "keygen", synopsis: "generate a key for a log, witness, adapter, compactor or issuer", run: runKeygen})
}

func runKeygen(args []string) error {
	fs := newFlagSet("keygen", keygenUsage)
	kindFlag := fs.String("kind", "", "log, witness, adapter, compactor or issuer")
	outFlag := fs.String("out", "", "file to write the private key to")
	nameFlag := fs.String("name", "", "origin (log), name (witness), adapter id (adapter), label (compactor, issuer)")
	keyIDFlag := fs.String("key-id", "", "adapter key id (adapter)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkUsage("memtrail keygen --kind KIND --out FILE [--name NAME] [--key-id ID]", fs, fs.Args(), nil, "kind", "out"); err != nil {
		return err
	}
	// Usage errors first, so that they exit 2 whatever is at --out.
	switch *kindFlag {
	case "log":
		if *nameFlag == "" {
			return badUsageError(withHint(errors.New("a log key needs --name, the log's origin"), "for example --name example.com/log"))
		}
	case "witness":
		if *nameFlag == "" {
			return badUsageError(withHint(errors.New("a witness key needs --name"), "for example --name witness.example.com/w1"))
		}
	case "adapter":
		if *nameFlag == "" || *keyIDFlag == "" {
			return badUsageError(withHint(errors.New("an adapter key needs --name (the adapter id) and --key-id"), "for example --name urn:example:adapter:1 --key-id adapter-key-2026-12"))
		}
	case "compactor", "issuer":
	default:
		return badUsageError(withHint(fmt.Errorf("unknown key kind %q", *kindFlag), "use log, witness, adapter, compactor or issuer"))
	}
	if _, err := os.Stat(*outFlag); err == nil {
		return withHint(fmt.Errorf("%s already exists", *outFlag), "keys are never overwritten; pick another --out")
	}
	switch *kindFlag {
	case "log":
		skey, vkey, err := mlog.GenerateLogKey(*nameFlag)
		if err != nil {
			return err
		}
		if err := receipts.WriteSecretFile(*outFlag, []byte(skey+"\n")); err != nil {
			return err
		}
		fmt.Println(vkey)
		return nil
	case "witness":
		skey, vkey, err := witness.GenerateKey(*nameFlag)
		if err != nil {
			return err
		}
		if err := witness.WriteKeyFile(*outFlag, skey); err != nil {
			return err
		}
		fmt.Println(vkey)
		return nil
	}
	pub, priv, err := receipts.GenerateKey()
	if err != nil {
		return err
	}
	if err := receipts.WritePrivateKeyFile(*outFlag, priv); err != nil {
		return err
	}
	fmt.Print(publicEntry(*kindFlag, *nameFlag, *keyIDFlag, pub))
	return nil
}

// publicEntry writes the public half as the trust file wants it.
func publicEntry(kind, name, keyID string, pub ed25519.PublicKey) string {
	now := receipts.FormatTimestamp(nowUTC())
	if kind == "adapter" {
		p := &receipts.AdapterPin{AdapterID: name, KeyID: keyID, PublicKey: pub, Status: "active", ValidFrom: nowUTC()}
		return string(receipts.MarshalAdapterPin(p))
	}
	var b strings.Builder
	b.WriteString("{\n")
	if name != "" {
		fmt.Fprintf(&b, "  \"name\": %q,\n", name)
	}
	fmt.Fprintf(&b, "  \"public_key_hex\": %q,\n  \"valid_from\": %q,\n  \"valid_to\": null,\n  \"revoked_at\": null\n}\n", receipts.PublicKeyHex(pub), now)
	fmt.Fprintf(os.Stderr, "kid: %s\n", receipts.KeyID(pub))
	return b.String()
}

func nowUTC() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }
