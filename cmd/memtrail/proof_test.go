package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memtrail/memtrail/api"
	mlog "github.com/memtrail/memtrail/log"
	tapi "github.com/transparency-dev/tessera/api"
)

// TestCLIProofPolicy: "memtrail proof --policy" verifies the proof it
// fetches with the entry read from the log's entry bundle — a full bundle
// or the partial one of the checkpoint's size — and refuses, without
// writing it, a proof that does not verify: against a log that names the
// wrong index for an id, or serves another entry in place of the one
// proved. Under a policy of another log the proof fails its signature
// check. (A proof without the witness quorum, exit 3, is in
// testdata/script/walk_witness.txt.)
func TestCLIProofPolicy(t *testing.T) {
	cl := newCLILog(t, 100*time.Millisecond, 30*time.Second, nil)
	const n = 300 // a full entry bundle of 256, and a partial one of 44
	var files []string
	receipt := map[int][]byte{}
	for i := range n {
		r, _, err := cl.s.Projection(fmt.Sprintf("urn:proof:%d", i), time.Now().UTC(), 1, 16)
		if err != nil {
			t.Fatal(err)
		}
		receipt[i] = r.Canonical()
		files = append(files, writeFile(t, cl.dir, fmt.Sprintf("p%d.json", i), r.Canonical()))
	}
	if code, out, errOut := runCLI(t, cl.dir, append([]string{"submit", "--log", cl.url, "--wait"}, files...)...); code != 0 {
		t.Fatalf("submit: exit %d\n%s%s", code, out, errOut)
	}
	var info api.LogInfo
	if err := json.Unmarshal([]byte(httpGet(t, cl.url+"/v1/log")), &info); err != nil {
		t.Fatal(err)
	}
	policy := writeFile(t, cl.dir, "log.policy", []byte("log "+info.VerifierKey+"\nquorum none\n"))
	// The index each id was logged at (a batch is sequenced concurrently).
	indexOf := func(id string) int {
		var e api.Entry
		if err := json.Unmarshal([]byte(httpGet(t, cl.url+"/v1/projections/"+url.PathEscape(id))), &e); err != nil {
			t.Fatal(err)
		}
		return int(e.Index)
	}
	atIndex := map[int]int{} // index → receipt number
	for i := range n {
		atIndex[indexOf(fmt.Sprintf("urn:proof:%d", i))] = i
	}

	for _, args := range [][]string{{"--index", "3"}, {"--index", "299"}, {"--projection", "urn:proof:7"}} {
		out := filepath.Join(cl.dir, "ok.tlog-proof")
		os.Remove(out)
		code, stdout, errOut := runCLI(t, cl.dir, append([]string{"proof", "--log", cl.url, "--policy", policy, "-o", out}, args...)...)
		if code != 0 || errOut != "" {
			t.Errorf("proof %v --policy: exit %d\n%s%s", args, code, stdout, errOut)
			continue
		}
		i, _ := strconv.Atoi(args[1])
		if args[0] == "--index" {
			i = atIndex[i]
		} else {
			i = 7
		}
		rf := writeFile(t, cl.dir, "r.json", receipt[i])
		if code, out := runBin(t, buildMemtrail(t), "verify", "proof", out, "--receipt", rf, "--policy", policy); code != 0 {
			t.Errorf("verify proof of proof %v --policy: exit %d\n%s", args, code, out)
		}
	}

	// Under another log's policy: the checkpoint is not its.
	_, otherVKey, err := mlog.GenerateLogKey("other.test/log")
	if err != nil {
		t.Fatal(err)
	}
	other := writeFile(t, cl.dir, "other.policy", []byte("log "+otherVKey+"\nquorum none\n"))
	refused := func(what string, base string, wantErr string, args ...string) {
		t.Helper()
		out := filepath.Join(cl.dir, "refused.tlog-proof")
		os.Remove(out)
		code, _, errOut := runCLI(t, cl.dir, append([]string{"proof", "--log", base, "-o", out}, args...)...)
		if code != 1 || !strings.Contains(errOut, wantErr) {
			t.Errorf("%s: exit %d, want 1 and %q:\n%s", what, code, wantErr, errOut)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: the refused proof was written", what)
		}
	}
	refused("proof under another log's policy", cl.url, "does not verify under "+other+": log_signature checkpoint_invalid", "--index", "3", "--policy", other)

	// A log that lies: it names the index of another entry for an id, and
	// serves entry 5 in place of entry 4 in its bundle.
	real, _ := url.Parse(cl.url)
	proxy := httputil.NewSingleHostReverseProxy(real)
	lying := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/projections/urn:proof:7":
			r.URL.Path = "/v1/projections/urn:proof:8"
		case strings.HasPrefix(r.URL.Path, "/tile/entries/"):
			rec := httptest.NewRecorder()
			r.Header.Del("Accept-Encoding")
			proxy.ServeHTTP(rec, r)
			var eb tapi.EntryBundle
			if err := eb.UnmarshalText(rec.Body.Bytes()); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			eb.Entries[4] = eb.Entries[5]
			var b bytes.Buffer
			for _, e := range eb.Entries {
				binary.Write(&b, binary.BigEndian, uint16(len(e)))
				b.Write(e)
			}
			io.Copy(w, &b)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer lying.Close()
	refused("proof of an id the log names at another index", lying.URL, "is the projection urn:proof:8, not the projection urn:proof:7 it named", "--projection", "urn:proof:7", "--policy", policy)
	refused("proof of an entry the log replaced in its bundle", lying.URL, "does not verify under "+policy+": inclusion inclusion_proof_invalid", "--index", "4", "--policy", policy)
	// Without --policy, nothing was checked.
	if code, _, errOut := runCLI(t, cl.dir, "proof", "--log", lying.URL, "--projection", "urn:proof:7", "-o", filepath.Join(cl.dir, "unchecked.tlog-proof")); code != 0 {
		t.Errorf("proof without --policy from the lying log: exit %d\n%s", code, errOut)
	}
}
