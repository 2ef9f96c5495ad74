package api

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestLayeringImports checks that the log and its HTTP interface reach no
// package they must not: the offline verifier is the auditors' independent
// reading of what the log serves, so the log must not borrow its code (the
// formats both use live in internal/tlogfmt and receipts).
func TestLayeringImports(t *testing.T) {
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goCmd); err != nil {
		if goCmd, err = exec.LookPath("go"); err != nil {
			t.Fatalf("no go command to list dependencies with: %v", err)
		}
	}
	const module = "github.com/memtrail/memtrail/"
	out, err := exec.Command(goCmd, "list", "-deps", module+"log", module+"api").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || !contains(deps, module+"log") || !contains(deps, module+"receipts") {
		t.Fatalf("go list -deps listed %d packages, without the log or receipts: %q", len(deps), deps)
	}
	for _, d := range deps {
		if d == module+"verifier" || strings.HasPrefix(d, module+"verifier/") {
			t.Errorf("log or api depends on %s", d)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
