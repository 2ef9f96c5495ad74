// Command memtrail is a transparency log for AI-memory receipts.
//
// It ingests signed Memory Projection Records, Ephemeral Context Compaction
// Receipts (ECCRs) and purge tombstones into an append-only, witnessed
// C2SP tlog-tiles Merkle log, serves inclusion and consistency proofs, runs a
// C2SP tlog-witness, and verifies receipts, proofs and erasure lineage offline.
//
// Usage:
//
//	memtrail <command> [flags] [arguments]
//
// Run "memtrail help" for the list of commands and "memtrail <command> -h"
// for the flags of one. Every command exits 0 on success, 1 when what it
// checked or attempted was refused or failed, and 2 on a usage error;
// "submit" and "proof" also exit 3 when the entries were logged but a proof
// they were asked to wait for did not arrive in time, and when a proof
// lacks the witness quorum (of the log, for "submit"; of --policy, for
// both).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strings"
)

// A command is one subcommand of the binary. Each lives in its own file and
// registers itself from an init function.
type command struct {
	name     string
	synopsis string // one line, shown by "memtrail help"
	run      func(args []string) error
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("memtrail: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// errUsage is returned by a command whose arguments were wrong; it has
// already printed its synopsis.
var errUsage = errors.New("usage error")

// badUsage is a usage error with a message (and perhaps hints) to print
// instead of the synopsis; the command exits 2.
type badUsage struct{ err error }

func (e *badUsage) Error() string { return e.err.Error() }
func (e *badUsage) Unwrap() error { return e.err }

func badUsageError(err error) error { return &badUsage{err: err} }

// exitError carries an exit status chosen by a command (for example 1 for a
// refused verification) without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(os.Stdout)
		return 0
	case "version", "-version", "--version":
		return runVersion(args[1:], os.Stdout, stderr)
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "memtrail: error: unknown command %q\n", args[0])
		fmt.Fprintf(stderr, "memtrail: hint: run \"memtrail help\" for the list of commands\n")
		return 2
	}
	err := c.run(args[1:])
	var ee exitError
	var ue *badUsage
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.As(err, &ue):
		printError(stderr, err)
		return 2
	case errors.As(err, &ee):
		return ee.code
	default:
		printError(stderr, err)
		return 1
	}
}

// hintError is an error with advice for the user, printed on "hint:" lines.
type hintError struct {
	err   error
	hints []string
}

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }

func withHint(err error, hints ...string) error { return &hintError{err: err, hints: hints} }

func printError(w io.Writer, err error) {
	fmt.Fprintf(w, "memtrail: error: %v\n", err)
	var he *hintError
	if errors.As(err, &he) {
		for _, h := range he.hints {
			fmt.Fprintf(w, "memtrail: hint: %s\n", h)
		}
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "memtrail is a transparency log for AI-memory receipts.\n\n")
	fmt.Fprintf(w, "Usage:\n\n\tmemtrail <command> [flags] [arguments]\n\nCommands:\n\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "\t%-10s %s\n", n, commands[n].synopsis)
	}
	fmt.Fprintf(w, "\t%-10s %s\n", "version", "print the version")
	fmt.Fprintf(w, "\nRun \"memtrail <command> -h\" for the flags of a command.\n")
}

// newFlagSet returns a FlagSet for a subcommand whose usage prints the given
// text (a synopsis, prose and an example) followed by the flags.
func newFlagSet(name, usageText string) *flag.FlagSet {
	fs := flag.NewFlagSet("memtrail "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), strings.TrimLeft(usageText, "\n"))
		fmt.Fprintf(fs.Output(), "\nFlags:\n")
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args with fs and turns a parse failure into errUsage
// (the FlagSet has already printed the problem and the usage text).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return flag.ErrHelp
		}
		return errUsage
	}
	return nil
}

// parseInterleaved parses flags that may come before or after the
// positional arguments, as in "verify projection RECORD.json --adapters P",
// and returns the positional arguments. "--" ends the flags: every argument
// after it is positional, even one that starts with "-".
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	before, after := args, []string(nil)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			before, after = args[:i], args[i+1:]
			break
		}
		if len(a) < 2 || a[0] != '-' || strings.Contains(a, "=") {
			continue
		}
		if f := fs.Lookup(strings.TrimLeft(a, "-")); f != nil {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
				i++ // the flag's value, which may be "--"
			}
		}
	}
	pos, err := parseMixed(fs, before)
	if err != nil {
		return nil, err
	}
	return append(pos, after...), nil
}

// parseLogURL parses a --log flag: an http or https base URL. Anything
// else is a usage error, with a hint.
func parseLogURL(s string) (*url.URL, error) {
	if !strings.Contains(s, "://") {
		return nil, badUsageError(withHint(fmt.Errorf("--log %q is not a URL: it has no scheme", s), "did you mean http://"+s+"?"))
	}
	u, err := url.Parse(strings.TrimRight(s, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, badUsageError(withHint(fmt.Errorf("bad --log URL %q", s), "use the log's base URL, such as http://127.0.0.1:8080"))
	}
	return u, nil
}
