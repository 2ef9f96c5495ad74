package log

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memtrail/memtrail/internal/metricshttp"
	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/tessera"
)

// testWitnessKey is a cosignature/v1 key made by hand, so that the test can
// sign what an honest witness never would.
type testWitnessKey struct {
	name string
	priv ed25519.PrivateKey
	hash uint32
	vkey string
}

func newTestWitnessKey(t *testing.T, name string) *testWitnessKey {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	kb := append([]byte{0x04}, pub...)
	h := sha256.Sum256(append([]byte(name+"\n"), kb...))
	k := &testWitnessKey{name: name, priv: priv, hash: binary.BigEndian.Uint32(h[:4])}
	k.vkey = fmt.Sprintf("%s+%08x+%s", name, k.hash, base64.StdEncoding.EncodeToString(kb))
	return k
}

// line is a signature line of k, under keyName, cosigning msg at time ts.
func (k *testWitnessKey) line(keyName string, msg []byte, ts uint64) []byte {
	sig := ed25519.Sign(k.priv, []byte(fmt.Sprintf("cosignature/v1\ntime %d\n%s", ts, msg)))
	b := binary.BigEndian.AppendUint32(nil, k.hash)
	b = binary.BigEndian.AppendUint64(b, ts)
	b = append(b, sig...)
	return []byte("\u2014 " + keyName + " " + base64.StdEncoding.EncodeToString(b) + "\n")
}

func TestCheckCosignatures(t *testing.T) {
	k := newTestWitnessKey(t, "witness.test/w")
	v, err := fnote.NewVerifierForCosignatureV1(k.vkey)
	if err != nil {
		t.Fatal(err)
	}
	text := []byte("memtrail.test/log\n3\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n")
	signed := append(append(append([]byte{}, text...), '\n'), "\u2014 memtrail.test/log AAAAAQ==\n"...)
	request := append([]byte("old 0\n\n"), signed...)
	now := uint64(time.Now().Unix())
	for _, c := range []struct {
		name   string
		answer []byte
		ok     bool
	}{
		{"one cosignature", k.line(k.name, text, now), true},
		{"two cosignatures", append(k.line(k.name, text, now), k.line(k.name, text, now-1)...), true},
		{"a blank line first, signing the whole signed note", append([]byte("\n"), k.line(k.name, signed, now)...), false},
		{"over the signed note", k.line(k.name, signed, now), false},
		{"timestamp of 2^63", k.line(k.name, text, 1<<63), false},
		{"another key name", k.line("witness.test/other", text, now), false},
		{"another checkpoint", k.line(k.name, []byte("memtrail.test/log\n4\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"), now), false},
		{"empty", nil, false},
		{"no final newline", bytes.TrimSuffix(k.line(k.name, text, now), []byte("\n")), false},
		{"garbage", []byte("\x01\x02\n"), false},
	} {
		err := checkCosignatures(v, request, c.answer)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestWitnessTransportCaps: an answer over the cap is a failure, and a
// redirect is not followed.
func TestWitnessTransportCaps(t *testing.T) {
	var elsewhere atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer target.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big/add-checkpoint":
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(strings.Repeat("9", maxWitnessAnswer+1)))
		case "/redirect/add-checkpoint":
			http.Redirect(w, r, target.URL+"/internal", http.StatusTemporaryRedirect)
		}
	}))
	defer srv.Close()
	k := newTestWitnessKey(t, "witness.test/w")
	k2 := newTestWitnessKey(t, "witness.test/w2")
	wg, err := tessera.NewWitnessGroupFromPolicy([]byte(fmt.Sprintf("witness big %s %s/big\nwitness redirect %s %s/redirect\ngroup g 1 big redirect\nquorum g\n", k.vkey, srv.URL, k2.vkey, srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	client := newWitnessClient(&wg, newMetrics(), slog.New(slog.DiscardHandler))
	if resp, err := client.Post(srv.URL+"/big/add-checkpoint", "text/plain", strings.NewReader("old 0\n\n")); err == nil {
		resp.Body.Close()
		t.Errorf("an answer over %d bytes was taken: %s", maxWitnessAnswer, resp.Status)
	}
	resp, err := client.Post(srv.URL+"/redirect/add-checkpoint", "text/plain", strings.NewReader("old 0\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || elsewhere.Load() != 0 {
		t.Errorf("redirect: %s, %d requests elsewhere", resp.Status, elsewhere.Load())
	}
}

// TestWitnessUpDown: while a witness fails, Tessera asks it again every
// checkpoint interval; the log says so once when it stops answering and
// once when it answers again, and memtrail_witness_up follows it.
func TestWitnessUpDown(t *testing.T) {
	var status atomic.Int64
	status.Store(http.StatusServiceUnavailable)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := int(status.Load()); s == http.StatusConflict {
			w.Header().Set("Content-Type", "text/x.tlog.size")
			w.WriteHeader(s)
			fmt.Fprintln(w, 7)
		} else {
			w.WriteHeader(s)
		}
	}))
	defer srv.Close()
	k := newTestWitnessKey(t, "witness.test/w")
	wg, err := tessera.NewWitnessGroupFromPolicy([]byte(fmt.Sprintf("witness w %s %s\nquorum w\n", k.vkey, srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	m := newMetrics()
	m.witnessing = true
	client := newWitnessClient(&wg, m, slog.New(slog.NewTextHandler(&logs, nil)))
	ask := func(n int) {
		for range n {
			resp, err := client.Post(srv.URL+"/add-checkpoint", "text/plain", strings.NewReader("old 0\n\n"))
			if err == nil {
				resp.Body.Close()
			}
		}
	}
	up := func() string {
		rec := httptest.NewRecorder()
		metricshttp.Handler("v0-test", m).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		for _, l := range strings.Split(rec.Body.String(), "\n") {
			if strings.HasPrefix(l, "memtrail_witness_up{") {
				return l
			}
		}
		return ""
	}
	if got := up(); got != "" {
		t.Errorf("before any request: %q, want no memtrail_witness_up series", got)
	}
	ask(5)
	if n := strings.Count(logs.String(), "witness is not cosigning"); n != 1 {
		t.Errorf("5 failed requests logged %d down lines, want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), `reason="answered 503 Service Unavailable"`) {
		t.Errorf("down line: %s", logs.String())
	}
	if got, want := up(), `memtrail_witness_up{witness="witness.test/w"} 0`; got != want {
		t.Errorf("while down: %q, want %q", got, want)
	}
	status.Store(http.StatusConflict)
	ask(3)
	if n := strings.Count(logs.String(), "witness is cosigning again"); n != 1 {
		t.Errorf("3 answered requests logged %d up lines, want 1:\n%s", n, logs.String())
	}
	if got, want := up(), `memtrail_witness_up{witness="witness.test/w"} 1`; got != want {
		t.Errorf("once back: %q, want %q", got, want)
	}
	// No answer at all is down too.
	srv.Close()
	ask(3)
	if n := strings.Count(logs.String(), "witness is not cosigning"); n != 2 || !strings.Contains(logs.String(), `reason="no answer: `) {
		t.Errorf("after the witness went away: %d down lines, want 2:\n%s", n, logs.String())
	}
	if lines := strings.Count(logs.String(), "\n"); lines != 3 {
		t.Errorf("%d log lines for 11 requests, want 3:\n%s", lines, logs.String())
	}
}
