package verifier_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memtrail/memtrail/api"
	"github.com/memtrail/memtrail/internal/gen"
	"github.com/memtrail/memtrail/receipts"
	"github.com/memtrail/memtrail/verifier"
	"github.com/memtrail/memtrail/verifier/backend"
)

func TestRegistryFile(t *testing.T) {
	at := time.Date(2026, 7, 29, 17, 1, 0, 0, time.UTC)
	if _, err := verifier.ParseRegistry(nil); !errors.Is(err, verifier.ErrMalformed) || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("an empty registry file parsed: %v", err)
	}
	f := verifier.NewRegistryFile()
	d := receipts.Digest([]byte("r"))
	if err := f.Add(verifier.RegistryEntry{RegisteredAt: at, RecordDigest: d, ProjectionID: "urn:p:1"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Add(verifier.RegistryEntry{RegisteredAt: at, RecordDigest: d, ProjectionID: "urn:p:1"}); err == nil {
		t.Errorf("an id was added twice")
	}
	if err := f.Add(verifier.RegistryEntry{RegisteredAt: at, RecordDigest: d, ProjectionID: "has space"}); err == nil {
		t.Errorf("an id with a space was added")
	}
	f.Add(verifier.RegistryEntry{RegisteredAt: at.Add(time.Second), RecordDigest: d, ProjectionID: "urn:p:2"})
	b := f.Format()
	want := verifier.RegistryHeader + "\n2026-07-29T17:01:00.000Z " + d + " urn:p:1\n2026-07-29T17:01:01.000Z " + d + " urn:p:2\n"
	if string(b) != want {
		t.Fatalf("Format =\n%s\nwant\n%s", b, want)
	}
	back, err := verifier.ParseRegistry(b)
	if err != nil || !bytes.Equal(back.Format(), b) {
		t.Fatalf("round trip: %v", err)
	}
	if e, ok := back.Lookup("urn:p:2"); !ok || !e.RegisteredAt.Equal(at.Add(time.Second)) {
		t.Errorf("Lookup = %+v, %v", e, ok)
	}
	line := "2026-07-29T17:01:00.000Z " + d + " urn:p:1\n"
	for name, in := range map[string]string{
		"no header":        line,
		"other header":     "memtrail-projection-registry/v2\n" + line,
		"no final newline": strings.TrimSuffix(verifier.RegistryHeader+"\n"+line, "\n"),
		"duplicate id":     verifier.RegistryHeader + "\n" + line + line,
		"two spaces":       verifier.RegistryHeader + "\n" + strings.Replace(line, " ", "  ", 1),
		"seconds only":     verifier.RegistryHeader + "\n" + strings.Replace(line, ".000Z", "Z", 1),
		"bad digest":       verifier.RegistryHeader + "\n" + strings.Replace(line, "sha256:", "sha512:", 1),
		"blank line":       verifier.RegistryHeader + "\n\n" + line,
		"carriage return":  verifier.RegistryHeader + "\r\n" + line,
		"tab in id":        verifier.RegistryHeader + "\n" + strings.Replace(line, "urn:p:1", "urn:\tp", 1),
	} {
		if _, err := verifier.ParseRegistry([]byte(in)); !errors.Is(err, verifier.ErrMalformed) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestFileRegistry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry")
	r := backend.NewFileRegistry(path)
	ctx := context.Background()
	at := time.Date(2026, 7, 29, 17, 1, 0, 0, time.UTC)
	reg, err := r.Register(ctx, "urn:p:1", []byte("record one"), at)
	if err != nil || reg.RecordDigest != receipts.Digest([]byte("record one")) || reg.Registry != path {
		t.Fatalf("Register = %+v, %v", reg, err)
	}
	_, err = r.Register(ctx, "urn:p:1", []byte("record two"), at.Add(time.Minute))
	var re *verifier.ReplayError
	if !errors.As(err, &re) || re.First.RegisteredAt != "2026-07-29T17:01:00.000Z" || receipts.ErrorCode(err) != receipts.CodeProjectionReplay {
		t.Fatalf("second registration: %v", err)
	}
	// A corrupt registry is an error, never a silent reset.
	os.WriteFile(path, []byte("garbage\n"), 0o644)
	if _, err := r.Register(ctx, "urn:p:2", []byte("x"), at); err == nil || errors.As(err, &re) {
		t.Errorf("corrupt registry: %v", err)
	}
}

// TestFileRegistryConcurrent registers one id from many goroutines, each
// with its own lock file descriptor: exactly one wins.
func TestFileRegistryConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry")
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, replays := 0, 0
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := backend.NewFileRegistry(path)
			_, err := r.Register(context.Background(), "urn:p:same", []byte(fmt.Sprint("record ", i)), time.Now())
			mu.Lock()
			defer mu.Unlock()
			var re *verifier.ReplayError
			switch {
			case err == nil:
				wins++
			case errors.As(err, &re):
				replays++
			default:
				t.Errorf("Register: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || replays != 15 {
		t.Errorf("%d registrations and %d replays, want 1 and 15", wins, replays)
	}
}

// TestFileRegistryProcesses registers ids from several processes at once
// (this test binary, run again): every id is registered exactly once and
// the file holds every registration.
func TestFileRegistryProcesses(t *testing.T) {
	if path := os.Getenv("MEMTRAIL_TEST_REGISTRY"); path != "" {
		r := backend.NewFileRegistry(path)
		won := 0
		for i := range 20 {
			_, err := r.Register(context.Background(), "urn:p:"+strconv.Itoa(i), []byte(os.Getenv("MEMTRAIL_TEST_WORKER")), time.Now())
			var re *verifier.ReplayError
			switch {
			case err == nil:
				won++
			case !errors.As(err, &re):
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
		}
		fmt.Printf("won %d\n", won)
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), "registry")
	const procs = 4
	outs := make([]bytes.Buffer, procs)
	cmds := make([]*exec.Cmd, procs)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFileRegistryProcesses$")
		cmd.Env = append(os.Environ(), "MEMTRAIL_TEST_REGISTRY="+path, "MEMTRAIL_TEST_WORKER="+strconv.Itoa(i))
		cmd.Stdout = &outs[i]
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	total := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
		var n int
		fmt.Sscanf(outs[i].String(), "won %d", &n)
		total += n
	}
	b, _ := os.ReadFile(path)
	f, err := verifier.ParseRegistry(b)
	if err != nil {
		t.Fatal(err)
	}
	if total != 20 || len(f.Entries) != 20 {
		t.Errorf("%d registrations won, %d in the file; want 20 and 20", total, len(f.Entries))
	}
}

// TestLogRegistry uses a log as the registry of projection ids.
func TestLogRegistry(t *testing.T) {
	dir := t.TempDir()
	key := newLogKey(t)
	s := gen.Deterministic(13)
	l := openRealLog(t, dir, key, s, s.Trust(time.Now().Add(-time.Hour)))
	defer l.close()
	srv := httptest.NewServer(api.New(l.Log, api.Config{Logger: quiet}).Handler())
	defer srv.Close()
	reg, err := backend.NewLogRegistry(srv.URL, key.policy, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := backend.NewLogRegistry(srv.URL, nil, nil); err == nil {
		t.Errorf("a log registry without a tlog-policy was made")
	}
	ctx := context.Background()
	r1, _, _ := s.Projection("urn:p:log", time.Now().UTC(), 1, 20)
	r2, _, _ := s.Projection("urn:p:log", time.Now().UTC().Add(time.Millisecond), 2, 20)

	got, err := reg.Register(ctx, r1.ProjectionID, r1.Canonical(), time.Now())
	if err != nil || got.LogIndex == nil || got.Existing || got.Proof == "" {
		t.Fatalf("first registration: %+v, %v", got, err)
	}
	// The same record again: bound to it, not a replay.
	again, err := reg.Register(ctx, r1.ProjectionID, r1.Canonical(), time.Now())
	if err != nil || !again.Existing || *again.LogIndex != *got.LogIndex || again.Proof == "" {
		t.Fatalf("same record again: %+v, %v", again, err)
	}
	// Another record with the id: a replay naming the index.
	_, err = reg.Register(ctx, r2.ProjectionID, r2.Canonical(), time.Now())
	var re *verifier.ReplayError
	if !errors.As(err, &re) || re.First.LogIndex == nil || *re.First.LogIndex != *got.LogIndex || re.First.Proof == "" ||
		re.First.RecordDigest != receipts.Digest(r1.Canonical()) {
		t.Fatalf("other record: %v", err)
	}
	// The same log under another log's policy proves nothing.
	foreign, _ := backend.NewLogRegistry(srv.URL, newLogKey(t).policy, nil)
	_, err = foreign.Register(ctx, r1.ProjectionID, r1.Canonical(), time.Now())
	var ue *verifier.UnprovenError
	if !errors.As(err, &ue) || ue.Code != verifier.CodeCheckpointInvalid {
		t.Fatalf("under another log's policy: %v", err)
	}
	// A record the log refuses (from an unpinned adapter) is an error.
	other := gen.Deterministic(14)
	other.AdapterID = "urn:memtrail:adapter:other"
	r3, _, _ := other.Projection("urn:p:other", time.Now().UTC(), 1, 20)
	if _, err := reg.Register(ctx, r3.ProjectionID, r3.Canonical(), time.Now()); err == nil || errors.As(err, &re) {
		t.Errorf("refused record: %v", err)
	}
}

// TestLogRegistryLyingLog: a log's answer without a valid inclusion proof
// registers nothing, whatever it claims.
func TestLogRegistryLyingLog(t *testing.T) {
	dir := t.TempDir()
	key := newLogKey(t)
	s := gen.Deterministic(15)
	l := openRealLog(t, dir, key, s, s.Trust(time.Now().Add(-time.Hour)))
	defer l.close()
	ctx := context.Background()
	r1, _, _ := s.Projection("urn:p:lie", time.Now().UTC(), 1, 20)
	r2, _, _ := s.Projection("urn:p:lie", time.Now().UTC().Add(time.Millisecond), 1, 20)
	r3, _, _ := s.Projection("urn:p:elsewhere", time.Now().UTC(), 1, 20)
	// Genuine proofs from the real log: of a record of another id, and of
	// another record with this id.
	idx := l.submit(&receipts.Submission{Receipt: r3})
	idx2 := l.submit(&receipts.Submission{Receipt: r2})
	if _, err := l.WaitPublished(ctx, idx2); err != nil {
		t.Fatal(err)
	}
	realProof, err := l.LatestInclusionProof(ctx, idx)
	if err != nil {
		t.Fatal(err)
	}
	realProof2, err := l.LatestInclusionProof(ctx, idx2)
	if err != nil {
		t.Fatal(err)
	}
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	jsonString := func(b []byte) string { j, _ := json.Marshal(string(b)); return string(j) }
	leaf := b64(verifier.LeafHash(r1.Canonical()))
	for name, c := range map[string]struct {
		lookup, submit, proof string // answers; "" is 404
		code                  receipts.Code
		replay                bool
	}{
		"lookup claims this record, no proof": {lookup: `{"index":0,"leaf_hash":"` + leaf + `"}`, code: verifier.CodeSingleUseUnproven},
		"lookup claims this record, proof of another": {
			lookup: `{"index":` + fmt.Sprint(idx) + `,"leaf_hash":"` + leaf + `","receipt":` + string(r1.Canonical()) + `,"proof":` + jsonString(realProof) + `}`,
			code:   verifier.CodeInclusionInvalid},
		"lookup claims another record, no proof": {
			lookup: `{"index":3,"receipt":` + string(r2.Canonical()) + `}`, code: verifier.CodeSingleUseUnproven},
		"lookup claims a record of another id": {
			lookup: `{"index":` + fmt.Sprint(idx) + `,"receipt":` + string(r3.Canonical()) + `,"proof":` + jsonString(realProof) + `}`,
			code:   verifier.CodeSingleUseUnproven},
		"lookup claims another record, proof at another index": {
			lookup: `{"index":` + fmt.Sprint(idx) + `,"receipt":` + string(r2.Canonical()) + `,"proof":` + jsonString(realProof2) + `}`,
			code:   verifier.CodeInclusionInvalid},
		"lookup proves another record with this id": {
			lookup: `{"index":` + fmt.Sprint(idx2) + `,"receipt":` + string(r2.Canonical()) + `,"proof":` + jsonString(realProof2) + `}`,
			replay: true},
		"submission accepted, no proof":         {submit: `{"index":0,"leaf_hash":"` + leaf + `"}`, code: verifier.CodeSingleUseUnproven},
		"submission accepted, garbage proof":    {submit: `{"index":0,"leaf_hash":"` + leaf + `","proof":"nonsense"}`, code: verifier.CodeProofMalformed},
		"submission accepted, proof of another": {submit: `{"index":` + fmt.Sprint(idx) + `,"proof":` + jsonString(realProof) + `}`, code: verifier.CodeInclusionInvalid},
		"submission accepted, /v1/proof of another": {submit: `{"index":` + fmt.Sprint(idx) + `,"proof_pending":"slow"}`, proof: string(realProof),
			code: verifier.CodeInclusionInvalid},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				answer, status := "", http.StatusOK
				switch {
				case r.Method == http.MethodGet && r.URL.Path == "/v1/projections":
					answer = c.lookup
				case r.Method == http.MethodPost && r.URL.Path == "/v1/projections":
					answer, status = c.submit, http.StatusCreated
				case strings.HasPrefix(r.URL.Path, "/v1/proof/"):
					answer = c.proof
				}
				if answer == "" {
					http.Error(w, `{"code":"not_found","detail":"no"}`, http.StatusNotFound)
					return
				}
				w.WriteHeader(status)
				io.WriteString(w, answer)
			}))
			defer srv.Close()
			reg, err := backend.NewLogRegistry(srv.URL, key.policy, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := reg.Register(ctx, r1.ProjectionID, r1.Canonical(), time.Now())
			if c.replay {
				var re *verifier.ReplayError
				if !errors.As(err, &re) || *re.First.LogIndex != idx2 || re.First.RecordDigest != receipts.Digest(r2.Canonical()) {
					t.Fatalf("registered %+v, error %v; want a replay at %d", got, err, idx2)
				}
				return
			}
			var ue *verifier.UnprovenError
			if !errors.As(err, &ue) || ue.Code != c.code {
				t.Fatalf("registered %+v, error %v; want %s", got, err, c.code)
			}
		})
	}
}
