package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// missingFlag reports a required flag left out: the synopsis, an error
// line naming the flag, and a hint saying what it takes. The command exits
// 2.
func missingFlag(synopsis, flag string, hints ...string) error {
	return synopsisUsage(synopsis, "missing "+flag, hints...)
}

// synopsisUsage prints a command's synopsis, an error line and hints to
// standard error; the command exits 2.
func synopsisUsage(synopsis, problem string, hints ...string) error {
	fmt.Fprintf(os.Stderr, "Usage: %s\n", synopsis)
	fmt.Fprintf(os.Stderr, "memtrail: error: %s\n", problem)
	for _, h := range hints {
		fmt.Fprintf(os.Stderr, "memtrail: hint: %s\n", h)
	}
	return errUsage
}

// plural returns one when n is 1, and many otherwise.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ofN says "k of n things verb" with the noun agreeing with n and the verb
// with k: "1 of 1 entry was", "1 of 3 entries was", "2 of 3 entries were".
// one and many are the noun and verb in the singular and the plural.
func ofN(k, n int, one, many string) string {
	if n == 1 && k == 1 {
		return "1 of 1 " + one
	}
	noun, verb := splitLast(many)
	_, verbOne := splitLast(one)
	if k == 1 {
		verb = verbOne
	}
	return fmt.Sprintf("%d of %d %s %s", k, n, noun, verb)
}

// splitLast splits "entries were" into "entries" and "were".
func splitLast(s string) (string, string) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ' ' {
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// checkUsage says what is missing from, or extra in, a verify command
// line: the positional arguments named by args (in order), and the flags
// of fs named by required. It returns nil when nothing is, or else prints
// the synopsis and an error line naming what is missing (exit 2).
func checkUsage(synopsis string, fs *flag.FlagSet, pos []string, args []string, required ...string) error {
	var problem string
	var missing []string
	for _, name := range required {
		if fs.Lookup(name).Value.String() == "" {
			missing = append(missing, "--"+name)
		}
	}
	switch {
	case len(pos) < len(args):
		problem = "missing " + strings.Join(args[len(pos):], " and ")
	case len(pos) > len(args):
		problem = fmt.Sprintf("unexpected argument %q", pos[len(args)])
		if len(args) == 0 {
			problem += ": this command takes flags only"
		}
	case len(missing) > 0:
		problem = "missing " + strings.Join(missing, " and ")
	default:
		return nil
	}
	fmt.Fprintf(stderr(), "Usage: %s\n", synopsis)
	fmt.Fprintf(stderr(), "memtrail: error: %s\n", problem)
	fmt.Fprintf(stderr(), "memtrail: hint: run \"%s -h\" for its help\n", fs.Name())
	return errUsage
}
