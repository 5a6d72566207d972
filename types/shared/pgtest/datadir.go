//go:build unix

package pgtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// initdbArgs are initdb's arguments after -D and the data directory.
var initdbArgs = []string{"-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"}

// makeData makes a fresh cluster's data directory at data: a copy of the
// one initdb made the first time, kept in the user's cache directory for
// this initdb and these arguments (templateDir). initdb took 2 s of CPU
// and 3-10 s on a 2-core machine in every package whose tests use a
// database, where the copy takes a tenth of a second. cred, when not nil,
// owns the copy (postgres runs as that user). Keeping the template is
// best effort: without a cache directory, each cluster runs initdb.
func makeData(command func(string, ...string) *exec.Cmd, bin, data string, cred *syscall.Credential) error {
	tmpl := templateDir(bin)
	if tmpl != "" {
		if _, err := os.Stat(filepath.Join(tmpl, "PG_VERSION")); err == nil {
			return copyTree(tmpl, data, cred)
		}
	}
	if out, err := command("initdb", append([]string{"-D", data}, initdbArgs...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	if tmpl != "" {
		keepTemplate(data, tmpl)
	}
	return nil
}

// templateDir is where the data directory initdb made is kept, named by
// initdb's path, size and time and its arguments, so that another
// PostgreSQL or other arguments make their own; "" without a cache
// directory.
func templateDir(bin string) string {
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	fi, err := os.Stat(filepath.Join(bin, "initdb"))
	if err != nil {
		return ""
	}
	key := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d\x00%s", filepath.Join(bin, "initdb"), fi.Size(), fi.ModTime().UnixNano(), strings.Join(initdbArgs, "\x00")))
	return filepath.Join(cache, "dynamic-mcp-pgtest", hex.EncodeToString(key[:8]))
}

// keepTemplate copies data to tmpl whole or not at all: into a directory
// beside it, renamed to tmpl once written (another package's test binary
// may be doing the same; the first rename wins).
func keepTemplate(data, tmpl string) {
	if err := os.MkdirAll(filepath.Dir(tmpl), 0o700); err != nil {
		return
	}
	tmp, err := os.MkdirTemp(filepath.Dir(tmpl), ".new-")
	if err != nil {
		return
	}
	defer os.RemoveAll(tmp) // left only when the rename failed
	dst := filepath.Join(tmp, "data")
	if copyTree(data, dst, nil) == nil {
		_ = os.Rename(dst, tmpl)
	}
}

// copyTree copies the directory src to dst (which must not exist), with
// the modes of src's files and directories; cred, when not nil, owns
// what it makes. A data directory holds directories and regular files.
func copyTree(src, dst string, cred *syscall.Credential) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			err = os.Mkdir(to, fi.Mode().Perm())
		case d.Type().IsRegular():
			err = copyFile(path, to, fi.Mode().Perm())
		default:
			return fmt.Errorf("copy %s: not a directory or a regular file", path)
		}
		if err == nil && cred != nil {
			err = os.Lchown(to, int(cred.Uid), int(cred.Gid))
		}
		return err
	})
}

// copyFile copies the regular file src to a new file dst of mode perm.
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
