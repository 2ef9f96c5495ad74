// Package sqlitestore implements [witness.Store] in an embedded SQLite
// database file.
//
// The database holds one table, checkpoints (origin TEXT PRIMARY KEY,
// checkpoint BLOB), in WAL mode with synchronous=FULL, so a committed
// transaction survives a crash of the process and a power loss. The file is
// opened in exclusive locking mode: while a Store is open, no other
// connection, in this process or another, can read or write it.
//
// Compare-and-swaps that arrive while a commit is in progress are grouped
// into the next transaction and made durable by a single sync of the WAL.
// Each one is still checked on its own (an UPDATE conditioned on the old
// value), so one refused swap never fails the others of its group.
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/memtrail/memtrail/witness"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// maxGroup bounds how many compare-and-swaps share one transaction, so that
// one commit never holds a long queue of callers behind a very large write.
const maxGroup = 512

// Store is a [witness.Store] backed by an SQLite file. It is safe for
// concurrent use.
type Store struct {
	db *sql.DB

	// mu serializes every use of conn, the one connection to the file.
	mu     sync.Mutex
	conn   *sql.Conn
	closed bool

	swaps    chan *swap
	quit     chan struct{}
	loopDone chan struct{}
	close    sync.Once
	closeErr error
}

type swap struct {
	ctx      context.Context
	origin   string
	old, new []byte
	err      error
	done     chan struct{}
}

var errClosed = errors.New("sqlitestore: store is closed")

// Open opens the SQLite database at path, creating it if needed, and
// returns a Store over it. It fails if the database is already open.
func Open(path string) (*Store, error) {
	if strings.ContainsRune(path, '?') || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("sqlitestore: unsupported database path %q", path)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: couldn't open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlitestore: couldn't open %s: %w", path, err)
	}
	// The order matters: exclusive locking must be set before the first WAL
	// access, so that SQLite keeps the WAL index in process memory instead of
	// a shared-memory file other processes could attach to.
	setup := []string{
		// Another connection holding the file is a configuration error, to
		// report at once rather than wait for.
		"PRAGMA busy_timeout = 0",
		"PRAGMA locking_mode = EXCLUSIVE",
		"PRAGMA journal_mode = WAL",
		"PRAGMA synchronous = FULL",
		// BEGIN EXCLUSIVE takes the write lock now and, in exclusive
		// locking mode, keeps it until the connection closes.
		"BEGIN EXCLUSIVE",
		`CREATE TABLE IF NOT EXISTS checkpoints (
			origin     TEXT PRIMARY KEY NOT NULL,
			checkpoint BLOB NOT NULL
		) STRICT`,
		"COMMIT",
	}
	for _, q := range setup {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			conn.Close()
			db.Close()
			if isBusy(err) {
				return nil, fmt.Errorf("sqlitestore: %s is in use by another witness: %w", path, err)
			}
			return nil, fmt.Errorf("sqlitestore: couldn't set up %s (%s): %w", path, strings.Fields(q)[0], err)
		}
	}
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || !strings.EqualFold(mode, "wal") {
		conn.Close()
		db.Close()
		return nil, fmt.Errorf("sqlitestore: couldn't enable WAL mode on %s (got %q): %v", path, mode, err)
	}
	// SQLite syncs the directory when it creates the WAL, but not when it
	// creates the database file, which a power loss could then take away
	// with the WAL's contents once they are checkpointed into it.
	if err := syncDir(filepath.Dir(path)); err != nil {
		conn.Close()
		db.Close()
		return nil, fmt.Errorf("sqlitestore: couldn't sync the directory of %s: %w", path, err)
	}
	s := &Store{
		db:       db,
		conn:     conn,
		swaps:    make(chan *swap),
		quit:     make(chan struct{}),
		loopDone: make(chan struct{}),
	}
	go s.commitLoop()
	return s, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func isBusy(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked")
}

// Load implements [witness.Store].
func (s *Store) Load(ctx context.Context, origin string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	var v []byte
	err := s.conn.QueryRowContext(ctx, "SELECT checkpoint FROM checkpoints WHERE origin = ?", origin).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, witness.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: couldn't load checkpoint: %w", err)
	}
	return v, nil
}

// CompareAndSwap implements [witness.Store]. It returns once the
// transaction that carries the swap is committed to disk.
func (s *Store) CompareAndSwap(ctx context.Context, origin string, old, new []byte) error {
	if len(new) == 0 {
		return errors.New("sqlitestore: refusing to store an empty checkpoint")
	}
	w := &swap{ctx: ctx, origin: origin, old: old, new: new, done: make(chan struct{})}
	select {
	case s.swaps <- w:
	case <-s.quit:
		return errClosed
	case <-ctx.Done():
		return fmt.Errorf("sqlitestore: %w", ctx.Err())
	}
	// Once handed to the commit loop the swap is always completed, so its
	// outcome is known even if ctx expires meanwhile.
	<-w.done
	return w.err
}

// commitLoop receives swaps and commits them in groups: whatever arrived
// while the previous commit was syncing goes into the next transaction.
func (s *Store) commitLoop() {
	defer close(s.loopDone)
	for {
		var group []*swap
		select {
		case w := <-s.swaps:
			group = append(group, w)
		case <-s.quit:
			return
		}
	gather:
		for len(group) < maxGroup {
			select {
			case w := <-s.swaps:
				group = append(group, w)
			default:
				break gather
			}
		}
		s.commit(group)
		for _, w := range group {
			close(w.done)
		}
	}
}

func (s *Store) commit(group []*swap) {
	s.mu.Lock()
	defer s.mu.Unlock()
	live := group[:0:0]
	for _, w := range group {
		if err := w.ctx.Err(); err != nil {
			w.err = fmt.Errorf("sqlitestore: %w", err)
			continue
		}
		live = append(live, w)
	}
	if len(live) == 0 {
		return
	}
	fail := func(err error) {
		for _, w := range live {
			w.err = err
		}
	}
	// The transaction is not tied to any caller's context: a caller that
	// gives up must not abort the commit of the others.
	ctx := context.Background()
	tx, err := s.conn.BeginTx(ctx, nil)
	if err != nil {
		fail(fmt.Errorf("sqlitestore: couldn't begin transaction: %w", err))
		return
	}
	for _, w := range live {
		var res sql.Result
		if w.old == nil {
			res, err = tx.ExecContext(ctx, `INSERT INTO checkpoints (origin, checkpoint)
				VALUES (?, ?) ON CONFLICT (origin) DO NOTHING`, w.origin, w.new)
		} else {
			res, err = tx.ExecContext(ctx, `UPDATE checkpoints SET checkpoint = ?
				WHERE origin = ? AND checkpoint = ?`, w.new, w.origin, w.old)
		}
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			tx.Rollback()
			fail(fmt.Errorf("sqlitestore: couldn't write checkpoint: %w", err))
			return
		}
		if n == 0 {
			w.err = witness.ErrConflict
		}
	}
	if err := tx.Commit(); err != nil {
		// Refused swaps wrote nothing whatever happened to the transaction;
		// the others have an unknown outcome.
		for _, w := range live {
			if w.err == nil {
				w.err = fmt.Errorf("sqlitestore: couldn't commit checkpoint: %w", err)
			}
		}
	}
}

// Close waits for the commit in progress, if any, and closes the database.
// Calls made after Close return errors.
func (s *Store) Close() error {
	s.close.Do(func() {
		close(s.quit)
		<-s.loopDone
		s.mu.Lock()
		defer s.mu.Unlock()
		s.closed = true
		err1 := s.conn.Close()
		err2 := s.db.Close()
		if err := errors.Join(err1, err2); err != nil {
			s.closeErr = fmt.Errorf("sqlitestore: couldn't close database: %w", err)
		}
	})
	return s.closeErr
}
