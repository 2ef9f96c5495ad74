package main

import (
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// stderrIsTerminal reports whether standard error is a terminal: progress
// is shown only then, so that scripts and logs see none of it.
func stderrIsTerminal() bool { return term.IsTerminal(int(os.Stderr.Fd())) }

// ticker shows a line of progress on standard error, rewritten every
// second, while something is waited for; on anything but a terminal it
// shows nothing. The zero value is not usable: call startTicker.
type ticker struct {
	mu    sync.Mutex
	text  func(elapsed time.Duration) string
	stop  chan struct{}
	done  chan struct{}
	shown bool
}

// startTicker shows text(elapsed) now and every second until stop is
// called, when standard error is a terminal.
func startTicker(text func(elapsed time.Duration) string) *ticker {
	if !stderrIsTerminal() {
		return noTicker()
	}
	t := &ticker{text: text, stop: make(chan struct{}), done: make(chan struct{})}
	start := time.Now()
	go func() {
		defer close(t.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			t.show(t.text(time.Since(start).Truncate(time.Second)))
			select {
			case <-t.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return t
}

// noTicker returns a ticker that shows nothing.
func noTicker() *ticker {
	t := &ticker{stop: make(chan struct{}), done: make(chan struct{})}
	close(t.done)
	return t
}

func (t *ticker) show(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(os.Stderr, "\r\033[K%s", line)
	t.shown = true
}

// end stops the ticker and clears its line.
func (t *ticker) end() {
	select {
	case <-t.stop:
	default:
		close(t.stop)
	}
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.shown {
		fmt.Fprint(os.Stderr, "\r\033[K")
		t.shown = false
	}
}
