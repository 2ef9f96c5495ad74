package api

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestLayeringImports checks that the log and its HTTP interface reach no
// package they must not:
//
//   - the offline verifier is the auditors' independent reading of what the
//     log serves, so neither borrows its code (the formats both use live in
//     internal/tlogfmt and receipts);
//   - the log takes its storage from its caller through the seam of
//     log/store, so it links no Tessera driver and no database: the
//     embedded default is in the leaf packages log/posixstore and
//     log/sqliteindex;
//   - the HTTP interface reads everything through the log (tiles through
//     Tessera's LogReader), so it imports no file-system package.
func TestLayeringImports(t *testing.T) {
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goCmd); err != nil {
		if goCmd, err = exec.LookPath("go"); err != nil {
			t.Fatalf("no go command to list dependencies with: %v", err)
		}
	}
	const module = "github.com/memtrail/memtrail/"
	list := func(args ...string) []string {
		t.Helper()
		out, err := exec.Command(goCmd, append([]string{"list"}, args...)...).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
		}
		return strings.Fields(string(out))
	}
	deps := list("-deps", module+"log", module+"api")
	if len(deps) < 10 || !contains(deps, module+"log") || !contains(deps, module+"receipts") || !contains(deps, module+"log/store") {
		t.Fatalf("go list -deps listed %d packages, without the log, its store or receipts: %q", len(deps), deps)
	}
	forbidden := []string{
		module + "verifier",
		module + "log/posixstore",
		module + "log/sqliteindex",
		"github.com/transparency-dev/tessera/storage", // every Tessera driver
		"modernc.org/sqlite",
		"github.com/mattn/go-sqlite3",
		// (database/sql itself is linked by client_golang's collectors.)
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("log or api depends on %s", d)
			}
		}
	}
	// The HTTP interface opens no file: it imports no package that
	// would let it.
	for _, imp := range list("-f", `{{join .Imports " "}}`, module+"api") {
		switch imp {
		case "os", "path/filepath", "io/ioutil", "syscall", "golang.org/x/sys/unix":
			t.Errorf("api imports %s: it reads through the log, never from files", imp)
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
