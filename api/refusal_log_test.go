package api

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer the server's goroutines may write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRefusalLog: every refused submission is one log line at info level
// naming its status, code, kind, id (once known), batch line and the
// client's address; accepted ones log nothing.
func TestRefusalLog(t *testing.T) {
	var logs syncBuffer
	ts := newTestServerWith(t, 100*time.Millisecond, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	p := ts.projection("urn:p:logged")
	if code, _, b := ts.do("POST", "/v1/projections", "application/json", p); code != 201 {
		t.Fatalf("first submission: %d %s", code, b)
	}
	if s := logs.String(); s != "" {
		t.Errorf("an accepted submission was logged: %s", s)
	}
	lines := func() []string {
		if logs.String() == "" {
			return nil
		}
		return strings.Split(strings.TrimSpace(logs.String()), "\n")
	}
	for i, tc := range []struct {
		do   func()
		want []string
	}{
		{func() { ts.do("POST", "/v1/projections", "application/json", p) },
			[]string{"level=INFO", "msg=refused", "status=409", "code=projection_replay", "kind=projection", "id=urn:p:logged", "remote=127.0.0.1:"}},
		{func() { ts.do("POST", "/v1/projections", "application/json", []byte(`{"@version": 1}`)) },
			[]string{"status=400", "code=record_invalid", "kind=projection", "remote=127.0.0.1:"}},
		{func() { ts.do("POST", "/v1/tombstones", "text/plain", []byte(`{}`)) },
			[]string{"status=415", "code=unsupported_media_type", "kind=tombstone"}},
		{func() { ts.batch(ts.projection("urn:p:new"), p) },
			[]string{"status=409", "code=projection_replay", "kind=projection", "id=urn:p:logged", "line=2"}},
	} {
		before := len(lines())
		tc.do()
		got := lines()
		if len(got) != before+1 {
			t.Errorf("refusal %d: %d new log lines, want 1:\n%s", i, len(got)-before, logs.String())
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got[len(got)-1], w) {
				t.Errorf("refusal %d: %q is not in the log line %s", i, w, got[len(got)-1])
			}
		}
	}
	if strings.Contains(logs.String(), "urn:p:new") {
		t.Errorf("the accepted batch line was logged:\n%s", logs.String())
	}
}
