package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memtrail/memtrail/internal/apertomemory"
	"github.com/memtrail/memtrail/internal/atomicfile"
)

const vaultUsage = `Usage: memtrail vault new|add|list FILE.amem [flags]

Make and read ApertoMemory vaults: .amem export containers of format_version 2
objects (draft-ferro-apertomemory-02), which the reference implementation
imports and exports as well.

	memtrail vault new FILE.amem [--scope NAME]... [--passphrase-file FILE]
	memtrail vault add FILE.amem [--scope NAME] [--type TYPE] [--confidence C]
		[--tag TAG]... [--session ID] [--created UNIX] [--passphrase-file FILE]
		(--file FILE | TEXT...)
	memtrail vault list FILE.amem [--allow-unverified] [--passphrase-file FILE]

"new" creates a vault for a new owner identity: a random salt, the identity
derived from the passphrase with Argon2id, and the scopes named (default one
scope, "default"). It never writes over an existing file.

"add" seals one memory into a scope of the vault, signed by the owner (so it
opens as trust "self"): the TEXT arguments joined by single spaces, or the
exact bytes of --file (UTF-8). --type is semantic (default), episodic or
procedural; --confidence is from 0 to 1 (default 1); --created is the
creation time in epoch seconds (default now); --scope may be left out when
the vault has one scope. The memory gets a fresh random id and its own key.

"list" opens every object and prints one line each: its position, id,
scope, and either its derived trust, authorship, author key, confidence and
the start of its content, or why it was refused (the refusal code and the
projection exclusion it counts under). Objects that cannot be authenticated
are refused unless --allow-unverified, which reads them as "unverified".

The passphrase is read from --passphrase-file (its content, one trailing
newline removed) or else from the environment variable AMEM_PASSPHRASE; it is
never a flag value and is never printed. Vault files are written with mode
0600, atomically.

The command exits 0 if it did what was asked, 1 if it could not (a file
that cannot be read or written, a wrong passphrase, a container that is not
a vault, an unknown scope), and 2 on a usage error.

Example:

	$ export AMEM_PASSPHRASE='correct horse battery staple'
	$ memtrail vault new me.amem --scope work
	$ memtrail vault add me.amem --confidence 0.9 user prefers formal emails
	$ memtrail vault list me.amem
	0 5d0c…  work  self signed author=fluw51WeokY confidence=0.9  user prefers formal emails
`

const (
	vaultNewSynopsis  = "memtrail vault new FILE.amem [--scope NAME]... [--passphrase-file FILE]"
	vaultAddSynopsis  = "memtrail vault add FILE.amem [--scope NAME] [--type TYPE] [--confidence C] [--tag TAG]... [--session ID] [--created UNIX] [--passphrase-file FILE] (--file FILE | TEXT...)"
	vaultListSynopsis = "memtrail vault list FILE.amem [--allow-unverified] [--passphrase-file FILE]"
)

func init() {
	register(&command{name: "vault", synopsis: "make an ApertoMemory vault, add memories to it, list what it holds", run: runVault})
}

func runVault(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, vaultUsage)
		return errUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Print(vaultUsage)
		return nil
	case "new":
		return vaultNew(args[1:])
	case "add":
		return vaultAdd(args[1:])
	case "list":
		return vaultList(args[1:])
	}
	fmt.Fprintf(os.Stderr, "memtrail: error: unknown vault subcommand %q\n", args[0])
	fmt.Fprintf(os.Stderr, "memtrail: hint: one of new, add, list\n")
	return errUsage
}

// passphraseFlag adds the --passphrase-file flag to fs.
func passphraseFlag(fs *flag.FlagSet) *string {
	return fs.String("passphrase-file", "", "file holding the vault passphrase (default: the environment variable "+apertomemory.PassphraseEnv+")")
}

// readPassphrase reads the passphrase from the file or the environment.
// Its errors never contain the passphrase.
func readPassphrase(path string) ([]byte, error) {
	p, err := apertomemory.ReadPassphrase(path, "")
	if err != nil {
		return nil, withHint(err, "a passphrase is never a flag value: use --passphrase-file FILE or the environment")
	}
	return p, nil
}

// openVault reads and parses the container at path and derives its
// owner's identity from the passphrase (the one Argon2id run). A wrong
// passphrase is an error of its own, with a hint.
func openVault(path, passphraseFile string) (*apertomemory.Container, *apertomemory.Identity, error) {
	pass, err := readPassphrase(passphraseFile)
	if err != nil {
		return nil, nil, err
	}
	c, err := apertomemory.ReadContainerFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("vault %s: %w", path, err)
	}
	id, err := apertomemory.DeriveIdentity(pass, c.Salt[:])
	if err != nil {
		return nil, nil, fmt.Errorf("vault %s: %w", path, err)
	}
	if !id.SignPub().Equal(c.SignPub) || id.KAPub() != c.KAPub {
		return nil, nil, withHint(fmt.Errorf("vault %s: %w", path, apertomemory.ErrWrongPassphrase),
			"check the passphrase (--passphrase-file or "+apertomemory.PassphraseEnv+"); a container whose sign_pub was replaced fails the same way")
	}
	return c, id, nil
}

func vaultNew(args []string) error {
	fs := newFlagSet("vault new", vaultUsage)
	var scopes stringList
	fs.Var(&scopes, "scope", "scope to create (repeatable; default \"default\")")
	passFlag := passphraseFlag(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := checkUsage(vaultNewSynopsis, fs, pos, []string{"FILE.amem"}); err != nil {
		return err
	}
	if len(scopes) == 0 {
		scopes = stringList{"default"}
	}
	if _, err := os.Lstat(pos[0]); err == nil {
		return withHint(fmt.Errorf("%s exists; vault new never writes over a file", pos[0]), "add memories to it with \"memtrail vault add\"")
	}
	pass, err := readPassphrase(*passFlag)
	if err != nil {
		return err
	}
	w, err := apertomemory.NewWriter(pass)
	if err != nil {
		return err
	}
	for _, s := range scopes {
		if _, err := w.AddScope(s); err != nil {
			return err
		}
	}
	if err := atomicfile.Write(pos[0], w.Bytes(), 0o600); err != nil {
		return fmt.Errorf("couldn't write the vault: %w", err)
	}
	fmt.Printf("%s: new vault, owner key %s, scopes %s\n", pos[0], w.Identity().KeyID().B64u(), strings.Join(scopes, ", "))
	return nil
}

var memTypes = map[string]apertomemory.MemType{"semantic": apertomemory.Semantic, "episodic": apertomemory.Episodic, "procedural": apertomemory.Procedural}

func vaultAdd(args []string) error {
	fs := newFlagSet("vault add", vaultUsage)
	scopeFlag := fs.String("scope", "", "scope to seal into (default: the vault's only scope)")
	typeFlag := fs.String("type", "semantic", "mem-type: semantic, episodic or procedural")
	confFlag := fs.Float64("confidence", 1, "confidence, from 0 to 1")
	var tags stringList
	fs.Var(&tags, "tag", "tag (repeatable)")
	sessionFlag := fs.String("session", "", "session identifier")
	createdFlag := fs.Uint64("created", 0, "creation time, epoch seconds (default now)")
	fileFlag := fs.String("file", "", "file whose exact bytes are the memory's content")
	passFlag := passphraseFlag(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return synopsisUsage(vaultAddSynopsis, "missing FILE.amem")
	}
	path, text := pos[0], pos[1:]
	typ, ok := memTypes[*typeFlag]
	switch {
	case !ok:
		return synopsisUsage(vaultAddSynopsis, fmt.Sprintf("--type %q is not semantic, episodic or procedural", *typeFlag))
	case !(*confFlag >= 0 && *confFlag <= 1):
		return synopsisUsage(vaultAddSynopsis, "--confidence must be from 0 to 1")
	case (*fileFlag == "") == (len(text) == 0):
		return synopsisUsage(vaultAddSynopsis, "give the memory as TEXT or as --file FILE, one of the two")
	}
	content := strings.Join(text, " ")
	if *fileFlag != "" {
		b, err := os.ReadFile(*fileFlag)
		if err != nil {
			return err
		}
		if !utf8.Valid(b) {
			return fmt.Errorf("%s is not UTF-8 text; a memory's content is text", *fileFlag)
		}
		content = string(b)
	}
	if content == "" {
		return errors.New("the memory is empty")
	}
	c, id, err := openVault(path, *passFlag)
	if err != nil {
		return err
	}
	scope, err := pickScope(c, *scopeFlag)
	if err != nil {
		return err
	}
	kek, err := id.UnwrapKEK(scope.KEKWrapped, scope.EphPub, scope.ID)
	if err != nil {
		return fmt.Errorf("vault %s: the key of scope %q does not unwrap", path, scope.Name)
	}
	created := *createdFlag
	if created == 0 {
		created = uint64(time.Now().Unix())
	}
	m := &apertomemory.Memory{Type: typ, Content: content, Confidence: *confFlag, Tags: tags, Tool: "memtrail/1",
		Session: *sessionFlag, Created: created}
	sealed, oid, dek, err := apertomemory.Seal(m, id.SigningKey(), scope.ID)
	if err != nil {
		return err
	}
	wrapped, err := apertomemory.WrapDEK(dek, kek)
	if err != nil {
		return err
	}
	c.Objects = append(c.Objects, sealed)
	c.DEKs[oid] = wrapped
	if err := atomicfile.Write(path, c.Marshal(), 0o600); err != nil {
		return fmt.Errorf("couldn't write the vault: %w", err)
	}
	fmt.Printf("%s: sealed %s into scope %s (%d %s)\n", path, oid, scope.Name, len(c.Objects), plural(len(c.Objects), "object", "objects"))
	return nil
}

// pickScope returns the named scope, or the only one when name is "".
func pickScope(c *apertomemory.Container, name string) (*apertomemory.Scope, error) {
	var names []string
	for i := range c.Scopes {
		s := &c.Scopes[i]
		if s.Problem != "" {
			continue
		}
		if s.Name == name {
			return s, nil
		}
		names = append(names, strconv.Quote(s.Name))
	}
	if name == "" && len(names) == 1 {
		for i := range c.Scopes {
			if c.Scopes[i].Problem == "" {
				return &c.Scopes[i], nil
			}
		}
	}
	if name == "" {
		return nil, withHint(errors.New("the vault has several scopes: name one with --scope"), "its scopes: "+strings.Join(names, ", "))
	}
	return nil, withHint(fmt.Errorf("the vault has no scope %q", name), "its scopes: "+strings.Join(names, ", "))
}

func vaultList(args []string) error {
	fs := newFlagSet("vault list", vaultUsage)
	allowFlag := fs.Bool("allow-unverified", false, "read objects that cannot be authenticated, as \"unverified\"")
	passFlag := passphraseFlag(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := checkUsage(vaultListSynopsis, fs, pos, []string{"FILE.amem"}); err != nil {
		return err
	}
	c, id, err := openVault(pos[0], *passFlag)
	if err != nil {
		return err
	}
	v, err := c.OpenWithIdentity(id, &apertomemory.OpenOptions{AllowUnverified: *allowFlag})
	if err != nil {
		return err
	}
	fmt.Printf("vault %s: owner key %s, %d accepted keys, %d objects\n", pos[0], v.Keyring.Owner().B64u(), len(v.Keyring.Accepted()), len(v.Entries))
	for _, p := range v.KeyringProblems {
		fmt.Printf("known_keys %s left out: %s\n", p.ID, p.Reason)
	}
	for _, s := range v.Scopes {
		if s.Err != nil {
			fmt.Printf("scope %q unusable: %v\n", s.Name, s.Err)
		}
	}
	for _, e := range v.Entries {
		id := "-"
		if oid, _, _, err := apertomemory.ParseEnvelope(e.Sealed); err == nil {
			id = oid.String()
		}
		scope := e.Scope
		if scope == "" {
			scope = "-"
		}
		if e.Err != nil {
			code, class := "refused", apertomemory.ClassSchema
			if r := apertomemory.RefusalOf(e.Err); r != nil {
				code, class = r.Code, r.Class
			}
			fmt.Printf("%d %s  %s  refused: %s (%s)\n", e.Index, id, scope, code, class)
			continue
		}
		o := e.Object
		author := "none"
		if o.Author != nil {
			author = o.Author.B64u()
		}
		conf := "absent"
		if o.Confidence != nil {
			conf = strconv.FormatFloat(*o.Confidence, 'g', -1, 64)
		}
		fmt.Printf("%d %s  %s  %s %s author=%s confidence=%s  %s\n", e.Index, id, scope, o.Trust, o.Authorship, author, conf, preview(o.Content))
	}
	return nil
}

// preview is the start of a memory's content on one line, escaped so that
// no byte of it can act on a terminal.
func preview(s string) string {
	const n = 60
	r := []rune(s)
	cut := len(r) > n
	if cut {
		r = r[:n]
	}
	q := strconv.QuoteToGraphic(string(r))
	q = q[1 : len(q)-1]
	if cut {
		q += "…"
	}
	return q
}
