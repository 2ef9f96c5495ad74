package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	mlog "github.com/memtrail/memtrail/log"
	"github.com/memtrail/memtrail/receipts"
)

// Refusal is the JSON body of every 4xx and 5xx answer:
//
//	{"code": "projection_replay", "detail": "…", "member": "…", "first_index": 12}
//
// code is one of the closed receipt codes (see docs/profile.md) or one of
// the HTTP-level codes below; member and first_index appear when they
// apply.
type Refusal struct {
	Code       string  `json:"code"`
	Detail     string  `json:"detail"`
	Member     string  `json:"member,omitempty"`
	FirstIndex *uint64 `json:"first_index,omitempty"`
}

// HTTP-level codes.
const (
	codeNotFound         = "not_found"
	codeNotPublished     = "not_published"
	codeBadRequest       = "bad_request"
	codeUnsupportedMedia = "unsupported_media_type"
	codeMethod           = "method_not_allowed"
	codePushback         = "pushback"
	codeInternal         = "internal"
	codeUnavailable      = "unavailable"
	codeRequestTimeout   = "request_timeout"
	codeStorage          = "storage_unavailable"
	codeOutcomeUnknown   = "outcome_unknown"
	codeManifestCorrupt  = "manifest_corrupt"
	codeManifestMissing  = "manifest_missing"
	codeTileDamaged      = "tile_damaged"
)

// status maps an error to its HTTP status and refusal body. It is the one
// place where errors become statuses.
func status(err error) (int, Refusal) {
	var re *mlog.ReplayError
	if errors.As(err, &re) {
		first := re.FirstIndex
		return http.StatusConflict, Refusal{Code: string(re.Code()), Detail: re.Error(), FirstIndex: &first}
	}
	var e *receipts.Error
	if errors.As(err, &e) {
		r := Refusal{Code: string(e.Code), Detail: e.Error(), Member: e.Member}
		switch e.Code {
		case receipts.CodeTooLarge:
			return http.StatusRequestEntityTooLarge, r
		case receipts.CodeAdapterKeyNotPinned, receipts.CodeAdapterKeyRevoked, receipts.CodeAdapterKeyExpired,
			receipts.CodeKeyNotPinned, receipts.CodeKeyRevoked, receipts.CodeKeyExpired:
			return http.StatusForbidden, r
		case receipts.CodeProjectionReplay, receipts.CodeCompactionReplay, receipts.CodeTombstoneReplay:
			return http.StatusConflict, r
		}
		return http.StatusBadRequest, r
	}
	var he *httpError
	if errors.As(err, &he) {
		return he.status, Refusal{Code: he.code, Detail: he.detail}
	}
	switch {
	case errors.Is(err, mlog.ErrPushback):
		return http.StatusServiceUnavailable, Refusal{Code: codePushback, Detail: "the log is overloaded; retry after the time in Retry-After"}
	case errors.Is(err, mlog.ErrManifestCorrupt):
		return http.StatusInternalServerError, Refusal{Code: codeManifestCorrupt, Detail: "the stored manifest does not hash to its root, so it is not served; the operator must restore it (memtrail fsck reports it)"}
	case errors.Is(err, mlog.ErrTileDamaged):
		return http.StatusInternalServerError, Refusal{Code: codeTileDamaged, Detail: "a stored tile is damaged, so nothing is built from it; the operator must repair it (memtrail fsck)"}
	case errors.Is(err, mlog.ErrOutcomeUnknown):
		return http.StatusServiceUnavailable, Refusal{Code: codeOutcomeUnknown, Detail: err.Error()}
	case errors.Is(err, mlog.ErrStorageUnavailable):
		return http.StatusServiceUnavailable, Refusal{Code: codeStorage, Detail: "the log cannot write to its storage (the server log says why); nothing was logged; retry after the time in Retry-After"}
	case errors.Is(err, mlog.ErrNotPublished):
		return http.StatusNotFound, Refusal{Code: codeNotPublished, Detail: err.Error()}
	case errors.Is(err, mlog.ErrNotFound):
		return http.StatusNotFound, Refusal{Code: codeNotFound, Detail: err.Error()}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, Refusal{Code: codeUnavailable, Detail: "the request was cancelled or timed out before it completed"}
	}
	return http.StatusInternalServerError, Refusal{Code: codeInternal, Detail: "internal error; the server log has the details"}
}

// httpError is an error with a chosen status and code.
type httpError struct {
	status int
	code   string
	detail string
}

func (e *httpError) Error() string { return e.code + ": " + e.detail }

func badRequest(detail string) error {
	return &httpError{status: http.StatusBadRequest, code: codeBadRequest, detail: detail}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"code":"internal","detail":"couldn't encode the answer"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

// writeError answers with err's status and refusal body.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code, body := status(err)
	if code == http.StatusInternalServerError {
		s.logger.Error("internal error", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, code, body)
}
