package rekorload

import "syscall"

// sysProcAttr makes the kernel stop the server if the process that started
// it dies without calling Stop, so an aborted benchmark leaves nothing
// running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
