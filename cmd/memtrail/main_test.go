package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the memtrail binary the tests built (buildMemtrail), so
// that test runs do not leave a binary each in the temporary directory.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildPath != "" {
		os.RemoveAll(filepath.Dir(buildPath))
	}
	os.Exit(code)
}
