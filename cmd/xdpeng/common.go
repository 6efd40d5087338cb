package main

import (
	"fmt"

	"github.com/cilium/ebpf/rlimit"

	"github.com/xdpeng/xdpeng/internal/privilege"
)

// needRoot is what every command that loads programs or opens sockets does
// first, after its flags are checked: refuse without the capabilities need
// asks for, naming the command, and lift RLIMIT_MEMLOCK for kernels that
// still charge BPF maps and UMEMs against it.
func needRoot(command string, need privilege.Need) error {
	if err := privilege.Check(command, need); err != nil {
		return err
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return fmt.Errorf("raise RLIMIT_MEMLOCK: %w", err)
	}
	return nil
}
