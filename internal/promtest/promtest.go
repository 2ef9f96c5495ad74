// Package promtest checks Prometheus exposition text with promtool, for the
// tests of the packages that serve /metrics.
package promtest

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// Check runs "promtool check metrics" on text, which checks that it parses
// as the Prometheus text format and lints it (names, types, help), and fails
// t on any problem promtool reports. Without promtool on PATH it skips t,
// except under CI (CI set in the environment), whose .ci/run installs
// promtool, so that its absence there is a failure.
func Check(t testing.TB, text []byte) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("promtool is not on PATH under CI: %v", err)
		}
		t.Skipf("promtool is not on PATH (Debian: apt-get install prometheus): %v", err)
	}
	if len(text) == 0 {
		t.Fatalf("no metrics to check")
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("promtool check metrics: %v\n%s\nmetrics:\n%s", err, out, text)
	}
}
