package log

import (
	"errors"
	"sync"

	"github.com/memtrail/memtrail/receipts"
)

// claims makes the single-use check atomic within the process. A claim is
// created by the first submission of an id and resolved when that
// submission is logged (idx set) or fails (err set). It stays in the table
// from creation until the index holds the id, so between the two places no
// logged id is ever invisible.
type claims struct {
	mu sync.Mutex
	m  map[claimKey]*claim
}

type claimKey struct {
	kind receipts.Kind
	id   string
}

type claim struct {
	done chan struct{} // closed when resolved
	idx  uint64        // valid when err == nil, after done
	err  error
}

// acquire returns the claim for k and whether the caller created it (and
// so owns the id until it resolves the claim).
func (c *claims) acquire(k claimKey) (*claim, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.m[k]; ok {
		return cl, false
	}
	cl := &claim{done: make(chan struct{})}
	c.m[k] = cl
	return cl, true
}

// logged resolves an owned claim with the index where the id was logged.
// The claim stays until forget is called after the index has the id.
func (c *claims) logged(cl *claim, idx uint64) {
	cl.idx = idx
	close(cl.done)
}

// found resolves an owned claim for an id the index already holds, and
// drops it.
func (c *claims) found(k claimKey, cl *claim, idx uint64) {
	cl.idx = idx
	close(cl.done)
	c.mu.Lock()
	delete(c.m, k)
	c.mu.Unlock()
}

// failed resolves an owned claim whose submission was not logged, and
// drops it so the id may be submitted again.
func (c *claims) failed(k claimKey, cl *claim, err error) {
	cl.err = err
	close(cl.done)
	c.mu.Lock()
	delete(c.m, k)
	c.mu.Unlock()
}

// unknown resolves an owned claim whose submission may or may not have
// been logged: sequencing failed in a way that does not say. The claim
// stays, so the id cannot be logged a second time: later submissions of it
// are refused with err until the log settles the outcome (see unsettled).
func (c *claims) unknown(cl *claim, err error) {
	cl.err = err
	close(cl.done)
}

// releaseUnknown drops the claim on k if it is held with an unknown
// outcome, and reports whether it did.
func (c *claims) releaseUnknown(k claimKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.m[k]
	if !ok {
		return true // already gone
	}
	select {
	case <-cl.done:
	default:
		return false
	}
	if !errors.Is(cl.err, ErrOutcomeUnknown) {
		return false
	}
	delete(c.m, k)
	return true
}

// resolveFailed resolves an owned claim after a failed append: released
// if nothing was logged, held if the outcome is unknown.
func (c *claims) resolveFailed(k claimKey, cl *claim, err error) {
	if errors.Is(err, ErrOutcomeUnknown) {
		c.unknown(cl, err)
		return
	}
	c.failed(k, cl, err)
}

// loggedAt returns the index where a claimed id was logged, if its claim
// is resolved as logged (and not yet forgotten).
func (c *claims) loggedAt(k claimKey) (uint64, bool) {
	c.mu.Lock()
	cl, ok := c.m[k]
	c.mu.Unlock()
	if !ok {
		return 0, false
	}
	select {
	case <-cl.done:
		return cl.idx, cl.err == nil
	default:
		return 0, false
	}
}

// forget drops the claims of ids the index now holds.
func (c *claims) forget(keys []claimKey) {
	c.mu.Lock()
	for _, k := range keys {
		delete(c.m, k)
	}
	c.mu.Unlock()
}

func (c *claims) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
