//go:build !linux

package rekorload

import "syscall"

// sysProcAttr has nothing to add outside Linux, which alone offers a
// parent-death signal.
func sysProcAttr() *syscall.SysProcAttr { return nil }
