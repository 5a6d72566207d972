// Package atomicfile replaces a file in one step: a reader sees the old
// contents or the new, never a part of either.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path by data with mode perm. It writes a temporary file
// beside path, sets its mode before any data goes in, and renames it over
// path; on any error path is left as it was and the temporary file is
// removed. The directory must exist.
func Write(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
