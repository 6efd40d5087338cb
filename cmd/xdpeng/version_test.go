package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionString(t *testing.T) {
	for _, tc := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{nil, "unknown (built without module information)"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "3dff7c4a1b2c3d4e5f60718293a4b5c6d7e8f901"}, {Key: "vcs.time", Value: "2026-11-30T21:40:00Z"}, {Key: "vcs.modified", Value: "false"}}},
			"v0.3.0, commit 3dff7c4a1b2c (2026-11-30T21:40:00Z), go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "3dff7c4"}, {Key: "vcs.modified", Value: "true"}}},
			"(devel), commit 3dff7c4 with uncommitted changes, go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8"},
			"(devel), commit unknown (built outside a git checkout, or with -buildvcs=false), go1.26.8"},
	} {
		if got := versionString(tc.bi); got != tc.want {
			t.Errorf("versionString = %q, want %q", got, tc.want)
		}
	}
}
