package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/memtrail/memtrail/api"
	"github.com/memtrail/memtrail/internal/gen"
	mlog "github.com/memtrail/memtrail/log"
	"github.com/memtrail/memtrail/receipts"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
	_ "modernc.org/sqlite"
)

// The fault suite (docs/RELIABILITY.md, "Faults"): a running "memtrail
// serve" whose disk fills up, whose data directory turns read-only, whose
// index, manifests and tiles are damaged, and whose clock jumps. For each:
// no acknowledged receipt is lost, nothing corrupt is served, the failure
// is reported clearly, and "memtrail fsck" finds and repairs or explains
// the damage.

// faultLog is a log under test: its binary, data directory and signers.
type faultLog struct {
	t       *testing.T
	bin     string
	dir     string // holds trust.json and data/
	data    string
	trust   string
	signers *gen.Signers
	seq     atomic.Int64

	mu      sync.Mutex
	acked   map[string]api.Accepted // every acknowledged receipt, by id
	unknown []unknownSubmission     // answered 503 outcome_unknown
}

// unknownSubmission is a submission whose outcome the log could not tell.
type unknownSubmission struct {
	path, id string
	body     []byte
}

func newFaultLog(t *testing.T) *faultLog {
	t.Helper()
	f := &faultLog{t: t, bin: buildMemtrail(t), dir: t.TempDir(), signers: gen.Deterministic(13), acked: map[string]api.Accepted{}}
	f.data = filepath.Join(f.dir, "data")
	f.trust = filepath.Join(f.dir, "trust.json")
	if err := os.WriteFile(f.trust, receipts.MarshalTrust(f.signers.Trust(time.Now().Add(-time.Hour).UTC().Truncate(time.Second))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(f.data, 0o700); err != nil {
		t.Fatal(err)
	}
	return f
}

// answer is a submission's outcome.
type answer struct {
	status int
	code   string
	acc    api.Accepted
	err    error // no answer at all
}

func (a answer) String() string {
	if a.err != nil {
		return a.err.Error()
	}
	return fmt.Sprintf("%d %s", a.status, a.code)
}

// submit posts body and records it as acknowledged if the answer is 201.
func (f *faultLog) submit(client *http.Client, base, path, id string, body []byte) answer {
	resp, err := client.Post(base+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{err: err}
	}
	a := answer{status: resp.StatusCode}
	if resp.StatusCode == http.StatusCreated {
		if err := json.Unmarshal(raw, &a.acc); err != nil {
			return answer{err: fmt.Errorf("201 with %q: %w", raw, err)}
		}
		f.mu.Lock()
		f.acked[id] = a.acc
		f.mu.Unlock()
		return a
	}
	var ref api.Refusal
	json.Unmarshal(raw, &ref)
	a.code = ref.Code
	if a.code == "outcome_unknown" {
		f.mu.Lock()
		f.unknown = append(f.unknown, unknownSubmission{path, id, body})
		f.mu.Unlock()
	}
	return a
}

// settleUnknown resubmits every submission answered outcome_unknown until
// the log settles it: logged now (201), or logged before (a replay, whose
// entry then counts as acknowledged). Until then the log must keep
// refusing it with outcome_unknown, never log it twice.
func (f *faultLog) settleUnknown(base string) {
	f.t.Helper()
	f.mu.Lock()
	pending := f.unknown
	f.unknown = nil
	f.mu.Unlock()
	client := &http.Client{Timeout: 30 * time.Second}
	var logged, replayed int
	for _, u := range pending {
		deadline := time.Now().Add(15 * time.Second)
		for {
			a := f.submit(client, base, u.path, u.id, u.body)
			if a.status == http.StatusCreated {
				logged++
				break
			}
			if strings.HasSuffix(a.code, "_replay") {
				kind := strings.TrimPrefix(u.path, "/v1/")
				var e api.Entry
				if st, _, raw := httpGetStatus(f.t, base+"/v1/"+kind+"?id="+url.QueryEscape(u.id)); st != http.StatusOK || json.Unmarshal(raw, &e) != nil {
					f.t.Fatalf("%s %s: replay refused, but lookup gives %d", kind, u.id, st)
				}
				f.mu.Lock()
				f.acked[u.id] = api.Accepted{Index: e.Index, LeafHash: e.LeafHash, Kind: e.Kind, ID: e.ID}
				f.mu.Unlock()
				replayed++
				break
			}
			if a.code != "outcome_unknown" || time.Now().After(deadline) {
				f.t.Fatalf("resubmitting %s, answered outcome_unknown earlier: %s", u.id, a)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if len(pending) > 0 {
		f.t.Logf("%d submissions answered outcome_unknown: %d logged on resubmission, %d found logged already", len(pending), logged, replayed)
	}
}

// projection submits a new projection record.
func (f *faultLog) projection(client *http.Client, base string) answer {
	id := fmt.Sprintf("urn:fault:p:%d", f.seq.Add(1))
	r, _, err := f.signers.Projection(id, time.Now().UTC(), 2, 300)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.submit(client, base, "/v1/projections", id, r.Canonical())
}

// compaction submits a new compaction over n fresh items.
func (f *faultLog) compaction(client *http.Client, base string, n int) (answer, *receipts.Compaction, *receipts.Manifest) {
	id := fmt.Sprintf("urn:fault:c:%d", f.seq.Add(1))
	c, mf, err := f.signers.Compaction(id, gen.Items(id, n), "", nil, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.submit(client, base, "/v1/compactions", id, gen.CompactionSubmission(c, mf)), c, mf
}

func (f *faultLog) ackedCopy() map[string]api.Accepted {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]api.Accepted, len(f.acked))
	for k, v := range f.acked {
		out[k] = v
	}
	return out
}

// check verifies, against a running server, that every acknowledged
// receipt is logged where it was acknowledged and, if exact, that the log
// holds nothing else (a server that died mid-request may have logged
// receipts it could not acknowledge).
func (f *faultLog) check(base string, exact bool) {
	f.t.Helper()
	acked := f.ackedCopy()
	waitIndexedAll(f.t, base, acked)
	checkAcked(f.t, base, acked)
	if got := integratedSize(f.t, base); got < uint64(len(acked)) || exact && got != uint64(len(acked)) {
		f.t.Errorf("the log holds %d entries, %d were acknowledged", got, len(acked))
	}
}

// fsck runs "memtrail fsck --json" on the stopped log and returns its
// report and exit status.
func (f *faultLog) fsck(repair bool) (*mlog.FsckReport, int) {
	f.t.Helper()
	args := []string{"fsck", "--data", f.data, "--json"}
	if repair {
		args = append(args, "--repair")
	}
	cmd := exec.Command(f.bin, args...)
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		f.t.Fatal(err)
	}
	var rep mlog.FsckReport
	if err := json.Unmarshal(out, &rep); err != nil {
		f.t.Fatalf("fsck --json: %v\n%s", err, out)
	}
	return &rep, code
}

// problems lists the kinds of the problems of a report, with their state.
func problems(rep *mlog.FsckReport) []string {
	var out []string
	for _, p := range rep.Problems {
		s := p.Kind
		if p.Repaired {
			s += " (repaired)"
		}
		out = append(out, s)
	}
	return out
}

func hasProblem(rep *mlog.FsckReport, kind string) *mlog.Problem {
	for i := range rep.Problems {
		if rep.Problems[i].Kind == kind {
			return &rep.Problems[i]
		}
	}
	return nil
}

// refusedThenRepaired checks a directory damaged by what: memtrail serve
// refuses to start, its error containing every one of want; fsck reports
// problem as repairable (exit 1); fsck --repair repairs it (exit 0).
func (f *faultLog) refusedThenRepaired(what, problem string, want ...string) {
	f.t.Helper()
	code, stderr := f.startFails()
	ok := code == 1
	for _, w := range want {
		ok = ok && strings.Contains(stderr, w)
	}
	if !ok {
		f.t.Errorf("memtrail serve on %s: exit %d\n%s", what, code, stderr)
	}
	f.t.Logf("start on %s: exit %d: %s", what, code, firstLines(stderr, 2))
	rep, code := f.fsck(false)
	if p := hasProblem(rep, problem); code != 1 || p == nil || !p.Repairable {
		f.t.Errorf("fsck on %s: exit %d, %v", what, code, problems(rep))
	}
	rep, code = f.fsck(true)
	if p := hasProblem(rep, problem); code != 0 || p == nil || !p.Repaired {
		f.t.Errorf("fsck --repair on %s: exit %d, %v", what, code, problems(rep))
	}
	f.t.Logf("fsck --repair on %s: %v", what, problems(rep))
}

// startFails runs "memtrail serve" on the log, which must refuse to start:
// it returns the exit status and standard error.
func (f *faultLog) startFails() (int, string) {
	f.t.Helper()
	cmd := exec.Command(f.bin, "serve", "--data", f.data, "--trust", f.trust, "--listen", "127.0.0.1:"+freePort(f.t))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			f.t.Fatalf("memtrail serve started on a damaged directory (exit %v):\n%s", err, stderr.String())
		}
		return ee.ExitCode(), stderr.String()
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		f.t.Fatalf("memtrail serve neither started nor refused in 30s:\n%s", stderr.String())
		return 0, ""
	}
}

// waitIndexedAll waits until the index holds every acknowledged projection
// and compaction.
func waitIndexedAll(t *testing.T, base string, acked map[string]api.Accepted) {
	t.Helper()
	var last uint64
	for _, a := range acked {
		last = max(last, a.Index+1)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if metric(string(raw), "memtrail_index_watermark") >= float64(last) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the index did not reach %d in 15s: watermark %v, index errors %v, storage writable %v, tree size %v", last,
				metric(string(raw), "memtrail_index_watermark"), metric(string(raw), "memtrail_index_errors_total"),
				metric(string(raw), "memtrail_storage_writable"), metric(string(raw), "memtrail_tree_size"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metric returns the value of an unlabelled metric in Prometheus text, or
// -1.
func metric(text, name string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

func getMetric(t *testing.T, base, name string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return metric(string(raw), name)
}

// faultLoad submits projection records (and every tenth a compaction) from
// workers clients until stop is closed, and returns every answer that was
// neither 201 nor one of allowed.
func (f *faultLog) faultLoad(base string, workers int, stop <-chan struct{}, allowed ...string) (unexpected []string, counts map[string]int) {
	var mu sync.Mutex
	counts = map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			client := &http.Client{Timeout: 30 * time.Second}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var a answer
				if i%10 == w%10 {
					a, _, _ = f.compaction(client, base, 3)
				} else {
					a = f.projection(client, base)
				}
				key := a.String()
				if a.err != nil {
					key = "no answer"
				}
				mu.Lock()
				counts[key]++
				if a.status != http.StatusCreated && !containsString(allowed, key) && len(unexpected) < 10 {
					unexpected = append(unexpected, key)
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	return unexpected, counts
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// mountTmpfs mounts a tmpfs of size bytes on dir, unmounted at the end of
// the test. It returns false when this process may not mount.
func mountTmpfs(t *testing.T, dir string, size int64) bool {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.FormatInt(size, 10)+",mode=0700"); err != nil {
		t.Logf("couldn't mount a tmpfs (%v): simulating a full disk with RLIMIT_FSIZE instead", err)
		return false
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return true
}

// diskFull fills the file system under a running log and frees it again.
type diskFull struct {
	t      *testing.T
	dir    string // with a tmpfs: the mount point
	pid    int    // without: the server, whose RLIMIT_FSIZE is lowered
	filler string
}

func (d *diskFull) fill() {
	d.t.Helper()
	if d.dir == "" {
		out, err := exec.Command("prlimit", "--pid", strconv.Itoa(d.pid), "--fsize=4096:").CombinedOutput()
		if err != nil {
			d.t.Fatalf("prlimit: %v\n%s", err, out)
		}
		return
	}
	d.filler = filepath.Join(d.dir, "filler")
	fh, err := os.Create(d.filler)
	if err != nil {
		d.t.Fatal(err)
	}
	defer fh.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := fh.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				d.t.Fatalf("filling the disk: %v", err)
			}
			return
		}
	}
}

func (d *diskFull) free() {
	d.t.Helper()
	if d.dir == "" {
		out, err := exec.Command("prlimit", "--pid", strconv.Itoa(d.pid), "--fsize=unlimited:").CombinedOutput()
		if err != nil {
			d.t.Fatalf("prlimit: %v\n%s", err, out)
		}
		return
	}
	if err := os.Remove(d.filler); err != nil {
		d.t.Fatal(err)
	}
}

// TestFaultDiskFull fills the disk under a loaded log, then frees it. While
// full, every submission is refused with 503 storage_unavailable, the
// server says why once, and reads go on; nothing is acknowledged that was
// not written; once space returns the log accepts submissions again by
// itself; fsck finds the directory sound.
func TestFaultDiskFull(t *testing.T) {
	f := newFaultLog(t)
	tmpfs := mountTmpfs(t, f.data, 24<<20)
	srv := startServe(t, f.bin, f.data, f.trust)
	defer func() {
		if srv != nil {
			srv.stop(t)
		}
	}()
	full := &diskFull{t: t, pid: srv.cmd.Process.Pid}
	if tmpfs {
		full.dir = f.data
	}
	client := &http.Client{Timeout: 30 * time.Second}
	for i := 0; i < 20; i++ {
		if a := f.projection(client, srv.url); a.status != http.StatusCreated {
			t.Fatalf("before the fault: %s", a)
		}
	}

	stop := make(chan struct{})
	type loadResult struct {
		unexpected []string
		counts     map[string]int
	}
	loadDone := make(chan loadResult)
	go func() {
		u, c := f.faultLoad(srv.url, 4, stop, "503 storage_unavailable", "503 outcome_unknown")
		loadDone <- loadResult{u, c}
	}()
	time.Sleep(300 * time.Millisecond)
	full.fill()
	filledAt := len(f.ackedCopy())
	waitFor(t, 5*time.Second, "the log notices the full disk", func() bool {
		return getMetric(t, srv.url, "memtrail_storage_writable") == 0
	})
	time.Sleep(500 * time.Millisecond)
	// Full: a new submission is refused, reads go on.
	if a := f.projection(client, srv.url); a.status != http.StatusServiceUnavailable || a.code != "storage_unavailable" {
		t.Errorf("a projection on a full disk: %s, want 503 storage_unavailable", a)
	}
	if a, _, _ := f.compaction(client, srv.url, 4); a.status != http.StatusServiceUnavailable || a.code != "storage_unavailable" {
		t.Errorf("a compaction on a full disk: %s, want 503 storage_unavailable", a)
	}
	checkAcked(t, srv.url, f.ackedCopy())
	for _, p := range []string{"/checkpoint", "/v1/log", "/healthz"} {
		resp, err := http.Get(srv.url + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s on a full disk: %d", p, resp.StatusCode)
		}
	}
	duringFull := len(f.ackedCopy())
	full.free()
	waitFor(t, 5*time.Second, "the log notices the space", func() bool {
		return getMetric(t, srv.url, "memtrail_storage_writable") == 1
	})
	time.Sleep(500 * time.Millisecond)
	close(stop)
	res := <-loadDone
	if len(res.unexpected) > 0 {
		t.Errorf("answers other than 201, 503 storage_unavailable and 503 outcome_unknown: %v", res.unexpected)
	}
	t.Logf("answers under load: %v; acknowledged %d before the disk filled, %d while it was full (sequenced before the fault was seen), %d in all",
		res.counts, filledAt, duringFull-filledAt, len(f.ackedCopy()))
	f.settleUnknown(srv.url)
	if res.counts["503 storage_unavailable"] == 0 {
		t.Error("no submission was refused while the disk was full")
	}
	if a := f.projection(client, srv.url); a.status != http.StatusCreated {
		t.Errorf("after space returned: %s", a)
	}
	f.check(srv.url, true)
	logs := srv.stderr.tail(1 << 20)
	for _, want := range []string{"refusing submissions: the log cannot write to its data directory", "accepting submissions: the log can write to its data directory again"} {
		if n := strings.Count(logs, want); n != 1 {
			t.Errorf("the server log says %q %d times, want once:\n%s", want, n, logs)
		}
	}
	srv.stop(t)
	srv = nil
	rep, code := f.fsck(false)
	if code != 0 {
		t.Errorf("fsck after a full disk: exit %d, %v", code, problems(rep))
	}
	t.Logf("fsck: tree size %d, problems %v", rep.TreeSize, problems(rep))
}

// readOnly makes a directory read-only under a running log: as root, by a
// read-only bind mount of the directory on itself (new opens fail with
// EROFS, as after a remount); otherwise by removing the write permission of
// every directory under it (EACCES).
type readOnly struct {
	t     *testing.T
	dir   string
	bind  bool
	modes map[string]os.FileMode
}

func makeReadOnly(t *testing.T, dir string) *readOnly {
	t.Helper()
	r := &readOnly{t: t, dir: dir}
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err == nil {
		r.bind = true
		// Under load the server may open a file for writing through the
		// new mount before it turns read-only, which makes the remount
		// busy: detach that mount and try again.
		for i := 0; ; i++ {
			err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, "")
			if err == nil {
				return r
			}
			r.undo()
			if !errors.Is(err, syscall.EBUSY) || i == 50 {
				t.Fatalf("remounting %s read-only: %v", dir, err)
			}
			time.Sleep(10 * time.Millisecond)
			if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
				t.Fatalf("bind-mounting %s: %v", dir, err)
			}
		}
	}
	r.modes = map[string]os.FileMode{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		r.modes[p] = fi.Mode().Perm()
		return os.Chmod(p, fi.Mode().Perm()&^0o222)
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *readOnly) how() string {
	if r.bind {
		return "read-only bind mount"
	}
	return "chmod a-w"
}

func (r *readOnly) undo() {
	r.t.Helper()
	if r.bind {
		// A file the server is opening through the mount at that moment
		// makes it busy for an instant: retry, then detach lazily.
		var err error
		for i := 0; i < 50; i++ {
			if err = syscall.Unmount(r.dir, 0); !errors.Is(err, syscall.EBUSY) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if errors.Is(err, syscall.EBUSY) {
			err = syscall.Unmount(r.dir, syscall.MNT_DETACH)
		}
		if err != nil {
			r.t.Fatalf("unmounting the read-only bind mount: %v", err)
		}
		return
	}
	for p, m := range r.modes {
		if err := os.Chmod(p, m); err != nil {
			r.t.Fatal(err)
		}
	}
}

// TestFaultReadOnly makes the data directory read-only under a running log,
// first while it is idle, then under load. Idle, the log notices within a
// second and refuses submissions with 503 storage_unavailable while reads go
// on, and accepts them again once the directory is writable. Under load, a
// sequencing batch may reach Tessera's lock file before the log notices: the
// POSIX driver then panics and the process exits. Either way nothing
// acknowledged is lost, a restart on the read-only directory refuses with a
// clear error, and once it is writable the log starts and fsck finds it
// sound.
func TestFaultReadOnly(t *testing.T) {
	f := newFaultLog(t)
	srv := startServe(t, f.bin, f.data, f.trust)
	client := &http.Client{Timeout: 30 * time.Second}
	for i := 0; i < 20; i++ {
		a := f.projection(client, srv.url)
		if i%5 == 0 {
			a, _, _ = f.compaction(client, srv.url, 3)
		}
		if a.status != http.StatusCreated {
			t.Fatalf("before the fault: %s", a)
		}
	}

	// Idle.
	ro := makeReadOnly(t, f.data)
	t.Logf("read-only by %s", ro.how())
	waitFor(t, 5*time.Second, "the log noticing the read-only directory", func() bool {
		return getMetric(t, srv.url, "memtrail_storage_writable") == 0
	})
	if a := f.projection(client, srv.url); a.status != http.StatusServiceUnavailable || a.code != "storage_unavailable" {
		t.Errorf("a projection on a read-only directory: %s, want 503 storage_unavailable", a)
	}
	if a, _, _ := f.compaction(client, srv.url, 2); a.status != http.StatusServiceUnavailable || a.code != "storage_unavailable" {
		t.Errorf("a compaction on a read-only directory: %s, want 503 storage_unavailable", a)
	}
	checkAcked(t, srv.url, f.ackedCopy())
	ro.undo()
	waitFor(t, 5*time.Second, "the log noticing the directory is writable", func() bool {
		return getMetric(t, srv.url, "memtrail_storage_writable") == 1
	})
	if a := f.projection(client, srv.url); a.status != http.StatusCreated {
		t.Errorf("writable again: %s", a)
	}
	f.check(srv.url, true)
	if logs := srv.stderr.tail(1 << 20); !strings.Contains(logs, "refusing submissions: the log cannot write to its data directory") {
		t.Errorf("the server did not say the directory is not writable:\n%s", logs)
	}

	// Under load.
	stop := make(chan struct{})
	type loadResult struct {
		unexpected []string
		counts     map[string]int
	}
	loadDone := make(chan loadResult)
	go func() {
		u, c := f.faultLoad(srv.url, 4, stop, "503 storage_unavailable", "503 outcome_unknown", "no answer")
		loadDone <- loadResult{u, c}
	}()
	time.Sleep(300 * time.Millisecond)
	ro = makeReadOnly(t, f.data)
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	res := <-loadDone
	if len(res.unexpected) > 0 {
		t.Errorf("answers other than 201, 503 storage_unavailable and none: %v", res.unexpected)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.cmd.Wait() }()
	select {
	case err := <-exited:
		t.Logf("under load the server exited (%v): Tessera's POSIX driver panics when its lock file is read-only; answers %v", err, res.counts)
		if logs := srv.stderr.tail(1 << 20); !strings.Contains(logs, "read-only file system") && !strings.Contains(logs, "permission denied") {
			t.Errorf("the server exited without saying why:\n%s", logs)
		}
	case <-time.After(200 * time.Millisecond):
		t.Logf("under load the server refused submissions and kept running; answers %v", res.counts)
		if res.counts["503 storage_unavailable"] == 0 {
			t.Error("no submission was refused on the read-only directory")
		}
		srv.cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	}
	// A restart on the read-only directory refuses, and says why.
	code, stderr := f.startFails()
	if code != 1 || !strings.Contains(stderr, "cannot write to its data directory") || !strings.Contains(stderr, "hint:") {
		t.Errorf("memtrail serve on a read-only directory: exit %d\n%s", code, stderr)
	}
	ro.undo()
	srv = startServe(t, f.bin, f.data, f.trust)
	f.check(srv.url, false)
	if a := f.projection(client, srv.url); a.status != http.StatusCreated {
		t.Errorf("after the restart: %s", a)
	}
	srv.stop(t)
	rep, code := f.fsck(false)
	if code != 0 {
		t.Errorf("fsck after a read-only directory: exit %d, %v", code, problems(rep))
	}
	t.Logf("fsck: tree size %d, %d acknowledged, problems %v", rep.TreeSize, len(f.ackedCopy()), problems(rep))
}

// batch submits n new projection records in one /v1/batch request.
func (f *faultLog) batch(base string, n int) {
	f.t.Helper()
	var body bytes.Buffer
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("urn:fault:p:%d", f.seq.Add(1))
		r, _, err := f.signers.Projection(ids[i], time.Now().UTC(), 1, 100)
		if err != nil {
			f.t.Fatal(err)
		}
		body.Write(r.Canonical())
		body.WriteByte('\n')
	}
	resp, err := http.Post(base+"/v1/batch", "application/x-ndjson", &body)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for i := 0; i < n; i++ {
		var res api.BatchResult
		if err := dec.Decode(&res); err != nil {
			f.t.Fatalf("batch answer line %d: %v", i+1, err)
		}
		if res.Status != http.StatusCreated || res.Accepted == nil {
			f.t.Fatalf("batch line %d: %+v", i+1, res)
		}
		f.mu.Lock()
		f.acked[ids[i]] = *res.Accepted
		f.mu.Unlock()
	}
}

// tilePath returns the path of a resource in the log's tiles directory.
func (f *faultLog) tilePath(rel string) string {
	return filepath.Join(f.data, "log", filepath.FromSlash(rel))
}

// truncate halves a file, as a write torn by a crash leaves it.
func truncateHalf(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
}

func httpGetStatus(t *testing.T, u string) (int, api.Refusal, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var ref api.Refusal
	if resp.StatusCode >= 400 {
		json.Unmarshal(raw, &ref)
	}
	return resp.StatusCode, ref, raw
}

// TestFaultTornTile tears tiles as a crash on storage that does not honour
// fsync can: the log refuses to start on a torn tile at the right edge of
// the tree (every later tile would be built on it) and says to run fsck;
// a torn interior tile is not served, and proofs that need it fail
// clearly; fsck --repair rewrites both from the entries. A torn entry
// bundle cannot be rebuilt from the log: fsck says so, and the log does not
// start on it.
func TestFaultTornTile(t *testing.T) {
	f := newFaultLog(t)
	srv := startServe(t, f.bin, f.data, f.trust)
	f.batch(srv.url, 300) // a full level-0 tile, a partial one, a level-1 tile
	f.check(srv.url, true)
	srv.stop(t)

	// The right edge: the partial level-0 tile the next batch extends.
	edge := f.tilePath("tile/0/001.p/44")
	truncateHalf(t, edge)
	f.refusedThenRepaired("a torn right-edge tile", "tile_mismatch", "tile damaged", "fsck --data")
	// Torn the other way: the right length, zeros where the hashes were.
	for _, rel := range []string{"tile/0/001.p/44", "tile/1/000.p/1"} {
		fi, err := os.Stat(f.tilePath(rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.tilePath(rel), make([]byte, fi.Size()), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stderr := f.startFails()
		if code != 1 || !strings.Contains(stderr, "tile damaged") {
			t.Errorf("memtrail serve on a zeroed %s: exit %d\n%s", rel, code, stderr)
		}
		t.Logf("start on a zeroed %s: exit %d: %s", rel, code, firstLines(stderr, 1))
		if rep, code := f.fsck(true); code != 0 || hasProblem(rep, "tile_mismatch") == nil {
			t.Errorf("fsck --repair on a zeroed %s: exit %d, %v", rel, code, problems(rep))
		}
	}

	// An interior tile: the log starts, but does not serve it.
	interior := f.tilePath("tile/0/000")
	good, err := os.ReadFile(interior)
	if err != nil {
		t.Fatal(err)
	}
	truncateHalf(t, interior)
	srv = startServe(t, f.bin, f.data, f.trust)
	// Lookups carry a proof: below 256 it needs the torn tile.
	for id, a := range f.ackedCopy() {
		st, ref, _ := httpGetStatus(t, srv.url+"/v1/projections?id="+id)
		switch {
		case a.Index < 256 && (st != http.StatusInternalServerError || ref.Code != "tile_damaged"):
			t.Errorf("lookup of %s at %d through a torn tile: %d %q, want 500 tile_damaged", id, a.Index, st, ref.Code)
		case a.Index >= 256 && st != http.StatusOK:
			t.Errorf("lookup of %s at %d: %d %q", id, a.Index, st, ref.Code)
		}
	}
	if st, ref, _ := httpGetStatus(t, srv.url+"/tile/0/000"); st != http.StatusInternalServerError || ref.Code != "tile_damaged" {
		t.Errorf("GET a torn interior tile: %d %q, want 500 tile_damaged", st, ref.Code)
	}
	if st, ref, _ := httpGetStatus(t, srv.url+"/v1/proof/7"); st != http.StatusInternalServerError || ref.Code != "tile_damaged" {
		t.Errorf("a proof through a torn interior tile: %d %q, want 500 tile_damaged", st, ref.Code)
	}
	f.batch(srv.url, 20) // the right edge is sound: the log goes on
	srv.stop(t)
	if !strings.Contains(srv.stderr.tail(1<<20), "not serving a damaged tile") {
		t.Error("the server did not log the damaged tile")
	}
	rep, code := f.fsck(true)
	if p := hasProblem(rep, "tile_mismatch"); code != 0 || p == nil || !p.Repaired {
		t.Errorf("fsck --repair on a torn interior tile: exit %d, %v", code, problems(rep))
	}
	if fixed, _ := os.ReadFile(interior); !bytes.Equal(fixed, good) {
		t.Error("fsck --repair did not rewrite the interior tile as it was")
	}
	srv = startServe(t, f.bin, f.data, f.trust)
	if st, _, raw := httpGetStatus(t, srv.url+"/tile/0/000"); st != http.StatusOK || !bytes.Equal(raw, good) {
		t.Errorf("GET the repaired tile: %d", st)
	}
	if st, _, _ := httpGetStatus(t, srv.url+"/v1/proof/7"); st != http.StatusOK {
		t.Errorf("a proof through the repaired tile: %d", st)
	}
	f.check(srv.url, true)
	srv.stop(t)

	// The last entry bundle: entries are the log; nothing rebuilds them.
	bundles, err := filepath.Glob(f.tilePath("tile/entries/001.p/*"))
	if err != nil || len(bundles) == 0 {
		t.Fatalf("no partial entry bundle: %v", err)
	}
	truncateHalf(t, bundles[len(bundles)-1])
	code, stderr := f.startFails()
	if code != 1 || !strings.Contains(stderr, "tile damaged") {
		t.Errorf("memtrail serve on a torn entry bundle: exit %d\n%s", code, stderr)
	}
	rep, code = f.fsck(true)
	if p := hasProblem(rep, "entry_bundle_unreadable"); code != 1 || p == nil || p.Repairable {
		t.Errorf("fsck --repair on a torn entry bundle: exit %d, %v", code, problems(rep))
	}
	t.Logf("fsck --repair on a torn entry bundle: exit %d, %v", code, problems(rep))
}

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], " | ")
}

// replay submits an acknowledged projection id again: it must be refused
// naming the index where it was logged.
func (f *faultLog) replay(base, id string) {
	f.t.Helper()
	a, ok := f.ackedCopy()[id]
	if !ok {
		f.t.Fatalf("%s was not acknowledged", id)
	}
	r, _, err := f.signers.Projection(id, time.Now().UTC(), 1, 100)
	if err != nil {
		f.t.Fatal(err)
	}
	resp, err := http.Post(base+"/v1/projections", "application/json", bytes.NewReader(r.Canonical()))
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var ref api.Refusal
	json.NewDecoder(resp.Body).Decode(&ref)
	if resp.StatusCode != http.StatusConflict || ref.Code != "projection_replay" || ref.FirstIndex == nil || *ref.FirstIndex != a.Index {
		f.t.Errorf("replay of %s (logged at %d): %d %+v", id, a.Index, resp.StatusCode, ref)
	}
}

// anyProjection returns an acknowledged projection id and its index.
func (f *faultLog) anyProjection() (string, uint64) {
	for id, a := range f.ackedCopy() {
		if a.Kind == "projection" {
			return id, a.Index
		}
	}
	f.t.Fatal("no projection acknowledged")
	return "", 0
}

func removeIndex(t *testing.T, data string) {
	t.Helper()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(filepath.Join(data, "index.db"+suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
}

// dropIDAt empties the slot of the id table (see log/idtable.go) that maps
// an id to index idx.
func dropIDAt(t *testing.T, path string, idx uint64) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	raw, err := io.ReadAll(fh)
	if err != nil {
		t.Fatal(err)
	}
	const header, slot = 4096, 32
	n := 0
	for off := header; off+slot <= len(raw); off += slot {
		s := raw[off : off+slot]
		if !bytes.Equal(s[:16], make([]byte, 16)) && binary.BigEndian.Uint64(s[16:24]) == idx {
			if _, err := fh.WriteAt(make([]byte, 16), int64(off)); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	if n != 1 {
		t.Fatalf("found %d slots for index %d", n, idx)
	}
}

// TestFaultIndex deletes and damages the index, which is derived from the
// log: deleted (while stopped or while running), the next start rebuilds it
// from the log; damaged, the log refuses to start and fsck --repair
// rebuilds it; altered (an id removed, so the log would take it again), fsck
// finds the entry and --repair rebuilds the index. Afterwards every
// acknowledged receipt is found where it was logged, and replays are
// refused.
func TestFaultIndex(t *testing.T) {
	f := newFaultLog(t)
	srv := startServe(t, f.bin, f.data, f.trust)
	client := &http.Client{Timeout: 30 * time.Second}
	f.batch(srv.url, 50)
	for i := 0; i < 3; i++ {
		if a, _, _ := f.compaction(client, srv.url, 4); a.status != http.StatusCreated {
			t.Fatalf("compaction: %s", a)
		}
	}
	f.check(srv.url, true)
	srv.stop(t)

	// Deleted while stopped.
	removeIndex(t, f.data)
	srv = startServe(t, f.bin, f.data, f.trust)
	f.check(srv.url, true)
	id, idx := f.anyProjection()
	f.replay(srv.url, id)
	if !strings.Contains(srv.stderr.tail(1<<20), "catching up the index from the log") {
		t.Error("the server did not say it rebuilt the index")
	}
	srv.stop(t)
	if rep, code := f.fsck(false); code != 0 {
		t.Errorf("fsck after the index was rebuilt: exit %d, %v", code, problems(rep))
	}

	// Damaged while stopped: garbage over the database header.
	fh, err := os.OpenFile(filepath.Join(f.data, "index.db"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteAt(bytes.Repeat([]byte("garbage!"), 512), 0)
	fh.Close()
	f.refusedThenRepaired("a damaged index", "index_damaged", "index", "memtrail fsck")
	srv = startServe(t, f.bin, f.data, f.trust)
	f.check(srv.url, true)
	f.replay(srv.url, id)
	// A checkpoint published now is archived.
	f.batch(srv.url, 10)
	var archived uint64
	waitFor(t, 10*time.Second, "a checkpoint covering the batch, archived", func() bool {
		var info api.LogInfo
		if _, _, raw := httpGetStatus(t, srv.url+"/v1/log"); json.Unmarshal(raw, &info) != nil || info.TreeSize < uint64(len(f.ackedCopy())) {
			return false
		}
		archived = info.TreeSize
		st, _, _ := httpGetStatus(t, fmt.Sprintf("%s/v1/checkpoints/%d", srv.url, archived))
		return st == http.StatusOK
	})
	f.batch(srv.url, 10) // and a later one, so that only the archive has it
	waitFor(t, 10*time.Second, "a later checkpoint", func() bool {
		var info api.LogInfo
		_, _, raw := httpGetStatus(t, srv.url+"/v1/log")
		return json.Unmarshal(raw, &info) == nil && info.TreeSize > archived
	})
	srv.stop(t)

	// Altered: the row of one id removed. Started like this, the log would
	// take that id again; fsck finds it.
	dropIDAt(t, filepath.Join(f.data, "index.db-ids"), idx)
	rep, code := f.fsck(false)
	p := hasProblem(rep, "index_mismatch")
	if code != 1 || p == nil || p.Index == nil || *p.Index != idx || !p.Repairable {
		t.Errorf("fsck on an index missing entry %d: exit %d, %+v", idx, code, rep.Problems)
	}
	if rep, code := f.fsck(true); code != 0 {
		t.Errorf("fsck --repair on an altered index: exit %d, %v", code, problems(rep))
	}
	srv = startServe(t, f.bin, f.data, f.trust)
	f.replay(srv.url, id)
	f.check(srv.url, true)
	if st, _, _ := httpGetStatus(t, fmt.Sprintf("%s/v1/checkpoints/%d", srv.url, archived)); st != http.StatusOK {
		t.Errorf("the checkpoint archived at size %d before fsck --repair rebuilt the index: %d", archived, st)
	}

	// Deleted while running: the log notices, refuses submissions (its
	// connections no longer share one database) and says to restart; the
	// restart rebuilds the index.
	removeIndex(t, f.data)
	waitFor(t, 5*time.Second, "the log noticing its index is gone", func() bool {
		return getMetric(t, srv.url, "memtrail_storage_writable") == 0
	})
	if a := f.projection(client, srv.url); a.status != http.StatusServiceUnavailable || a.code != "storage_unavailable" {
		t.Errorf("a submission once the index is gone: %s, want 503 storage_unavailable", a)
	}
	if logs := srv.stderr.tail(1 << 20); !strings.Contains(logs, "restart memtrail serve to rebuild it") {
		t.Errorf("the server did not say to restart:\n%s", logs)
	}
	srv.stop(t)
	srv = startServe(t, f.bin, f.data, f.trust)
	f.check(srv.url, true)
	f.replay(srv.url, id)
	srv.stop(t)
	if rep, code := f.fsck(false); code != 0 {
		t.Errorf("fsck at the end: exit %d, %v", code, problems(rep))
	}
}

// TestFaultManifest alters and deletes the stored manifests of logged
// compactions. An altered manifest is never served (500 manifest_corrupt,
// not the altered bytes, nor another manifest), and no supersession is
// judged against it; a missing one is reported as such; fsck reports both,
// at the compaction's entry, and explains that they must be restored; once
// they are, everything is served again. A restart that must re-index a
// compaction whose manifest is missing refuses, naming it.
func TestFaultManifest(t *testing.T) {
	f := newFaultLog(t)
	srv := startServe(t, f.bin, f.data, f.trust)
	client := &http.Client{Timeout: 30 * time.Second}
	type logged struct {
		c  *receipts.Compaction
		mf *receipts.Manifest
		at uint64
	}
	var cs []logged
	for i := 0; i < 3; i++ {
		a, c, mf := f.compaction(client, srv.url, 4)
		if a.status != http.StatusCreated {
			t.Fatalf("compaction: %s", a)
		}
		cs = append(cs, logged{c, mf, a.acc.Index})
	}
	f.batch(srv.url, 10)
	f.check(srv.url, true)
	path := func(root string) string {
		h := strings.TrimPrefix(root, "sha256:")
		return filepath.Join(f.data, "manifests", h[:2], h+".json")
	}
	altered, swapped, missing := cs[0], cs[1], cs[2]
	// One byte changed; another replaced by a valid manifest of other
	// items; a third deleted.
	raw, err := os.ReadFile(path(altered.c.SourceItemsMerkleRoot))
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 1
	os.WriteFile(path(altered.c.SourceItemsMerkleRoot), raw, 0o644)
	os.WriteFile(path(swapped.c.SourceItemsMerkleRoot), missing.mf.Canonical(), 0o644)
	os.Remove(path(missing.c.SourceItemsMerkleRoot))

	for _, c := range []logged{altered, swapped} {
		st, ref, body := httpGetStatus(t, srv.url+"/v1/manifests/"+c.c.SourceItemsMerkleRoot)
		if st != http.StatusInternalServerError || ref.Code != "manifest_corrupt" || bytes.Contains(body, []byte("items")) {
			t.Errorf("GET an altered manifest: %d %q %.100s", st, ref.Code, body)
		}
		item := c.mf.Items[0].ItemDigest
		st, ref, _ = httpGetStatus(t, srv.url+"/v1/compactions/"+c.c.EventID+"/sources/"+item+"/proof")
		if st != http.StatusInternalServerError || ref.Code != "manifest_corrupt" {
			t.Errorf("source proof from an altered manifest: %d %q", st, ref.Code)
		}
	}
	if st, ref, _ := httpGetStatus(t, srv.url+"/v1/manifests/"+missing.c.SourceItemsMerkleRoot); st != http.StatusNotFound || ref.Code != "not_found" {
		t.Errorf("GET a missing manifest: %d %q", st, ref.Code)
	}
	item := missing.mf.Items[0].ItemDigest
	if st, ref, _ := httpGetStatus(t, srv.url+"/v1/compactions/"+missing.c.EventID+"/sources/"+item+"/proof"); st != http.StatusInternalServerError || ref.Code != "manifest_missing" {
		t.Errorf("source proof of a compaction whose manifest is missing: %d %q", st, ref.Code)
	}
	// Superseding the altered compaction needs its manifest: refused, not
	// judged against the altered bytes.
	purged := altered.mf.Items[0].ItemDigest
	ts, err := f.signers.Tombstone("urn:fault:t:1", purged, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if a := f.submit(client, srv.url, "/v1/tombstones", ts.TombstoneID, ts.Canonical()); a.status != http.StatusCreated {
		t.Fatalf("tombstone: %s", a)
	}
	var rest []receipts.ManifestItem
	for _, it := range altered.mf.Items[1:] {
		rest = append(rest, it)
	}
	sup, supMf, err := f.signers.Compaction("urn:fault:c:superseding", rest, altered.c.EventID, []string{purged}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := f.submit(client, srv.url, "/v1/compactions", sup.EventID, gen.CompactionSubmission(sup, supMf)); a.status != http.StatusInternalServerError || a.code != "manifest_corrupt" {
		t.Errorf("superseding a compaction whose manifest is altered: %s, want 500 manifest_corrupt", a)
	}
	srv.stop(t)

	rep, code := f.fsck(true)
	if code != 1 {
		t.Errorf("fsck --repair with damaged manifests: exit %d, %v", code, problems(rep))
	}
	for _, want := range []struct {
		kind string
		at   uint64
	}{{"manifest_corrupt", altered.at}, {"manifest_corrupt", swapped.at}, {"manifest_missing", missing.at}} {
		found := false
		for _, p := range rep.Problems {
			if p.Kind == want.kind && p.Index != nil && *p.Index == want.at && !p.Repairable && strings.Contains(p.Detail, "restore it") {
				found = true
			}
		}
		if !found {
			t.Errorf("fsck does not report %s at entry %d: %+v", want.kind, want.at, rep.Problems)
		}
	}
	t.Logf("fsck --repair with damaged manifests: exit %d, %v", code, problems(rep))

	// Re-indexing needs the manifests: a restart after the index is lost
	// refuses, naming the missing one.
	removeIndex(t, f.data)
	code, stderr := f.startFails()
	if code != 1 || !strings.Contains(stderr, missing.c.SourceItemsMerkleRoot) && !strings.Contains(stderr, swapped.c.SourceItemsMerkleRoot) && !strings.Contains(stderr, altered.c.SourceItemsMerkleRoot) {
		t.Errorf("memtrail serve re-indexing without manifests: exit %d\n%s", code, stderr)
	}
	t.Logf("start re-indexing without manifests: exit %d: %s", code, firstLines(stderr, 1))

	// Restored from the producers' copies: anyone can check them against
	// the logged roots.
	for _, c := range cs {
		if err := os.WriteFile(path(c.c.SourceItemsMerkleRoot), c.mf.Canonical(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if rep, code := f.fsck(true); code != 0 {
		t.Errorf("fsck after restoring the manifests: exit %d, %v", code, problems(rep))
	}
	srv = startServe(t, f.bin, f.data, f.trust)
	f.check(srv.url, true)
	for _, c := range cs {
		if st, _, body := httpGetStatus(t, srv.url+"/v1/manifests/"+c.c.SourceItemsMerkleRoot); st != http.StatusOK || !bytes.Equal(body, c.mf.Canonical()) {
			t.Errorf("GET a restored manifest: %d", st)
		}
	}
	if a := f.submit(client, srv.url, "/v1/compactions", sup.EventID, gen.CompactionSubmission(sup, supMf)); a.status != http.StatusCreated {
		t.Errorf("superseding once the manifest is restored: %s", a)
	}
	srv.stop(t)
}

// signedCheckpoint is a checkpoint the log published, opened with its key.
type signedCheckpoint struct {
	size uint64
	root []byte
}

// readCheckpoint fetches and verifies the published checkpoint.
func readCheckpoint(t *testing.T, base string, v note.Verifier) signedCheckpoint {
	t.Helper()
	st, _, raw := httpGetStatus(t, base+"/checkpoint")
	if st != http.StatusOK {
		t.Fatalf("GET /checkpoint: %d", st)
	}
	n, err := note.Open(raw, note.VerifierList(v))
	if err != nil {
		t.Fatalf("the checkpoint does not verify: %v", err)
	}
	lines := strings.Split(n.Text, "\n")
	size, err1 := strconv.ParseUint(lines[1], 10, 64)
	root, err2 := base64.StdEncoding.DecodeString(lines[2])
	if len(lines) < 3 || err1 != nil || err2 != nil {
		t.Fatalf("malformed checkpoint %q", n.Text)
	}
	return signedCheckpoint{size, root}
}

// checkConsistent checks that each checkpoint extends the one before it.
func checkConsistent(t *testing.T, base string, cps []signedCheckpoint) {
	t.Helper()
	for i := 1; i < len(cps); i++ {
		a, b := cps[i-1], cps[i]
		if b.size < a.size {
			t.Errorf("checkpoint %d has size %d after size %d", i, b.size, a.size)
			continue
		}
		if a.size == 0 || a.size == b.size {
			if a.size == b.size && !bytes.Equal(a.root, b.root) {
				t.Errorf("two checkpoints of size %d with different roots", a.size)
			}
			continue
		}
		var c api.Consistency
		st, _, raw := httpGetStatus(t, fmt.Sprintf("%s/v1/consistency?from=%d&to=%d", base, a.size, b.size))
		if st != http.StatusOK || json.Unmarshal(raw, &c) != nil {
			t.Fatalf("consistency %d→%d: %d %s", a.size, b.size, st, raw)
		}
		path := make([][]byte, len(c.Proof))
		for j, h := range c.Proof {
			path[j], _ = base64.StdEncoding.DecodeString(h)
		}
		if err := proof.VerifyConsistency(rfc6962.DefaultHasher, a.size, b.size, path, a.root, b.root); err != nil {
			t.Errorf("checkpoint of size %d is not consistent with the one of size %d: %v", b.size, a.size, err)
		}
	}
}

// TestFaultClock runs the log on a clock that jumps back ten minutes, then
// forward ten minutes, then back to the time (memtrail serve --debug-clock).
// Freshness decisions follow the clock: a record made at the true time is
// from the future when the clock is behind, stale when it is ahead, and a
// record made at the clock's time is accepted. Nothing already logged
// changes, and every checkpoint extends the one before it. Checkpoint
// publication itself must not depend on the wall clock: with the published
// checkpoint's file time an hour in the future, as after the system clock
// is set back an hour, checkpoints go on being published.
func TestFaultClock(t *testing.T) {
	f := newFaultLog(t)
	dport := freePort(t)
	srv := startServe(t, f.bin, f.data, f.trust, "--debug-listen", "127.0.0.1:"+dport, "--debug-clock")
	client := &http.Client{Timeout: 30 * time.Second}
	var info api.LogInfo
	_, _, raw := httpGetStatus(t, srv.url+"/v1/log")
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(info.VerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	var cps []signedCheckpoint
	publish := func() {
		t.Helper()
		// Until a checkpoint covers everything acknowledged.
		var want uint64
		for _, a := range f.ackedCopy() {
			want = max(want, a.Index+1)
		}
		waitFor(t, 10*time.Second, "a checkpoint covering every acknowledged entry", func() bool {
			cp := readCheckpoint(t, srv.url, v)
			if len(cps) == 0 || cp.size != cps[len(cps)-1].size {
				cps = append(cps, cp)
			}
			return cp.size >= want
		})
	}
	setClock := func(d time.Duration) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPut, "http://127.0.0.1:"+dport+"/debug/clock?offset="+d.String(), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("PUT /debug/clock: %d", resp.StatusCode)
		}
	}
	made := func(at time.Time) answer {
		t.Helper()
		id := fmt.Sprintf("urn:fault:p:%d", f.seq.Add(1))
		r, _, err := f.signers.Projection(id, at.UTC(), 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		return f.submit(client, srv.url, "/v1/projections", id, r.Canonical())
	}
	for i := 0; i < 10; i++ {
		if a := made(time.Now()); a.status != http.StatusCreated {
			t.Fatalf("before the jumps: %s", a)
		}
	}
	publish()
	before := f.ackedCopy()

	steps := []struct {
		offset time.Duration
		want   []string // for a record made at the true time
	}{
		{-10 * time.Minute, []string{"400 record_from_future"}},
		{10 * time.Minute, []string{"400 trust_snapshot_stale", "400 record_stale"}},
		{0, []string{"201 "}},
	}
	for _, s := range steps {
		setClock(s.offset)
		got := made(time.Now())
		if !containsString(s.want, got.String()) {
			t.Errorf("clock %s: a record made at the true time: %s, want %v", s.offset, got, s.want)
		}
		if a := made(time.Now().Add(s.offset)); a.status != http.StatusCreated {
			t.Errorf("clock %s: a record made at the clock's time: %s", s.offset, a)
		}
		ts, err := f.signers.Tombstone(fmt.Sprintf("urn:fault:t:%d", f.seq.Add(1)), receipts.Digest([]byte(s.offset.String())), time.Now().Add(s.offset))
		if err != nil {
			t.Fatal(err)
		}
		if a := f.submit(client, srv.url, "/v1/tombstones", ts.TombstoneID, ts.Canonical()); a.status != http.StatusCreated {
			t.Errorf("clock %s: a tombstone purged at the clock's time: %s", s.offset, a)
		}
		publish()
		checkAcked(t, srv.url, before)
		t.Logf("clock %+v: a record made at the true time: %s; at the clock's time: 201; checkpoint size %d", s.offset, got, cps[len(cps)-1].size)
	}

	// The system clock set back an hour, as Tessera's publisher sees it:
	// the published checkpoint's file time is an hour ahead.
	cpFile := filepath.Join(f.data, "log", "checkpoint")
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(cpFile, future, future); err != nil {
		t.Fatal(err)
	}
	if a := made(time.Now()); a.status != http.StatusCreated {
		t.Fatalf("after the checkpoint's time moved: %s", a)
	}
	publish()
	if !strings.Contains(srv.stderr.tail(1<<20), "checkpoint's file time was ahead of the clock") {
		t.Error("the server did not say the checkpoint's time was ahead of the clock")
	}
	checkConsistent(t, srv.url, cps)
	f.check(srv.url, true)
	srv.stop(t)
	t.Logf("%d checkpoints seen, sizes %d to %d, each consistent with the one before", len(cps), cps[0].size, cps[len(cps)-1].size)
	if rep, code := f.fsck(false); code != 0 {
		t.Errorf("fsck after the clock jumps: exit %d, %v", code, problems(rep))
	}
}
