// Package rekorload builds, runs and loads Rekor v2 (sigstore/rekor-tiles),
// the peer that memtrail's "?wait=proof" ingest is measured against.
//
// Rekor v2 is a tile-based transparency log on Tessera. Its write endpoint,
// POST /api/v2/log/entries, takes a CreateEntryRequest carrying a
// hashedrekord v0.0.2 request (an artifact digest, a signature over it and
// the signer's public key), verifies the signature, appends the canonical
// entry and blocks until the entry is covered by a published checkpoint. It
// then answers 201 with a TransparencyLogEntry holding the log index, the
// canonicalized entry body and an inclusion proof against that signed
// checkpoint. That is the same promise as memtrail's "?wait=proof", which
// makes it a like-for-like peer.
//
// The package does three things:
//
//   - [Build] installs the POSIX server binary of rekor-tiles [Version] with
//     "go install" into a cache directory outside the memtrail module, so no
//     sigstore module ever enters memtrail's go.mod;
//   - [Start] runs it on loopback ports with a 1 s checkpoint interval and
//     the batching chosen in [DefaultBatchMaxSize] and [DefaultBatchMaxAge],
//     and waits until it answers its health check;
//   - [Load] drives it with many concurrent clients, each submitting unique
//     signed hashedrekord entries (ECDSA P-256, SHA-256) and waiting for the
//     full answer, checks every inclusion proof against its checkpoint, and
//     reports throughput and latency percentiles.
//
// The client side uses only the standard library: requests are plain JSON in
// the protobuf JSON mapping that Rekor's HTTP gateway reads.
//
// "memtrail bench ingest" runs the comparison (mode rekor): it builds Rekor
// (a minute or two on first use), starts it, and loads it with the same
// number of clients as memtrail's wait-proof run, in the same process:
//
//	memtrail bench ingest --modes wait,rekor --wait-clients 1000 --wait-total 20000
package rekorload

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const (
	// Module is the package path of Rekor v2's POSIX server.
	Module = "github.com/sigstore/rekor-tiles/v2/cmd/rekor-server/posix"
	// Version is the rekor-tiles release that is built and measured.
	Version = "v2.3.0"
	// BinaryName is the file name [Build] gives the installed server.
	BinaryName = "rekor-server-posix-" + Version
)

// DefaultBinDir is where the server binary is cached between runs:
// $MEMTRAIL_REKOR_BIN_DIR when set, otherwise memtrail/rekor under the
// user's cache directory.
func DefaultBinDir() (string, error) {
	if d := os.Getenv("MEMTRAIL_REKOR_BIN_DIR"); d != "" {
		return d, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("rekorload: locating the user cache directory: %w", err)
	}
	return filepath.Join(cache, "memtrail", "rekor"), nil
}

// Build installs Rekor v2's POSIX server at [Version] into dir and returns
// the path of the binary. An executable already at that path is reused, so
// only the first call downloads and compiles anything.
//
// It runs, in a scratch directory outside any module,
//
//	GOBIN=<scratch> GOFLAGS=-mod=mod GOWORK=off go install <Module>@<Version>
//
// and moves the result into place atomically, so concurrent builders never
// see a partial file. The go command is the one on PATH, else
// $GOROOT/bin/go.
func Build(ctx context.Context, dir string) (string, error) {
	if dir == "" {
		return "", errors.New("rekorload: build: empty directory")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("rekorload: build: %w", err)
	}
	bin := filepath.Join(dir, BinaryName)
	if st, err := os.Stat(bin); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("rekorload: build: %w", err)
	}
	goTool, err := goCommand()
	if err != nil {
		return "", err
	}
	gobin, err := os.MkdirTemp(dir, ".install-")
	if err != nil {
		return "", fmt.Errorf("rekorload: build: %w", err)
	}
	defer os.RemoveAll(gobin)
	work, err := os.MkdirTemp("", "rekorload-build-")
	if err != nil {
		return "", fmt.Errorf("rekorload: build: %w", err)
	}
	defer os.RemoveAll(work)

	cmd := exec.CommandContext(ctx, goTool, "install", Module+"@"+Version)
	cmd.Dir = work
	cmd.Env = append(os.Environ(),
		"GOBIN="+gobin,
		"GOFLAGS=-mod=mod",
		"GOWORK=off",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("rekorload: go install %s@%s: %w\n%s", Module, Version, err, tail(string(out), 4000))
	}
	built := filepath.Join(gobin, filepath.Base(Module))
	if _, err := os.Stat(built); err != nil {
		return "", fmt.Errorf("rekorload: go install produced no binary: %w", err)
	}
	if err := os.Rename(built, bin); err != nil {
		return "", fmt.Errorf("rekorload: build: %w", err)
	}
	return bin, nil
}

// goCommand finds the go tool: PATH first, then $GOROOT/bin.
func goCommand() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("rekorload: build: no go command on PATH or in $GOROOT/bin")
}

// tail returns at most the last n bytes of s, cut at a line start.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return "…\n" + s
}
