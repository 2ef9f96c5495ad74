package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memtrail/memtrail/internal/atomicfile"
	"github.com/memtrail/memtrail/log/posixstore"
	"github.com/memtrail/memtrail/verifier"
	"golang.org/x/mod/sumdb/note"
)

// The published policy, DATA/log.policy, is the record of how the log is
// witnessed: auditors verify its proofs under it, and each start compares
// the policy it is given with it. A policy at least as strict (every set
// of cosignatures that satisfies it satisfies the published one:
// verifier.Policy.QuorumImplies) replaces it; a weaker one, or none for a
// witnessed log, only with --allow-policy-downgrade. The policy replaced
// is kept beside it as log.policy.replaced-<UTC time>, for proofs of the
// checkpoints published before.

// policyChange is what a start does to the published policy.
type policyChange struct {
	path     string // DATA/log.policy
	next     []byte // the policy to publish
	nextFrom string // where it comes from: the --witness-policy file, or "" for quorum none
	prev     []byte // the published policy, nil if none
	// weaker says why next is not at least as strict as prev ("" if it
	// is); it is refused without --allow-policy-downgrade.
	weaker string
}

// planPolicy compares the policy to publish with the one published in dir
// (or, when none is, with the witnessing of the published checkpoint).
// nextFrom is the --witness-policy file, or "" for an unwitnessed log.
func planPolicy(dir, vkey string, next []byte, nextFrom string) (*policyChange, error) {
	c := &policyChange{path: filepath.Join(dir, logPolicyFile), next: next, nextFrom: nextFrom}
	nextP, err := verifier.ParsePolicy(next)
	if err != nil {
		return nil, fmt.Errorf("the policy to publish: %w", err)
	}
	prev, err := os.ReadFile(c.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// No record: a new log, or one whose log.policy was removed. A
		// published checkpoint with cosignatures shows it was witnessed.
		if nextP.Quorum() == "none" {
			if n := cosigners(dir, vkey); n > 0 {
				c.weaker = fmt.Sprintf("%s is missing, and the published checkpoint carries %d witness cosignatures: the log was witnessed, and without --witness-policy it would publish unwitnessed checkpoints", c.path, n)
			}
		}
		return c, nil
	case err != nil:
		return nil, fmt.Errorf("couldn't read the published tlog-policy: %w", err)
	}
	c.prev = prev
	if bytes.Equal(prev, next) {
		return c, nil
	}
	prevP, err := verifier.ParsePolicy(prev)
	if err != nil {
		c.weaker = fmt.Sprintf("the published policy %s does not parse (%v), so the new one cannot be shown to be at least as strict", c.path, err)
		return c, nil
	}
	ok, err := nextP.QuorumImplies(prevP)
	switch {
	case err != nil:
		c.weaker = fmt.Sprintf("couldn't tell whether the new policy is at least as strict as the published one (%s: %v)", describePolicy(prevP), err)
	case !ok && nextFrom == "":
		c.weaker = fmt.Sprintf("this log is witnessed (%s: %s), and no --witness-policy was given: it would publish unwitnessed checkpoints", c.path, describePolicy(prevP))
	case !ok:
		c.weaker = fmt.Sprintf("the witness policy %s (%s) is weaker than the one this log publishes under (%s: %s): some checkpoints it accepts would fail the published one", nextFrom, describePolicy(nextP), c.path, describePolicy(prevP))
	}
	return c, nil
}

// cosigners returns the number of signatures on the published checkpoint
// of the log in dir that are not the log's own, 0 if it has none.
func cosigners(dir, vkey string) int {
	raw, err := posixstore.PublishedCheckpoint(dir)
	if err != nil {
		return 0
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return 0
	}
	n, err := note.Open(raw, note.VerifierList(v))
	if err != nil {
		return 0
	}
	return len(n.UnverifiedSigs)
}

// describePolicy is a policy's quorum and witnesses, for messages.
func describePolicy(p *verifier.Policy) string {
	if p.Quorum() == "none" {
		return "quorum none"
	}
	var names []string
	for _, w := range p.Witnesses() {
		names = append(names, w.KeyName)
	}
	return fmt.Sprintf("quorum %s of witnesses %s", p.Quorum(), strings.Join(names, ", "))
}

// apply keeps c.path holding c.next, keeping the policy it replaces beside
// it. A weaker policy is refused unless allowDowngrade.
func (c *policyChange) apply(allowDowngrade bool, logger *slog.Logger) error {
	if c.weaker != "" && !allowDowngrade {
		keep := "pass --witness-policy " + c.path + " to keep publishing under the published policy"
		if c.prev == nil {
			keep = "pass --witness-policy with the policy of the witnesses that cosigned it"
		}
		logger.Error("refusing to weaken the witness policy: "+c.weaker, "published", c.path, "given", orNone(c.nextFrom),
			"to_proceed", keep+", or add --allow-policy-downgrade to publish under the weaker one")
		return withHint(errors.New("refusing to weaken the witness policy: "+c.weaker), keep,
			"or add --allow-policy-downgrade to publish under "+orNone(c.nextFrom)+" from now on: auditors holding "+c.path+" then refuse the proofs of the checkpoints published after that")
	}
	if bytes.Equal(c.prev, c.next) {
		return nil
	}
	if c.prev != nil {
		old := c.path + ".replaced-" + time.Now().UTC().Format("20060102T150405.000000000Z")
		if err := atomicfile.Write(old, c.prev, 0o644); err != nil {
			return fmt.Errorf("couldn't keep the published tlog-policy before replacing it: %w", err)
		}
		if c.weaker != "" {
			logger.Warn("publishing under a weaker witness policy (--allow-policy-downgrade): "+c.weaker, "file", c.path, "previous", old)
		} else {
			logger.Info("the witness policy changed; the log publishes under the new one, at least as strict", "file", c.path, "previous", old)
		}
	} else if c.weaker != "" {
		logger.Warn("publishing unwitnessed checkpoints (--allow-policy-downgrade): "+c.weaker, "file", c.path)
	}
	if err := atomicfile.Write(c.path, c.next, 0o644); err != nil {
		return fmt.Errorf("couldn't write the log's tlog-policy: %w", err)
	}
	logger.Info("tlog-policy for verifying this log's proofs written", "file", c.path)
	return nil
}

func orNone(from string) string {
	if from == "" {
		return "quorum none"
	}
	return from
}
