package log

import (
	"context"
	"sync"

	"github.com/transparency-dev/tessera"
)

// The sequencer hands entries to Tessera in groups, one group at a time:
// everything that arrives while a group is being sequenced forms the next
// group (group commit). Each sequencing pass costs a roughly fixed number of
// file writes and syncs, so batches should grow with the load; left to
// Tessera's timer alone, a batch is whatever arrived during its age, and at
// high load many small batches queue up behind each other, each paying the
// fixed cost. Entries keep their order: the order of add calls is the order
// of their indices.
type sequencer struct {
	add      func(*tessera.Entry) tessera.IndexFuture
	maxGroup int
	maxQueue int // entries waiting for the next group; beyond it, pushback

	mu      sync.Mutex
	queue   []*seqItem
	running bool
}

type seqItem struct {
	entry *tessera.Entry
	done  chan struct{}
	index tessera.Index
	err   error
}

func newSequencer(add func(*tessera.Entry) tessera.IndexFuture, maxGroup, maxQueue int) *sequencer {
	return &sequencer{add: add, maxGroup: maxGroup, maxQueue: maxQueue}
}

// enqueue queues e and returns its future.
func (s *sequencer) enqueue(e *tessera.Entry) tessera.IndexFuture {
	it := &seqItem{entry: e, done: make(chan struct{})}
	s.mu.Lock()
	if len(s.queue) >= s.maxQueue {
		s.mu.Unlock()
		// Refused before sequencing: nothing is written.
		return func() (tessera.Index, error) { return tessera.Index{}, tessera.ErrPushback }
	}
	s.queue = append(s.queue, it)
	if !s.running {
		s.running = true
		go s.run()
	}
	s.mu.Unlock()
	return func() (tessera.Index, error) {
		<-it.done
		return it.index, it.err
	}
}

func (s *sequencer) run() {
	for {
		s.mu.Lock()
		n := min(len(s.queue), s.maxGroup)
		if n == 0 {
			s.running = false
			s.queue = nil
			s.mu.Unlock()
			return
		}
		group := s.queue[:n:n]
		s.queue = s.queue[n:]
		s.mu.Unlock()
		futures := make([]tessera.IndexFuture, len(group))
		for i, it := range group {
			futures[i] = s.add(it.entry)
		}
		// Futures resolve in order (one sequencing queue), so waiting for
		// each in turn costs nothing.
		for i, it := range group {
			it.index, it.err = futures[i]()
			close(it.done)
		}
	}
}

// addFunc adapts the appender: sequencing ignores cancellation, since the
// outcome of every Add must be known.
func addFunc(a *tessera.Appender) func(*tessera.Entry) tessera.IndexFuture {
	ctx := context.Background()
	return func(e *tessera.Entry) tessera.IndexFuture { return a.Add(ctx, e) }
}
