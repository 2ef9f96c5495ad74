package witness_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/memtrail/memtrail/witness"
)

const (
	sumdbVKey   = "sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8"
	exampleVKey = "example.com/log+f5243f4d+ATRf1bgJpL89DBxvxnH7uk2+Ih4udNMDRT73yJQo+W+L"
	// A cosignature/v1 key (type 0x04), as a log may sign with.
	cosigVKey = "example.com/cosigned+1b84766c+BB0kWSQNyoVWY1sbbKnLZkDHRIJsJByR9/Mj53m6M6IJ"
)

const exampleLogs = `# Logs witnessed by witness.example.com/w1.
logs/v0

vkey ` + sumdbVKey + `
origin go.sum database tree
qpd 86400
contact golang-dev@googlegroups.com

vkey ` + exampleVKey + `
`

func TestParseLogs(t *testing.T) {
	good := []struct {
		name, list string
		want       []witness.Log
	}{
		{"example", exampleLogs, []witness.Log{
			{Origin: "go.sum database tree", VKey: sumdbVKey},
			{Origin: "example.com/log", VKey: exampleVKey},
		}},
		{"empty list", "logs/v0\n", nil},
		{"no final newline", "logs/v0\nvkey " + exampleVKey, []witness.Log{{Origin: "example.com/log", VKey: exampleVKey}}},
		{"CRLF and spaces", "  logs/v0 \r\n\tvkey " + exampleVKey + "  \r\norigin   a b  \r\n", []witness.Log{{Origin: "a b", VKey: exampleVKey}}},
		{"key rotation", "logs/v0\nvkey " + exampleVKey + "\nvkey " + sumdbVKey + "\norigin example.com/log\n", []witness.Log{
			{Origin: "example.com/log", VKey: exampleVKey}, {Origin: "example.com/log", VKey: sumdbVKey},
		}},
		{"one key, two origins", "logs/v0\nvkey " + exampleVKey + "\norigin a\nvkey " + exampleVKey + "\norigin b\n", []witness.Log{
			{Origin: "a", VKey: exampleVKey}, {Origin: "b", VKey: exampleVKey},
		}},
		{"cosignature key", "logs/v0\nvkey " + cosigVKey + "\n", []witness.Log{{Origin: "example.com/cosigned", VKey: cosigVKey}}},
		{"unknown keywords", "logs/v0\nvkey " + exampleVKey + "\nfuture thing\nurl https://example.com/\n", []witness.Log{{Origin: "example.com/log", VKey: exampleVKey}}},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			got, err := witness.ParseLogs([]byte(tt.list))
			if err != nil {
				t.Fatalf("ParseLogs = %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("ParseLogs = %v, want %v", got, tt.want)
			}
			again, err := witness.ParseLogs(witness.FormatLogs(got))
			if err != nil || !slices.Equal(again, got) {
				t.Fatalf("ParseLogs(FormatLogs(logs)) = %v, %v, want %v", again, err, got)
			}
		})
	}

	bad := []struct{ name, list string }{
		{"empty", ""},
		{"comments only", "# nothing\n"},
		{"wrong header", "logs/v1\n"},
		{"entry before header", "vkey " + exampleVKey + "\nlogs/v0\n"},
		{"invalid vkey", "logs/v0\nvkey example.com/log+00000000+AAAA\n"},
		{"vkey with a wrong key ID", "logs/v0\nvkey " + strings.Replace(exampleVKey, "f5243f4d", "f5243f4e", 1) + "\n"},
		{"empty vkey", "logs/v0\nvkey\n"},
		{"origin before vkey", "logs/v0\norigin a\nvkey " + exampleVKey + "\n"},
		{"keyword before vkey", "logs/v0\nqpd 1\n"},
		{"two origins", "logs/v0\nvkey " + exampleVKey + "\norigin a\norigin b\n"},
		{"empty origin", "logs/v0\nvkey " + exampleVKey + "\norigin\n"},
		{"control character", "logs/v0\nvkey " + exampleVKey + "\norigin a\x00b\n"},
		{"invalid UTF-8", "logs/v0\nvkey " + exampleVKey + "\norigin a\xffb\n"},
		{"duplicate", "logs/v0\nvkey " + exampleVKey + "\nvkey " + exampleVKey + "\n"},
		{"too large", "logs/v0\n" + strings.Repeat("#", 17<<20)},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := witness.ParseLogs([]byte(tt.list)); err == nil {
				t.Fatalf("ParseLogs = %v, want an error", got)
			}
		})
	}
}
