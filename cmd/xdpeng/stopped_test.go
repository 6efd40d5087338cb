package main

import (
	"context"
	"io"
	"testing"

	"github.com/spf13/cobra"
)

// TestStoppedAfter: a run stopped by Ctrl-C ends in success when it
// measured something and printed it, and as interrupted (exit status 130)
// when every finished row failed or none finished.
func TestStoppedAfter(t *testing.T) {
	cmd := &cobra.Command{Use: "compare"}
	cmd.SetErr(io.Discard)
	if err := stoppedAfter(cmd, context.Canceled, 2, 1, "row", []string{"xsk-drop"}); err != nil {
		t.Errorf("one row measured: %v, want success", err)
	}
	err := stoppedAfter(cmd, context.Canceled, 1, 0, "row", []string{"xsk-drop"})
	if e, ok := err.(interrupted); !ok || e.ExitCode() != 130 {
		t.Errorf("the only finished row failed: %v, want interrupted (exit status 130)", err)
	}
	if err := stoppedAfter(cmd, context.Canceled, 0, 0, "row", []string{"xdp-drop", "xsk-drop"}); err == nil {
		t.Error("no row finished: success, want interrupted")
	}
}
