package receipts

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestParserScratchReuse parses documents of many shapes concurrently
// with reused parser stacks and checks that no tree shares or loses
// anything: each re-encodes to its own canonical bytes.
func TestParserScratchReuse(t *testing.T) {
	docs := [][]byte{
		[]byte(`{"a":[1,2,{"b":"c","d":[true,false,null]}],"e":{"f":{"g":"h"}}}`),
		[]byte(`[` + strings.Repeat(`{"x":[1,2,3],"y":"z"},`, 2000) + `{}]`),
		[]byte(`{` + manyMembers(40) + `,"last":{"n":[[],[[]],{}]}}`),
		[]byte(`"just a string"`),
	}
	var want [][]byte
	for _, d := range docs {
		v, err := parseJSON(d, 1<<16)
		if err != nil {
			t.Fatalf("parseJSON(%.40s): %v", d, err)
		}
		want = append(want, appendCanonical(nil, &v))
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var trees []value
			for i := range 200 {
				d := docs[(i+w)%len(docs)]
				v, err := parseJSON(d, 1<<16)
				if err != nil {
					t.Error(err)
					return
				}
				trees = append(trees, v)
			}
			for i, v := range trees {
				if got := appendCanonical(nil, &v); !bytes.Equal(got, want[(i+w)%len(docs)]) {
					t.Error(fmt.Sprintf("tree %d of worker %d changed after later parses", i, w))
					return
				}
			}
		}()
	}
	wg.Wait()
}
