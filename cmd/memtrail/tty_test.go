//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPty opens a pseudo-terminal and returns its controlling side and
// the terminal a command writes to.
func openPty(t *testing.T) (ctrl, tty *os.File) {
	t.Helper()
	ctrl, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no pseudo-terminals under CI: %v", err) // Linux CI has /dev/ptmx: the terminal tests must run
		}
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(ctrl.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ctrl.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ctrl, tty
}

// runOnTerminal runs the binary with standard error (stderrTTY) or standard
// output on a terminal, and returns the exit status, what the terminal
// showed and what the other stream got.
func runOnTerminal(t *testing.T, dir string, stderrTTY bool, args ...string) (int, string, string) {
	t.Helper()
	ctrl, tty := openPty(t)
	defer ctrl.Close()
	cmd := exec.Command(buildMemtrail(t), args...)
	cmd.Dir = dir
	var other bytes.Buffer
	if stderrTTY {
		cmd.Stdout, cmd.Stderr = &other, tty
	} else {
		cmd.Stdout, cmd.Stderr = tty, &other
	}
	shown := make(chan string)
	go func() {
		var b bytes.Buffer
		io.Copy(&b, ctrl) // ends with EIO once the terminal is closed
		shown <- b.String()
	}()
	err := cmd.Run()
	tty.Close()
	var screen string
	select {
	case screen = <-shown:
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal did not close")
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, screen, other.String()
}

// TestCLITerminal: on a terminal, "submit --wait" and "proof --wait" show
// how long they have waited for a checkpoint (off one they are silent:
// the scripts check that), and "verify proof" shows the summary without
// the JSON report unless --json - asks for it.
func TestCLITerminal(t *testing.T) {
	cl := newCLILog(t, 2*time.Second, 10*time.Second, nil)
	frag := writeFile(t, cl.dir, "memory.txt", []byte("user prefers formal emails\n"))
	sign := func(id string) string {
		code, rec, errOut := runCLI(t, cl.dir, "sign", "projection", "--key", cl.adapter, "--id", id, frag)
		if code != 0 {
			t.Fatalf("sign: exit %d\n%s", code, errOut)
		}
		return writeFile(t, cl.dir, strings.ReplaceAll(id, ":", "_")+".json", []byte(rec))
	}

	p := sign("urn:p:tty1")
	code, screen, out := runOnTerminal(t, cl.dir, true, "submit", "--log", cl.url, "--proof-dir", "proofs", p)
	if code != 0 || !strings.Contains(screen, "waiting for a published checkpoint to cover 1 entry") {
		t.Errorf("submit --proof-dir on a terminal: exit %d, terminal %q, stdout %q", code, screen, out)
	}
	if !strings.Contains(out, "proof written to proofs/urn_p_tty1.json.tlog-proof") || strings.Contains(out, "waiting") {
		t.Errorf("submit --proof-dir: stdout %q", out)
	}

	q := sign("urn:p:tty2")
	if code, out, errOut := runCLI(t, cl.dir, "submit", "--log", cl.url, q); code != 0 {
		t.Fatalf("submit: exit %d\n%s%s", code, out, errOut)
	}
	code, screen, out = runOnTerminal(t, cl.dir, true, "proof", "--log", cl.url, "--projection", "urn:p:tty2", "--wait")
	if code != 0 || !strings.Contains(screen, "waiting for a published checkpoint to cover entry 1") || !strings.HasPrefix(out, "c2sp.org/tlog-proof@v1\n") {
		t.Errorf("proof --wait on a terminal: exit %d, terminal %q, stdout %q", code, screen, out)
	}

	policy := writeFile(t, cl.dir, "log.policy", []byte("log "+cl.l.VerifierKey()+"\nquorum none\n"))
	args := []string{"verify", "proof", "proofs/urn_p_tty1.json.tlog-proof", "--receipt", p, "--policy", policy}
	code, screen, errOut := runOnTerminal(t, cl.dir, false, args...)
	if code != 0 || strings.Contains(screen, `"result"`) || !strings.Contains(errOut, "proof of projection urn:p:tty1: VALID") {
		t.Errorf("verify proof, standard output on a terminal: exit %d, terminal %q, stderr %q", code, screen, errOut)
	}
	code, screen, _ = runOnTerminal(t, cl.dir, false, append(args, "--json", "-")...)
	if code != 0 || !strings.Contains(screen, `"result": "VALID"`) {
		t.Errorf("verify proof --json - on a terminal: exit %d, terminal %q", code, screen)
	}
}
