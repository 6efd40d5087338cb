package xsk

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// setTxMetadata adds the TX metadata choices to a UMEM registration.
func setTxMetadata(reg *unix.XDPUmemReg, cfg UmemConfig) {
	if cfg.TxMetadata {
		reg.Tx_metadata_len = TxMetadataLen
		reg.Flags |= unix.XDP_UMEM_TX_METADATA_LEN
	}
	if cfg.TxSoftwareChecksum {
		reg.Flags |= unix.XDP_UMEM_TX_SW_CSUM
	}
}

// registerUmem registers the UMEM. TX metadata takes the
// XDP_UMEM_TX_METADATA_LEN flag, which kernels without it refuse (EINVAL):
// were it left out, a kernel before 6.8 would take the registration and
// ignore tx_metadata_len.
func registerUmem(fd int, reg *unix.XDPUmemReg, cfg UmemConfig) error {
	err := setsockopt(fd, unix.SOL_XDP, unix.XDP_UMEM_REG, reg)
	if errors.Is(err, unix.EINVAL) && (cfg.TxMetadata || cfg.TxSoftwareChecksum) {
		return fmt.Errorf("%w (AF_XDP TX metadata needs XDP_UMEM_TX_METADATA_LEN and XDP_UMEM_TX_SW_CSUM: Linux 6.11, or a stable release of 6.8 to 6.10 that has them)", err)
	}
	return err
}
