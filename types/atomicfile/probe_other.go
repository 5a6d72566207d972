//go:build !unix

package atomicfile

import "os"

// probeDir reports whether Write could make its temporary file (named
// by pattern) in dir by making one and removing it: where there is no
// access(2) (Windows), trying is the only check that sees what the
// write will meet.
func probeDir(dir, pattern string) error {
	tmp, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return err
	}
	tmp.Close()
	return os.Remove(tmp.Name())
}
