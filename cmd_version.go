package main

// The command version says which build this is.

import (
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/copydesk/copydesk/internal/buildinfo"
)

// versionCmd is `copydesk version`. A binary `make` stamped answers
// exactly that command line before this runs (internal/buildinfo); this is
// the same answer for every other spelling of it and every other build.
func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, c := buildVersion()
			return buildinfo.Write(cmd.OutOrStdout(), v, c)
		},
	}
}

// buildVersion is the version and commit stamped by `make` (-ldflags -X),
// or else what the Go toolchain recorded: the module version for `go
// install ...@v1.2.3`, the VCS revision for a build in a checkout.
func buildVersion() (v, c string) {
	v, c, _ = buildinfo.Stamped()
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && c == "" {
				c = s.Value
			}
		}
	}
	if c == "" {
		c = "unknown"
	}
	return v, c
}

// version is the version this binary reports.
func version() string {
	v, _ := buildVersion()
	return v
}
