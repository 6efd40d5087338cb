package remote

// SSHPID is the local ssh client's process id, for tests that kill it as a
// dying tester would be.
func (p *Process) SSHPID() int { return p.cmd.Process.Pid }
