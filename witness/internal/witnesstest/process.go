package witnesstest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// GoTool returns the go command: the one of GOROOT, as set by "go test"
// and "go run", or else the one on PATH.
func GoTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// BuildMemtrail builds the memtrail command into dir and returns its path.
func BuildMemtrail(dir string) (string, error) {
	bin := filepath.Join(dir, "memtrail")
	cmd := exec.Command(GoTool(), "build", "-o", bin, "github.com/memtrail/memtrail/cmd/memtrail")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/memtrail: %w\n%s", err, out)
	}
	return bin, nil
}

// A Process is a running "memtrail witness serve".
type Process struct {
	Addr string // host:port it listens on
	VKey string // the verifier key it printed

	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr bytes.Buffer
	exited chan struct{}
	err    error // from Wait, once exited is closed
}

// Start runs "bin witness serve --listen 127.0.0.1:0 args..." and waits
// until it listens.
func Start(bin string, args ...string) (*Process, error) {
	p := &Process{exited: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"witness", "serve", "--listen", "127.0.0.1:0"}, args...)...)
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	vkeyc := make(chan string, 1)
	addrc := make(chan string, 1)
	var readers sync.WaitGroup
	readers.Go(func() {
		s := bufio.NewScanner(stdout)
		if s.Scan() {
			vkeyc <- s.Text()
		}
		io.Copy(io.Discard, stdout)
	})
	readers.Go(func() {
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
	})
	go func() {
		// Wait closes the pipes, so let the readers drain them first.
		readers.Wait()
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	timeout := time.After(60 * time.Second)
	for p.Addr == "" || p.VKey == "" {
		select {
		case p.Addr = <-addrc:
		case p.VKey = <-vkeyc:
		case <-p.exited:
			return nil, fmt.Errorf("witness exited at start: %v\n%s", p.err, p.Log())
		case <-timeout:
			p.Kill()
			return nil, fmt.Errorf("witness did not start listening\n%s", p.Log())
		}
	}
	return p, nil
}

// URL is the base URL of the witness.
func (p *Process) URL() string { return "http://" + p.Addr }

// Log returns what the process wrote on standard error so far.
func (p *Process) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Process) Kill() {
	p.cmd.Process.Kill()
	<-p.exited
}

// Stop sends SIGTERM and waits for the process to exit, returning an error
// if it does not exit cleanly within timeout.
func (p *Process) Stop(timeout time.Duration) error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.err
	case <-time.After(timeout):
		p.Kill()
		return errors.New("witness did not stop after SIGTERM")
	}
}
