package config

import (
	"os"
	"path/filepath"
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
