package main

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// cachedBuild is the program name built by build (which writes it to the
// path it is given) from inputs that digest sums: the one in the user's
// cache directory if a run built it, else built there (or, with no cache
// directory, in the tests' directory). It is built under a name of this
// process's and renamed into place in one step, so that another copy of
// the suite running at the same time finds it whole or not at all. Builds
// of other inputs that no run used for a day go (a run touches its
// build as it starts; a run of other sources in another checkout must
// not remove it while it runs): the hub's test build is about 60 MB, one
// for every state of the sources a developer runs the suite on.
func cachedBuild(name string, digest []byte, build func(path string) ([]byte, error)) (bin string, out []byte, err error) {
	bin = filepath.Join(filepath.Dir(testHome), name)
	if cache, err := os.UserCacheDir(); err == nil {
		if err := os.MkdirAll(filepath.Join(cache, "dynamic-mcp"), 0o700); err == nil {
			bin = filepath.Join(cache, "dynamic-mcp", name+"-"+hex.EncodeToString(digest[:8]))
			old, _ := filepath.Glob(filepath.Join(cache, "dynamic-mcp", name+"-*"))
			for _, f := range old {
				if fi, err := os.Stat(f); err == nil && f != bin && time.Since(fi.ModTime()) > 24*time.Hour {
					os.Remove(f)
				}
			}
		}
	}
	if _, err := os.Stat(bin); err == nil {
		now := time.Now()
		os.Chtimes(bin, now, now) // in use: kept
		return bin, nil, nil
	}
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	if out, err = build(tmp); err == nil {
		err = os.Rename(tmp, bin)
	}
	if err != nil {
		os.Remove(tmp)
		return "", out, err
	}
	return bin, out, nil
}
