// Package sqliteindex is the embedded store.Index of a memtrail log, in a
// SQLite database file beside the log's other files (DIR/index.db of a
// data directory; see log/posixstore).
package sqliteindex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/memtrail/memtrail/log/store"
	"github.com/memtrail/memtrail/receipts"
	"modernc.org/sqlite"
)

// SQLiteIndex is the embedded store.Index: the lineage state in a SQLite database
// (modernc.org/sqlite, pure Go) in WAL mode, and the single-use ids in an id
// table beside it (PATH-ids; see idTable). Ids are stored as the first 16
// bytes of SHA-256(kind || 0x00 || id): a collision could only refuse a fresh
// id as a replay, never let an id be logged twice, and at 2^-64 for four
// billion ids it does not happen. The database uses synchronous=NORMAL: a
// crash may lose the last transactions, never corrupt it, and the log
// re-applies them. Each of the two keeps its own watermark; the index's is
// the lower, and Apply brings each up from its own, so after a crash between
// the two writes nothing is applied twice. Lookups of ids may then see the
// entries of the interrupted Apply, which are in the log, as the store.Index
// contract allows; the lineage tables and the watermark change in one
// SQLite transaction.
type SQLiteIndex struct {
	db   *sql.DB
	ids  *idTable
	stop chan struct{}
	done chan struct{}
	once sync.Once
	err  error
}

const sqliteSchema = `
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS counts (kind TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS compactions (
	id TEXT PRIMARY KEY, idx INTEGER NOT NULL, root TEXT NOT NULL, item_count INTEGER NOT NULL,
	supersedes TEXT NOT NULL, superseded_by TEXT NOT NULL, superseded_at INTEGER NOT NULL,
	output TEXT NOT NULL DEFAULT '') WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS compactions_by_output ON compactions (output);
CREATE TABLE IF NOT EXISTS compaction_items (item TEXT NOT NULL, compaction TEXT NOT NULL, PRIMARY KEY (item, compaction)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS compaction_items_by_compaction ON compaction_items (compaction);
CREATE TABLE IF NOT EXISTS tombstones (item TEXT PRIMARY KEY, id TEXT NOT NULL, idx INTEGER NOT NULL, purged_at INTEGER NOT NULL) WITHOUT ROWID;
`

// OpenSQLiteIndex opens or creates the index database at path.
func OpenSQLiteIndex(path string) (*SQLiteIndex, error) {
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(OFF)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("couldn't open index database: %w", err)
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(maxIdleConns)
	if err := migrateSQLiteIndex(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("couldn't upgrade index schema in %s: %w", path, err)
	}
	if _, err := db.Exec(sqliteSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("couldn't create index schema in %s: %w", path, err)
	}
	var check string
	if err := db.QueryRow("PRAGMA quick_check").Scan(&check); err != nil || check != "ok" {
		db.Close()
		if err == nil {
			err = errors.New(check)
		}
		return nil, fmt.Errorf("index database %s is damaged: %w", path, err)
	}
	ids, err := openIDTable(path + "-ids")
	if errors.Is(err, errIDTableCorrupt) {
		// The log rebuilds it: start it empty at watermark 0.
		os.Remove(path + "-ids")
		ids, err = openIDTable(path + "-ids")
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	x := &SQLiteIndex{db: db, ids: ids, stop: make(chan struct{}), done: make(chan struct{})}
	go x.syncLoop()
	return x, nil
}

// migrateSQLiteIndex upgrades an index written before compactions had an
// output column: it adds the column and forgets the lineage tables, so that
// the log re-applies every entry to them from index 0 (the id table keeps
// its own watermark and is not re-read). Nothing is lost: the lineage
// tables are derived from the log.
func migrateSQLiteIndex(db *sql.DB) error {
	rows, err := db.Query("SELECT name FROM pragma_table_info('compactions')")
	if err != nil {
		return err
	}
	found, hasOutput := false, false
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		found = true
		hasOutput = hasOutput || name == "output"
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if !found || hasOutput {
		return nil // a new database, or an up-to-date one
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range []string{
		"ALTER TABLE compactions ADD COLUMN output TEXT NOT NULL DEFAULT ''",
		"DELETE FROM meta", "DELETE FROM counts", "DELETE FROM compactions", "DELETE FROM compaction_items", "DELETE FROM tombstones",
	} {
		if _, err := tx.Exec(q); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// dropReadOnly closes the idle connections after a write failed on a
// read-only one. SQLite opens a database it cannot write read-only,
// silently, and such a connection stays read-only: one the pool opened
// while the directory was read-only would refuse every write after the
// directory is writable again. Closing them lets the next write open a
// connection that can write.
func (x *SQLiteIndex) dropReadOnly(err error) {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqliteReadOnly {
		x.db.SetMaxIdleConns(0)
		x.db.SetMaxIdleConns(maxIdleConns)
	}
}

// sqliteReadOnly is SQLITE_READONLY, the primary code of "attempt to write
// a readonly database".
const sqliteReadOnly = 8

// maxIdleConns is database/sql's default, restored after dropReadOnly.
const maxIdleConns = 2

// syncLoop makes the id table durable about once a second.
func (x *SQLiteIndex) syncLoop() {
	defer close(x.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-x.stop:
			return
		case <-t.C:
			// A failed sync loses nothing: the durable watermark stays
			// put and the pages stay marked, so the next pass (or the
			// next start, re-applying from the log) catches up.
			if err := x.ids.sync(); err != nil {
				slog.Error("couldn't sync the id table", "error", err)
			}
		}
	}
}

// idHash is the key of an id in the id table, the one IDHashes lists.
func idHash(kind receipts.Kind, id string) []byte { return store.IDHash(kind, id) }

func (x *SQLiteIndex) Watermark(ctx context.Context) (uint64, error) {
	w2, err := x.sqlWatermark(ctx)
	if err != nil {
		return 0, err
	}
	return min(w2, x.ids.getWatermark()), nil
}

func (x *SQLiteIndex) sqlWatermark(ctx context.Context) (uint64, error) {
	var v int64
	err := x.db.QueryRowContext(ctx, "SELECT v FROM meta WHERE k = 'watermark'").Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("couldn't read index watermark: %w", err)
	}
	return uint64(v), nil
}

func (x *SQLiteIndex) Apply(ctx context.Context, first uint64, entries []store.Entry) (err error) {
	defer func() { x.dropReadOnly(err) }()
	for i := range entries {
		if entries[i].Index != first+uint64(i) {
			return fmt.Errorf("entry %d carries index %d: %w", first+uint64(i), entries[i].Index, store.ErrOutOfOrder)
		}
	}
	w2, err := x.sqlWatermark(ctx)
	if err != nil {
		return err
	}
	w1 := x.ids.getWatermark()
	if min(w1, w2) != first {
		return fmt.Errorf("apply from %d, watermark is %d: %w", first, min(w1, w2), store.ErrOutOfOrder)
	}
	end := first + uint64(len(entries))
	// The ids first: an id already logged refuses the run before anything
	// is written.
	if w1 < end {
		rows := make([]idRow, 0, end-w1)
		for i := range entries {
			if e := &entries[i]; e.Index >= w1 {
				rows = append(rows, idRow{hash: idHash(e.Kind, e.ID), idx: e.Index})
			}
		}
		if err := x.ids.insert(rows, end); err != nil {
			return fmt.Errorf("couldn't index ids: %w", err)
		}
	}
	if w2 >= end {
		return nil
	}
	entries = entries[w2-first:]
	first = w2
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("couldn't begin index transaction: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	counts := map[receipts.Kind]int64{}
	for i := range entries {
		e := &entries[i]
		counts[e.Kind]++
		switch e.Kind {
		case receipts.KindCompaction:
			if _, err := tx.ExecContext(ctx, "INSERT INTO compactions (id, idx, root, item_count, supersedes, superseded_by, superseded_at, output) VALUES (?, ?, ?, ?, ?, '', 0, ?)",
				e.ID, int64(e.Index), e.ManifestRoot, len(e.Items), e.Supersedes, e.Output); err != nil {
				return fmt.Errorf("couldn't index compaction %q: %w", e.ID, err)
			}
			for _, item := range e.Items {
				if _, err := tx.ExecContext(ctx, "INSERT INTO compaction_items (item, compaction) VALUES (?, ?)", item, e.ID); err != nil {
					return fmt.Errorf("couldn't index items of compaction %q: %w", e.ID, err)
				}
			}
			if e.Supersedes != "" {
				if _, err := tx.ExecContext(ctx, "UPDATE compactions SET superseded_by = ?, superseded_at = ? WHERE id = ? AND superseded_by = ''",
					e.ID, int64(e.Index), e.Supersedes); err != nil {
					return fmt.Errorf("couldn't mark compaction %q superseded: %w", e.Supersedes, err)
				}
			}
		case receipts.KindTombstone:
			if _, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO tombstones (item, id, idx, purged_at) VALUES (?, ?, ?, ?)",
				e.Item, e.ID, int64(e.Index), e.PurgedAt); err != nil {
				return fmt.Errorf("couldn't index tombstone %q: %w", e.ID, err)
			}
		}
	}
	for kind, n := range counts {
		if _, err := tx.ExecContext(ctx, "INSERT INTO counts (kind, n) VALUES (?, ?) ON CONFLICT (kind) DO UPDATE SET n = n + excluded.n", string(kind), n); err != nil {
			return fmt.Errorf("couldn't update counts: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO meta (k, v) VALUES ('watermark', ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v", int64(first)+int64(len(entries))); err != nil {
		return fmt.Errorf("couldn't advance index watermark: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("couldn't commit index transaction: %w", err)
	}
	return nil
}

// IDHashes calls fn with the stored hash of every id and returns their
// number.
func (x *SQLiteIndex) IDHashes(ctx context.Context, fn func(h []byte)) (uint64, error) {
	return x.ids.each(fn)
}

func (x *SQLiteIndex) LookupID(ctx context.Context, kind receipts.Kind, id string) (uint64, error) {
	idx, found, err := x.ids.lookup(idHash(kind, id))
	if err != nil {
		return 0, fmt.Errorf("couldn't look up %s %q: %w", kind, id, err)
	}
	if !found {
		return 0, fmt.Errorf("%s %q: %w", kind, id, store.ErrNotFound)
	}
	return idx, nil
}

const compactionColumns = `c.id, c.idx, c.root, c.item_count, c.supersedes, c.superseded_by, c.superseded_at,
	(SELECT count(*) FROM compaction_items ci JOIN tombstones t ON t.item = ci.item WHERE ci.compaction = c.id),
	(SELECT coalesce(min(t.idx), 0) FROM compaction_items ci JOIN tombstones t ON t.item = ci.item WHERE ci.compaction = c.id),
	c.output, coalesce((SELECT t.id FROM tombstones t WHERE t.item = c.output), ''),
	coalesce((SELECT t.idx FROM tombstones t WHERE t.item = c.output), 0)`

func scanCompaction(row interface{ Scan(...any) error }) (*store.CompactionInfo, error) {
	c := &store.CompactionInfo{}
	var idx, supAt, since, erasedAt int64
	if err := row.Scan(&c.ID, &idx, &c.ManifestRoot, &c.ItemCount, &c.Supersedes, &c.SupersededBy, &supAt, &c.PurgedItems, &since,
		&c.OutputHash, &c.ErasedBy, &erasedAt); err != nil {
		return nil, err
	}
	c.Index, c.SupersededAt, c.PurgedSinceAt, c.ErasedAt = uint64(idx), uint64(supAt), uint64(since), uint64(erasedAt)
	return c, nil
}

func (x *SQLiteIndex) Compaction(ctx context.Context, id string) (*store.CompactionInfo, error) {
	c, err := scanCompaction(x.db.QueryRowContext(ctx, "SELECT "+compactionColumns+" FROM compactions c WHERE c.id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("compaction %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("couldn't look up compaction %q: %w", id, err)
	}
	return c, nil
}

func (x *SQLiteIndex) CompactionsIncluding(ctx context.Context, item string) ([]*store.CompactionInfo, error) {
	rows, err := x.db.QueryContext(ctx, "SELECT "+compactionColumns+" FROM compaction_items i JOIN compactions c ON c.id = i.compaction WHERE i.item = ? ORDER BY c.idx", item)
	if err != nil {
		return nil, fmt.Errorf("couldn't look up compactions of item %s: %w", item, err)
	}
	defer rows.Close()
	var out []*store.CompactionInfo
	for rows.Next() {
		c, err := scanCompaction(rows)
		if err != nil {
			return nil, fmt.Errorf("couldn't read compactions of item %s: %w", item, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("couldn't read compactions of item %s: %w", item, err)
	}
	return out, nil
}

func (x *SQLiteIndex) CompactionsProducing(ctx context.Context, output string) ([]*store.CompactionInfo, error) {
	rows, err := x.db.QueryContext(ctx, "SELECT "+compactionColumns+" FROM compactions c WHERE c.output = ? ORDER BY c.idx", output)
	if err != nil {
		return nil, fmt.Errorf("couldn't look up compactions producing %s: %w", output, err)
	}
	defer rows.Close()
	var out []*store.CompactionInfo
	for rows.Next() {
		c, err := scanCompaction(rows)
		if err != nil {
			return nil, fmt.Errorf("couldn't read compactions producing %s: %w", output, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("couldn't read compactions producing %s: %w", output, err)
	}
	return out, nil
}

func (x *SQLiteIndex) Tombstone(ctx context.Context, item string) (*store.TombstoneInfo, error) {
	t := &store.TombstoneInfo{Item: item}
	var idx int64
	err := x.db.QueryRowContext(ctx, "SELECT id, idx, purged_at FROM tombstones WHERE item = ?", item).Scan(&t.ID, &idx, &t.PurgedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("tombstone of %s: %w", item, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("couldn't look up tombstone of %s: %w", item, err)
	}
	t.Index = uint64(idx)
	return t, nil
}

func (x *SQLiteIndex) TombstonesOf(ctx context.Context, items []string) (map[string]*store.TombstoneInfo, error) {
	out := map[string]*store.TombstoneInfo{}
	const chunk = 500
	for start := 0; start < len(items); start += chunk {
		part := items[start:min(start+chunk, len(items))]
		q := make([]byte, 0, 64+2*len(part))
		q = append(q, "SELECT item, id, idx, purged_at FROM tombstones WHERE item IN ("...)
		args := make([]any, len(part))
		for i, it := range part {
			if i > 0 {
				q = append(q, ',')
			}
			q = append(q, '?')
			args[i] = it
		}
		q = append(q, ')')
		rows, err := x.db.QueryContext(ctx, string(q), args...)
		if err != nil {
			return nil, fmt.Errorf("couldn't look up tombstones: %w", err)
		}
		for rows.Next() {
			t := &store.TombstoneInfo{}
			var idx int64
			if err := rows.Scan(&t.Item, &t.ID, &idx, &t.PurgedAt); err != nil {
				rows.Close()
				return nil, fmt.Errorf("couldn't read tombstones: %w", err)
			}
			t.Index = uint64(idx)
			out[t.Item] = t
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("couldn't read tombstones: %w", err)
		}
	}
	return out, nil
}

// openObligationsFrom joins from the tombstones, which are few, to the
// compactions that include their items.
const openObligationsFrom = ` FROM tombstones t JOIN compaction_items ci ON ci.item = t.item JOIN compactions c ON c.id = ci.compaction WHERE c.superseded_by = '' AND NOT EXISTS (SELECT 1 FROM tombstones e WHERE c.output != '' AND e.item = c.output)`

func (x *SQLiteIndex) OpenObligations(ctx context.Context, limit int) ([]store.Obligation, int, error) {
	var total int
	if err := x.db.QueryRowContext(ctx, "SELECT count(*)"+openObligationsFrom).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("couldn't count open obligations: %w", err)
	}
	rows, err := x.db.QueryContext(ctx, "SELECT t.item, t.id, t.idx, t.purged_at, c.id, c.idx"+openObligationsFrom+" ORDER BY c.idx, t.idx LIMIT ?", limit)
	if err != nil {
		return nil, 0, fmt.Errorf("couldn't look up open obligations: %w", err)
	}
	defer rows.Close()
	var out []store.Obligation
	for rows.Next() {
		var o store.Obligation
		var ti, ci int64
		if err := rows.Scan(&o.Item, &o.TombstoneID, &ti, &o.PurgedAt, &o.CompactionID, &ci); err != nil {
			return nil, 0, fmt.Errorf("couldn't read open obligations: %w", err)
		}
		o.TombstoneIndex, o.CompactionIndex = uint64(ti), uint64(ci)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("couldn't read open obligations: %w", err)
	}
	return out, total, nil
}

func (x *SQLiteIndex) Counts(ctx context.Context) (map[receipts.Kind]uint64, error) {
	rows, err := x.db.QueryContext(ctx, "SELECT kind, n FROM counts")
	if err != nil {
		return nil, fmt.Errorf("couldn't read counts: %w", err)
	}
	defer rows.Close()
	out := map[receipts.Kind]uint64{}
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return nil, fmt.Errorf("couldn't read counts: %w", err)
		}
		out[receipts.Kind(k)] = uint64(n)
	}
	return out, rows.Err()
}

// LegacyCheckpoints calls fn with every checkpoint an earlier memtrail
// archived in the index (its checkpoints table), in increasing size, and
// returns how many there were; 0 without the table.
func (x *SQLiteIndex) LegacyCheckpoints(ctx context.Context, fn func(size uint64, signed []byte) error) (int, error) {
	var name string
	err := x.db.QueryRowContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'checkpoints'").Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("couldn't look for checkpoints in the index: %w", err)
	}
	rows, err := x.db.QueryContext(ctx, "SELECT size, note FROM checkpoints ORDER BY size")
	if err != nil {
		return 0, fmt.Errorf("couldn't read the checkpoints in the index: %w", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var size int64
		var note []byte
		if err := rows.Scan(&size, &note); err != nil {
			return n, fmt.Errorf("couldn't read the checkpoints in the index: %w", err)
		}
		if err := fn(uint64(size), note); err != nil {
			return n, err
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("couldn't read the checkpoints in the index: %w", err)
	}
	return n, nil
}

// DropLegacyCheckpoints removes the checkpoints table, once its rows are in
// the checkpoint archive.
func (x *SQLiteIndex) DropLegacyCheckpoints(ctx context.Context) error {
	if _, err := x.db.ExecContext(ctx, "DROP TABLE IF EXISTS checkpoints"); err != nil {
		x.dropReadOnly(err)
		return fmt.Errorf("couldn't remove the checkpoints from the index: %w", err)
	}
	return nil
}

func (x *SQLiteIndex) Reset(ctx context.Context) (err error) {
	defer func() { x.dropReadOnly(err) }()
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("couldn't begin index reset: %w", err)
	}
	if err := x.ids.reset(); err != nil {
		tx.Rollback()
		return err
	}
	for _, table := range []string{"meta", "counts", "compactions", "compaction_items", "tombstones"} {
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+table); err != nil {
			tx.Rollback()
			return fmt.Errorf("couldn't reset index table %s: %w", table, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("couldn't commit index reset: %w", err)
	}
	return nil
}

func (x *SQLiteIndex) Close() error {
	x.once.Do(func() {
		close(x.stop)
		<-x.done
		x.err = errors.Join(x.ids.close(), x.db.Close())
	})
	return x.err
}
