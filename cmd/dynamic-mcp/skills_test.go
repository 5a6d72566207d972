package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// skillsRead is what testdata/skills/client.mjs prints: what the official
// TypeScript SDK v2's SkillsClient read and verified.
type skillsRead struct {
	Supported     bool `json:"supported"`
	DirectoryRead bool `json:"directoryRead"`
	Skills        []struct {
		URI   string `json:"uri"`
		Name  string `json:"name"`
		Get   string `json:"get"`
		Files []struct {
			URI      string `json:"uri"`
			Size     int    `json:"size"`
			Digest   string `json:"digest"`
			SHA256   string `json:"sha256"`
			Verified bool   `json:"verified"`
		} `json:"files"`
		Directory []string `json:"directory"`
	} `json:"skills"`
}

// readSkills runs client.mjs in era against the stdio server command.
func readSkills(t *testing.T, era string, command ...string) skillsRead {
	t.Helper()
	npmTestTool(t, "@modelcontextprotocol", "client", "package.json")
	ctx, cancel := untilHung(t)
	defer cancel()
	args := append([]string{filepath.Join(repoDir, "testdata", "skills", "client.mjs"), "--era", era, "--"}, command...)
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Env = append(os.Environ(), "DYNAMIC_MCP_HOME="+t.TempDir())
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("client.mjs --era %s: %v\nstdout: %s\nstderr: %s", era, err, stdout.Bytes(), stderr.Bytes())
	}
	var out skillsRead
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("client.mjs printed %q: %v\nstderr: %s", stdout.Bytes(), err, stderr.Bytes())
	}
	return out
}

// TestSkillsThroughHub puts two skills servers made of the TypeScript SDK
// v2's own parts (testdata/skills/server.mjs, @modelcontextprotocol/server
// 2.4.0), each serving a skill named pdf, behind the hub as groups alpha
// and beta, and reads them through the hub with the same SDK's
// SkillsClient (@modelcontextprotocol/client 2.4.0), in both protocol
// eras: every skill listed under its group's namespace, got, each of its
// files read and verified by the client against the digest the server
// published (the hub changes no byte), and each skill's directory listed.
// The same client reading one server directly sees the same files under
// the server's own URIs.
func TestSkillsThroughHub(t *testing.T) {
	t.Parallel()
	server := filepath.Join(repoDir, "testdata", "skills", "server.mjs")
	cfg := writeConfig(t, fmt.Sprintf(`
settings: { stop_grace: 1s, `+nodeWaits+` }
groups:
  alpha:
    description: The alpha team's skills
    command: node
    args: [%q, alpha]
  beta:
    description: The beta team's skills
    command: node
    args: [%q, beta]
`, server, server))
	onDisk := func(t *testing.T, group, rel string) string {
		b, err := os.ReadFile(filepath.Join(repoDir, "testdata", "skills", group, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			got := readSkills(t, era, hubBin, "serve", "-c", cfg)
			if !got.Supported || !got.DirectoryRead {
				t.Fatalf("the hub does not offer the extension with directoryRead: %+v", got)
			}
			var uris []string
			for _, s := range got.Skills {
				uris = append(uris, s.URI)
				if s.Get != s.URI {
					t.Errorf("skills/get %s answered %s", s.URI, s.Get)
				}
				group, rest, _ := strings.Cut(strings.TrimPrefix(s.URI, "skill://"), "/")
				if s.Name != strings.TrimSuffix(rest, "/SKILL.md") {
					t.Errorf("skill %s is named %q", s.URI, s.Name)
				}
				for _, f := range s.Files {
					rel := strings.TrimPrefix(f.URI, "skill://"+group+"/")
					if !f.Verified || f.SHA256 != f.Digest || f.Digest != onDisk(t, group, rel) {
						t.Errorf("%s: verified %v, read %s, listed %s, on disk %s", f.URI, f.Verified, f.SHA256, f.Digest, onDisk(t, group, rel))
					}
				}
				if len(s.Directory) == 0 || !slices.Contains(s.Directory, s.URI) {
					t.Errorf("the directory of %s lists %v", s.URI, s.Directory)
				}
			}
			want := []string{"skill://alpha/pdf/SKILL.md", "skill://beta/commit-message/SKILL.md", "skill://beta/pdf/SKILL.md"}
			if !slices.Equal(uris, want) {
				t.Fatalf("skills through the hub: %v, want %v", uris, want)
			}
			files := map[string]bool{}
			for _, f := range got.Skills[0].Files {
				files[f.URI] = true
			}
			if !files["skill://alpha/pdf/reference/stamp.bin"] || !files["skill://alpha/pdf/reference/FORMS.md"] {
				t.Errorf("alpha's pdf has files %v", files)
			}
		})
	}
	t.Run("direct", func(t *testing.T) {
		t.Parallel()
		got := readSkills(t, "legacy", "node", server, "alpha")
		if len(got.Skills) != 1 || got.Skills[0].URI != "skill://pdf/SKILL.md" || len(got.Skills[0].Files) != 3 {
			t.Fatalf("the server directly: %+v", got)
		}
	})
}
