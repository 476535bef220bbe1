//go:build !unix

package witness

// lockDir: without flock, a DirStore excludes only the Swaps of its own
// process (its mutex); do not share its directory between processes.
func lockDir(string) (func(), error) { return func() {}, nil }
