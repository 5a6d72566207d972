package config

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// countingSecrets is Secrets on a map, counting what it was asked.
type countingSecrets struct {
	file, store map[string]string
	asked       []string
}

func (s *countingSecrets) File(stateDir string) (map[string]string, error) {
	s.asked = append(s.asked, "file "+stateDir)
	return s.file, nil
}

func (s *countingSecrets) Store(_ context.Context, url, stateDir string) (map[string]string, error) {
	s.asked = append(s.asked, "store "+url)
	return s.store, nil
}

// Parsing opens nothing: the secrets are asked for on the first
// reference, once, and a config without one asks for none. A Loader
// given no secrets reports a reference where it is.
func TestLoaderAsksForSecretsOnReference(t *testing.T) {
	state := t.TempDir()
	plain := "state_dir: " + state + "\ngroups:\n  g: { description: d, url: \"https://h.example/mcp\" }\n"
	s := &countingSecrets{file: map[string]string{"K": "v-from-file"}}
	if _, err := (Loader{Secrets: s}).Parse("c.yaml", strings.NewReader(plain)); err != nil || len(s.asked) != 0 {
		t.Fatalf("a config without references: err %v, asked %q", err, s.asked)
	}
	vaulted := "state_dir: " + state + "\ngroups:\n  g: { description: d, url: \"https://h.example/mcp\", headers: { A: \"${secret:K}\", B: \"${secret:K}\" } }\n"
	cfg, err := Loader{Secrets: s}.Parse("c.yaml", strings.NewReader(vaulted))
	if err != nil || cfg.Groups[0].Servers[0].Headers["B"] != "v-from-file" {
		t.Fatalf("a reference: err %v, cfg %+v", err, cfg)
	}
	if len(s.asked) != 1 || s.asked[0] != "file "+state {
		t.Errorf("asked %q, want the state directory's vault once", s.asked)
	}
	_, err = Parse("c.yaml", strings.NewReader(vaulted))
	if want := "c.yaml: groups.g.headers.A: reading the vault's secrets: " + errNoSecrets.Error(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("without secrets: %v, want %q", err, want)
	}
}

// The config package links no vault, keychain or database: parsing is
// read, expand, validate.
func TestConfigLinksNoStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"/types/vault", "/types/shared", "github.com/jackc/pgx", "github.com/zalando/go-keyring"} {
			if strings.Contains(pkg, banned) {
				t.Errorf("types/config imports %s", pkg)
			}
		}
	}
}
