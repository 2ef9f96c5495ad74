package witness_test

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildOut  []byte
)

// buildMemtrail builds the memtrail command once per test binary and
// returns its path.
func buildMemtrail(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "memtrail-witness-test-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "memtrail")
		cmd := exec.Command(goTool(), "build", "-o", builtBin, "github.com/memtrail/memtrail/cmd/memtrail")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build ./cmd/memtrail: %v\n%s", buildErr, buildOut)
	}
	return builtBin
}

func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// witnessProcess is a running "memtrail witness serve".
type witnessProcess struct {
	cmd    *exec.Cmd
	addr   string // host:port
	vkey   string
	mu     sync.Mutex
	stderr bytes.Buffer
	exited chan struct{}
	err    error // from Wait, once exited is closed
}

// startWitness starts the witness and waits until it listens.
func startWitness(t testing.TB, bin string, args ...string) *witnessProcess {
	t.Helper()
	p := &witnessProcess{exited: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"witness", "serve", "--listen", "127.0.0.1:0"}, args...)...)
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	vkeyc := make(chan string, 1)
	addrc := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		if s.Scan() {
			vkeyc <- s.Text()
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() {
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			line := s.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			if strings.Contains(line, "msg=listening") {
				for _, f := range strings.Fields(line) {
					if a, ok := strings.CutPrefix(f, "addr="); ok {
						addrc <- a
					}
				}
			}
		}
	}()
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	timeout := time.After(30 * time.Second)
	for p.addr == "" || p.vkey == "" {
		select {
		case p.addr = <-addrc:
		case p.vkey = <-vkeyc:
		case <-p.exited:
			t.Fatalf("witness exited at start: %v\n%s", p.err, p.log())
		case <-timeout:
			p.kill()
			t.Fatalf("witness did not start listening\n%s", p.log())
		}
	}
	return p
}

func (p *witnessProcess) url() string { return "http://" + p.addr }

func (p *witnessProcess) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *witnessProcess) kill() {
	p.cmd.Process.Kill()
	<-p.exited
}
