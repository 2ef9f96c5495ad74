package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	mlog "github.com/memtrail/memtrail/log"
	"github.com/memtrail/memtrail/log/posixstore"
	"github.com/memtrail/memtrail/receipts"
)

const fsckUsage = `Usage: memtrail fsck [--data DIR] [--repair] [--vkey VKEY] [--json]

Check the data directory of a log that is not running. fsck reads every
entry once and checks:

  - every entry bundle, hashed, matches the hash tiles, the tree state root
    and the signed published checkpoint;
  - every entry is a receipt, and no id is logged twice;
  - the index agrees with the log: every id maps to the index of its entry,
    and the index is neither damaged nor ahead of the log;
  - every compaction's manifest is present and hashes to its root;
  - every checkpoint in the archive (DIR/checkpoints) is signed by the log
    key and is of the tree the entries give at its size, and none is
    beyond the tree.

With --repair it rebuilds the index from the log when the index is damaged,
ahead or wrong (or brings it up to date when it is behind), rewrites tiles
that disagree with the entries (only when the entries hash to the signed
root), and removes manifests no logged compaction refers to. It never
changes the checkpoint archive, which is not derived from the log (an index
written by an earlier memtrail that still holds archived checkpoints has
them moved into it first). Altered or missing entries, missing manifests and
a wrong archive cannot be repaired from the log; fsck says what was found
and where: an altered entry is named with its entry bundle and file
(entry_mismatch), and the tiles, which still hold what the log committed
to, are then left as they are. On standard error fsck says which problems
it cannot repair, and which --repair would; docs/RELIABILITY.md, "Backup
and restore", says how to restore what cannot be repaired.

The checkpoint is verified with the key in DIR/log.key, or --vkey.

The command exits 0 if nothing is wrong (after repairs; an index that is only
behind is not wrong: the next start catches it up), 1 otherwise, 2 on a usage
error.

Example:

	$ memtrail fsck --data memtrail-data --repair
	tree size 1204, published 1204, index watermark 1180
	index_behind: index watermark 1180, tree size 1204 (repaired)
	ok
`

func init() {
	register(&command{name: "fsck", synopsis: "check a data directory and repair its index from the log", run: runFsck})
}

func runFsck(args []string) error {
	fs := newFlagSet("fsck", fsckUsage)
	dataFlag := fs.String("data", "memtrail-data", "data directory")
	repairFlag := fs.Bool("repair", false, "repair what can be repaired from the log")
	vkeyFlag := fs.String("vkey", "", "log verifier key (default: derived from DIR/log.key)")
	jsonFlag := fs.Bool("json", false, "write the report as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fmt.Fprint(os.Stderr, "Usage: memtrail fsck [--data DIR] [--repair] [--vkey VKEY] [--json]\n")
		return errUsage
	}
	vkey := *vkeyFlag
	if vkey == "" {
		vkey = dirVerifierKey(*dataFlag)
	}
	ctx := context.Background()
	check, err := posixstore.OpenCheck(ctx, *dataFlag, *repairFlag)
	if errors.Is(err, posixstore.ErrDirInUse) {
		return withHint(err, "stop \"memtrail serve\" on this directory before running fsck")
	}
	if errors.Is(err, os.ErrNotExist) {
		return withHint(err, "--data names the data directory of a log (the directory \"memtrail serve --data\" was given; memtrail-data by default)")
	}
	if err != nil {
		return err
	}
	prog := newProgress(1)
	rep, err := mlog.Fsck(ctx, check, mlog.FsckOptions{
		VerifierKey: vkey,
		Repair:      *repairFlag,
		Progress: func(done, total uint64) {
			if prog.tty {
				fmt.Fprintf(os.Stderr, "\rchecked %d/%d entries", done, total)
			}
		},
	})
	prog.done()
	if err != nil {
		return err
	}
	if *jsonFlag {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Println(string(b))
	} else {
		fmt.Printf("tree size %d, published %d, index watermark %d\n", rep.TreeSize, rep.PublishedSize, rep.IndexWatermark)
		for _, p := range rep.Problems {
			at := ""
			if p.Index != nil {
				at = fmt.Sprintf(" at entry %d", *p.Index)
			}
			state := ""
			switch {
			case p.Repaired:
				state = " (repaired)"
			case p.Repairable:
				state = " (repairable with --repair)"
			}
			fmt.Printf("%s%s: %s%s\n", p.Kind, at, p.Detail, state)
		}
		if rep.OK() {
			fmt.Println("ok")
		} else {
			fmt.Println("problems found")
		}
	}
	if !rep.OK() {
		var cannot, can []string
		for _, p := range rep.Problems {
			switch {
			case p.Repaired || p.Kind == "index_behind" || p.Kind == "manifest_unreferenced":
			case p.Repairable:
				can = appendNew(can, p.Kind)
			default:
				cannot = appendNew(cannot, p.Kind)
			}
		}
		if len(cannot) > 0 {
			fmt.Fprintf(os.Stderr, "memtrail: fsck cannot repair %s from the log: each problem says what to restore\n", strings.Join(cannot, ", "))
		}
		if len(can) > 0 && !*repairFlag {
			fmt.Fprintf(os.Stderr, "memtrail: hint: run with --repair to repair %s\n", strings.Join(can, ", "))
		} else if len(can) > 0 {
			fmt.Fprintf(os.Stderr, "memtrail: --repair did not repair %s: each problem says why\n", strings.Join(can, ", "))
		}
	}
	if !rep.OK() {
		return exitError{1}
	}
	return nil
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// dirVerifierKey returns the verifier key of the log key in the data
// directory dir (DIR/log.key), or "" when it cannot be read.
func dirVerifierKey(dir string) string {
	b, err := receipts.ReadSecretFile(filepath.Join(dir, "log.key"))
	if err != nil {
		return ""
	}
	vkey, _ := mlog.VerifierKey(string(bytes.TrimSpace(b)))
	return vkey
}
