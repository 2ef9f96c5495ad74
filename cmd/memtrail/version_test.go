package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestFormatVersion: the version comes from the build info the go command
// records — module version, vcs.revision, vcs.time, vcs.modified and the Go
// version — and -X main.Version overrides only the version.
func TestFormatVersion(t *testing.T) {
	stamped := "go\tgo1.26.8\npath\tgithub.com/memtrail/memtrail/cmd/memtrail\n" +
		"mod\tgithub.com/memtrail/memtrail\tv0.0.0-20261130145925-3e06156f176a\t\n" +
		"build\tGOARCH=arm64\nbuild\tGOOS=darwin\nbuild\tvcs=git\n" +
		"build\tvcs.revision=3e06156f176a90e995db0e10aac775724157ca0d\n" +
		"build\tvcs.time=2026-11-30T14:59:25Z\nbuild\tvcs.modified=true\n"
	devel := "go\tgo1.26.8\npath\tgithub.com/memtrail/memtrail/cmd/memtrail\nmod\tgithub.com/memtrail/memtrail\t(devel)\t\n"
	for _, tc := range []struct {
		name, info, override, want string
	}{
		{"stamped", stamped, "", "memtrail v0.0.0-20261130145925-3e06156f176a\nmodule   github.com/memtrail/memtrail\n" +
			"revision 3e06156f176a90e995db0e10aac775724157ca0d\ntime     2026-11-30T14:59:25Z\nmodified true\ngo       go1.26.8 darwin/arm64\n"},
		{"override", stamped, "v1.2.3", "memtrail v1.2.3\nmodule   github.com/memtrail/memtrail\n" +
			"revision 3e06156f176a90e995db0e10aac775724157ca0d\ntime     2026-11-30T14:59:25Z\nmodified true\ngo       go1.26.8 darwin/arm64\n"},
	} {
		bi, err := debug.ParseBuildInfo(tc.info)
		if err != nil {
			t.Fatal(err)
		}
		if got := formatVersion(bi, tc.override); got != tc.want {
			t.Errorf("%s: formatVersion = %q, want %q", tc.name, got, tc.want)
		}
	}
	bi, err := debug.ParseBuildInfo(devel)
	if err != nil {
		t.Fatal(err)
	}
	got := formatVersion(bi, "")
	for _, want := range []string{"memtrail (devel)\n", "revision unknown (built without VCS information)\n", "go       go1.26.8 "} {
		if !strings.Contains(got, want) {
			t.Errorf("unstamped: formatVersion = %q, want it to contain %q", got, want)
		}
	}
	if got := formatVersion(nil, ""); !strings.Contains(got, "memtrail (devel)\n") {
		t.Errorf("formatVersion(nil) = %q", got)
	}
}
