package main

import (
	"fmt"
	"runtime/debug"
	"strings"
)

func init() {
	bi, _ := debug.ReadBuildInfo()
	rootCmd.Version = versionString(bi)
	rootCmd.SetVersionTemplate("xdpeng {{.Version}}\n")
}

// versionString says what was built, from the build information the Go
// toolchain records: the module's version ("(devel)" when built from a
// checkout), the commit and whether the tree had changes, and the Go
// version. A binary built without that information says so.
func versionString(bi *debug.BuildInfo) string {
	if bi == nil {
		return "unknown (built without module information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	parts := []string{v}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		c := "commit " + rev
		if settings["vcs.modified"] == "true" {
			c += " with uncommitted changes"
		}
		if t := settings["vcs.time"]; t != "" {
			c += fmt.Sprintf(" (%s)", t)
		}
		parts = append(parts, c)
	} else {
		parts = append(parts, "commit unknown (built outside a git checkout, or with -buildvcs=false)")
	}
	parts = append(parts, bi.GoVersion)
	return strings.Join(parts, ", ")
}
