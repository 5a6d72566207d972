package config

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A client's entry is run by no shell: a config path starting ~/ is the
// home directory's, and a relative one that is not there says what it was
// relative to and what to write instead.
func TestLoadPathOfAClientsEntry(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.WriteFile(filepath.Join(home, "pol.yaml"), []byte("groups:\n  a: { description: x, command: a }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load("~/pol.yaml")
	if err != nil || cfg.Path != filepath.Join(home, "pol.yaml") {
		t.Fatalf("~/pol.yaml: %v, %+v", err, cfg)
	}
	wd := t.TempDir()
	t.Chdir(wd)
	_, err = Load("pol.yaml")
	want := "read config: open pol.yaml (relative to the working directory " + wd + ", which the client chose): no such file; give the config's absolute path in the client's entry"
	if err == nil || err.Error() != want {
		t.Fatalf("a relative path not there: %v\nwant %s", err, want)
	}
	if _, err := Load(filepath.Join(wd, "pol.yaml")); err == nil || err.Error() == want {
		t.Fatalf("an absolute path not there: %v", err)
	}
}

// A config path that mistypes a file beside it (config.yml for
// config.yaml) names that file.
func TestLoadPathMistyped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "quickstart.yaml"), []byte("groups:\n  a: { description: x, command: a }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, typo := range []string{"quickstart.yml", "quikstart.yaml"} {
		path := filepath.Join(dir, typo)
		_, err := Load(path)
		if want := "read config: open " + path + ": no such file; did you mean " + filepath.Join(dir, "quickstart.yaml") + "?"; err == nil || err.Error() != want {
			t.Errorf("%s: %v\nwant %s", typo, err, want)
		}
	}
	if _, err := Load(filepath.Join(dir, "other.yaml")); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("a name not close: %v", err)
	}
}

// A config that opens is loaded without reading its directory: the
// names beside it are looked at for a mistyped path only, not at every
// start and reload (a config in a crowded home directory).
//
// Not parallel: AllocsPerRun counts the allocations of the whole process.
func TestLoadReadsNoDirectoryOfAConfigThere(t *testing.T) {
	const body = "groups:\n  a: { description: x, command: a }\n"
	load := func(dir string) float64 {
		path := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return testing.AllocsPerRun(5, func() {
			if _, err := Load(path); err != nil {
				t.Fatal(err)
			}
		})
	}
	crowded := t.TempDir()
	for i := range 300 {
		if err := os.WriteFile(filepath.Join(crowded, "file-"+strconv.Itoa(i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	alone, among := load(t.TempDir()), load(crowded)
	// Reading the directory allocates at least one name for each file.
	if among-alone > 100 {
		t.Errorf("a config among 300 files: %.0f allocations a load, %.0f alone", among, alone)
	}
}
