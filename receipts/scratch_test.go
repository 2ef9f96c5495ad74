package receipts

import (
	"bytes"
	"fmt"
	"regexp"
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

// TestByteClasses checks the digest and base64url byte tables against
// their definitions, for every byte at every position.
func TestByteClasses(t *testing.T) {
	digestRE := regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	b64uRE := regexp.MustCompile(`^[A-Za-z0-9_-]*$`)
	base := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	for c := 0; c < 256; c++ {
		for _, pos := range []int{0, 6, 7, 40, 70} {
			s := base[:pos] + string([]byte{byte(c)}) + base[pos+1:]
			if got, want := IsDigest(s), digestRE.MatchString(s); got != want {
				t.Errorf("IsDigest(%q) = %v, want %v", s, got, want)
			}
		}
		s := "AAAA" + string([]byte{byte(c)}) + "AAA"
		_, ok := DecodeB64u(s)
		if ok && !b64uRE.MatchString(s) {
			t.Errorf("DecodeB64u(%q) accepted a byte outside the alphabet", s)
		}
	}
	if IsDigest(base[:70]) || IsDigest(base+"0") || !IsDigest(base) {
		t.Errorf("IsDigest length checks")
	}
}
