package wire

import "runtime/debug"

// Build identifies the running binary, from runtime/debug.ReadBuildInfo.
type Build struct {
	// Version is the main module's version: "(devel)" for a build from a
	// work tree (go build, go run), a tag or pseudo-version for go install
	// module@version.
	Version string `json:"version"`
	// Revision is the VCS commit, "unknown" when the build carries no VCS
	// information (go run, -buildvcs=false, or no git at build time).
	Revision string `json:"revision"`
	// Modified reports uncommitted changes in the work tree at build time.
	Modified  bool   `json:"modified,omitempty"`
	Time      string `json:"vcs_time,omitempty"`
	GoVersion string `json:"go_version"`
}

// ReadBuild returns the running binary's build information.
func ReadBuild() Build { return buildFrom(debug.ReadBuildInfo()) }

// buildFrom extracts Build from bi; ok false (a binary built without
// module support) gives "unknown" for everything but the Go version.
func buildFrom(bi *debug.BuildInfo, ok bool) Build {
	b := Build{Version: "unknown", Revision: "unknown", GoVersion: "unknown"}
	if !ok || bi == nil {
		return b
	}
	if bi.Main.Version != "" {
		b.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		b.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		case "vcs.time":
			b.Time = s.Value
		}
	}
	return b
}
