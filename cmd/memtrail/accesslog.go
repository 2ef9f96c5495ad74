package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"
)

// accessLog writes one line per HTTP request served (--access-log):
// when it ended, the client's address, method, path and query, status,
// bytes of body sent and how long the answer took, in the format of
// --log-format. A file is opened for appending, and opened again by
// reopen (on SIGHUP), so that it can be rotated.
type accessLog struct {
	path   string // "-" for standard output
	format string

	mu     sync.Mutex
	file   *os.File
	logger *slog.Logger
}

func openAccessLog(path, format string) (*accessLog, error) {
	a := &accessLog{path: path, format: format}
	if err := a.reopen(); err != nil {
		return nil, err
	}
	return a, nil
}

// reopen opens the file again (after it was moved away, say); on standard
// output it does nothing.
func (a *accessLog) reopen() error {
	var w io.Writer = os.Stdout
	var f *os.File
	if a.path != "-" {
		var err error
		if f, err = os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err != nil {
			return fmt.Errorf("couldn't open the access log: %w", err)
		}
		w = f
	} else if a.logger != nil {
		return nil
	}
	var h slog.Handler = slog.NewTextHandler(w, nil)
	if a.format == "json" {
		h = slog.NewJSONHandler(w, nil)
	}
	a.mu.Lock()
	old := a.file
	a.file, a.logger = f, slog.New(h)
	a.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// handler wraps next, logging each request once its answer is written.
func (a *accessLog) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recordingWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		a.mu.Lock()
		l := a.logger
		a.mu.Unlock()
		l.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("remote", r.RemoteAddr), slog.String("method", r.Method), slog.String("uri", r.URL.RequestURI()),
			slog.Int("status", rec.status), slog.Int64("bytes", rec.bytes), slog.Duration("duration", time.Since(start)),
			slog.String("user_agent", r.UserAgent()))
	})
}

// recordingWriter notes the status and body size of an answer. It passes
// Flush on and unwraps for http.ResponseController, which the submission
// handlers use to set their deadlines.
type recordingWriter struct {
	http.ResponseWriter
	status      int
	bytes       int64
	wroteHeader bool
}

func (w *recordingWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	w.wroteHeader = true
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *recordingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		w.wroteHeader = true
		f.Flush()
	}
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
