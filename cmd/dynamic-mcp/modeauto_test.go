package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// import writes mode: auto into a new config only: a config it adds to
// keeps the mode it names, and one that names none stays dynamic.
func TestImportWritesModeAutoIntoANewConfigOnly(t *testing.T) {
	t.Parallel()
	from := filepath.Join(repoDir, "testdata", "clients", "cursor.json")
	for _, tc := range []struct {
		name, before string
		want         config.Mode
	}{
		{"new", "", config.ModeAuto},
		{"no mode", "groups:\n  mine:\n    description: mine\n    command: mine\n", config.ModeDynamic},
		{"flat", "mode: flat\ngroups:\n  mine:\n    description: mine\n    command: mine\n", config.ModeFlat},
		{"dynamic", "mode: dynamic\ngroups:\n  mine:\n    description: mine\n    command: mine\n", config.ModeDynamic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "config.yaml")
			if tc.before != "" {
				if err := os.WriteFile(out, []byte(tc.before), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if _, notes, err := runCLI(t, "import", from, "-o", out); err != nil {
				t.Fatalf("import: %v\n%s", err, notes)
			}
			got, _ := os.ReadFile(out)
			cfg, err := config.Parse(out, strings.NewReader(string(got)))
			if err != nil && !strings.Contains(err.Error(), "is not set") {
				t.Fatalf("%v\n%s", err, got)
			}
			if cfg != nil && cfg.Mode != tc.want {
				t.Errorf("mode %s, want %s:\n%s", cfg.Mode, tc.want, got)
			}
			if n := strings.Count(string(got), "mode:"); n > 1 || (tc.want == config.ModeDynamic && tc.before != "" && !strings.Contains(tc.before, "mode:") && n != 0) {
				t.Errorf("mode: written %d times:\n%s", n, got)
			}
		})
	}
}
