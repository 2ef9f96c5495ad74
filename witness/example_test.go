package witness_test

import (
	"fmt"

	"github.com/memtrail/memtrail/witness"
)

func ExampleParseLogs() {
	list := []byte(`# The logs this witness cosigns.
logs/v0

vkey sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8
origin go.sum database tree
qpd 86400

vkey example.com/log+f5243f4d+ATRf1bgJpL89DBxvxnH7uk2+Ih4udNMDRT73yJQo+W+L
`)
	logs, err := witness.ParseLogs(list)
	if err != nil {
		panic(err)
	}
	for _, l := range logs {
		fmt.Printf("%q\n", l.Origin)
	}
	// Output:
	// "go.sum database tree"
	// "example.com/log"
}
