// Package atomicfile replaces a file in one step: a reader sees the old
// contents or the new, never a part of either, and once Write returns the
// new contents survive a crash or power cut (the steps of google/renameio:
// write a temporary file, fsync it, rename it over the file, fsync the
// directory).
package atomicfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
)

// maxLinks bounds how many symbolic links Write follows, as the kernel's
// ELOOP limit does.
const maxLinks = 40

// Write replaces path by data with mode perm. It writes a temporary file
// beside path, sets its mode before any data goes in, fsyncs it, renames
// it over path and fsyncs the directory; on any error path is left as it
// was and the temporary file is removed. The directory must exist.
//
// When path is a symbolic link (a dotfiles checkout, say), the file it
// points to is replaced and the link is kept: the temporary file is made
// beside the link's target, so the rename stays within one directory.
//
// A file without its owner's write bit (chmod 444) is refused, as an
// editor would: the rename would replace it all the same. So is a
// directory the temporary file cannot be made in (a link into a
// read-only store, as Nix's home-manager makes), by what to do.
func Write(path string, data []byte, perm os.FileMode) error {
	target, err := writableTarget(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(target)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return dirError(path, dir, err)
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
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("fsync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return err
	}
	return syncDir(dir)
}

// ErrNotWritable is what Write's refusals of a read-only file or
// directory wrap (and errors.Is finds with fs.ErrPermission as well).
var ErrNotWritable = errors.New("not writable")

type notWritable struct{ msg string }

func (e notWritable) Error() string { return e.msg }

func (e notWritable) Is(target error) bool {
	return target == ErrNotWritable || target == fs.ErrPermission
}

// writableTarget is the file Write of path replaces (see resolve),
// refused when it has no owner write bit.
func writableTarget(path string) (string, error) {
	target, err := resolve(path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(target); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o200 == 0 {
		return "", notWritable{fmt.Sprintf("%s is read-only (mode %04o); make it writable (chmod u+w) to let dynamic-mcp change it", path, fi.Mode().Perm())}
	}
	return target, nil
}

// dirError names a directory the temporary file could not be made in:
// the path of a temporary file that was never made would mislead.
func dirError(path, dir string, err error) error {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		return notWritable{fmt.Sprintf("cannot write %s: its directory %s is not writable (a generated dotfile?): edit the file where it is generated", path, dir)}
	}
	return fmt.Errorf("cannot write %s: %w", path, err)
}

// Writable says, without changing anything, what Write of path would
// refuse: a read-only file or an unwritable directory (a directory not
// there yet is left to its maker). A command checks it before the backups
// and records it makes ahead of the write.
func Writable(path string) error {
	target, err := writableTarget(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(target)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := probeDir(dir, "."+filepath.Base(target)+".tmp-*"); err != nil {
		return dirError(path, dir, err)
	}
	return nil
}

// WriteJSON is Write of v as indented JSON: the record files of the hub
// (tokens, pins, install records), which a user may read.
func WriteJSON(path string, v any, perm os.FileMode) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return Write(path, b, perm)
}

// Target is the file Write of path replaces: path with its symbolic
// links followed, though the last may lead nowhere yet (see resolve).
func Target(path string) (string, error) { return resolve(path) }

// resolve follows path while it is a symbolic link and returns the path
// of the file it ends at, which need not exist yet (a dangling link is
// written through, as a shell's > would). A path that is no link comes
// back as it is.
func resolve(path string) (string, error) {
	for range maxLinks {
		fi, err := os.Lstat(path)
		if errors.Is(err, os.ErrNotExist) {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return path, nil
		}
		link, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		path = link
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// syncDir makes a rename in dir durable. Windows cannot open a directory
// for fsync (and NTFS journals renames), so there it is a no-op.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}
