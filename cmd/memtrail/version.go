package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version overrides the module version reported by "memtrail version"; set
// it at link time with -ldflags "-X main.Version=v1.2.3".
var Version string

const versionUsage = `Usage: memtrail version

Print the version of this binary, as the Go toolchain recorded it when it
was built: the module version, the VCS revision, its commit time and
whether the work tree had changes not committed, and the Go version.
"memtrail --version" prints the same.

A binary built with "go install github.com/memtrail/memtrail/cmd/memtrail@vX"
reports vX; one built in a git clone reports a pseudo-version and the
revision. A build without VCS information ("go build -buildvcs=false",
a git worktree, or a source tree that is not a clone) reports "(devel)" and
says that the revision is unknown; -ldflags "-X main.Version=..." sets the
version then.

The command exits 0, and 2 on a usage error.

Example:

	$ memtrail version
	memtrail v0.0.0-20261130145925-3e06156f176a
	module   github.com/memtrail/memtrail
	revision 3e06156f176a90e995db0e10aac775724157ca0d
	time     2026-11-30T14:59:25Z
	modified false
	go       go1.26.8 linux/amd64
`

func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			fmt.Fprint(stdout, versionUsage)
			return 0
		}
		fmt.Fprintf(stderr, "Usage: memtrail version\n")
		fmt.Fprintf(stderr, "memtrail: error: version takes no arguments (got %q)\n", args[0])
		return 2
	}
	bi, _ := debug.ReadBuildInfo()
	fmt.Fprint(stdout, formatVersion(bi, Version))
	return 0
}

// formatVersion writes what the build info records about the binary: the
// main module's version (override, when not empty, replaces it), the VCS
// settings the go command stamps (vcs.revision, vcs.time, vcs.modified)
// and the Go version. bi may be nil (a binary built without module
// support).
func formatVersion(bi *debug.BuildInfo, override string) string {
	var b strings.Builder
	version, module, goVersion := "(devel)", "github.com/memtrail/memtrail", runtime.Version()
	settings := map[string]string{}
	if bi != nil {
		if bi.Main.Path != "" {
			module = bi.Main.Path
		}
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
	}
	if override != "" {
		version = override
	}
	fmt.Fprintf(&b, "memtrail %s\n", version)
	fmt.Fprintf(&b, "module   %s\n", module)
	if rev := settings["vcs.revision"]; rev != "" {
		fmt.Fprintf(&b, "revision %s\n", rev)
		if t := settings["vcs.time"]; t != "" {
			fmt.Fprintf(&b, "time     %s\n", t)
		}
		if m := settings["vcs.modified"]; m != "" {
			fmt.Fprintf(&b, "modified %s\n", m)
		}
	} else {
		fmt.Fprintf(&b, "revision unknown (built without VCS information)\n")
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	if os, arch := settings["GOOS"], settings["GOARCH"]; os != "" && arch != "" {
		platform = os + "/" + arch
	}
	fmt.Fprintf(&b, "go       %s %s\n", goVersion, platform)
	return b.String()
}

// version is the short version string the log and the witness report in
// memtrail_build_info: the override, else the module version the build
// recorded, else "(devel)".
func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
