package fakeupstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
)

// -skills serves skills by the Skills extension
// (io.modelcontextprotocol/skills, SEP-2640), declared with directoryRead:
// skills/list (in pages of -page), skills/get, each skill's files as
// skill:// resources (SKILL.md and ref/GUIDE.md, whose text names the
// server, so that a test can tell which of two served it) and
// resources/directory/read of a skill's directory.
var skillNames = flags.String("skills", "", "serve these skills (names separated by commas) by the Skills extension")

// SkillsExtension is the extension's key in capabilities.extensions.
const SkillsExtension = "io.modelcontextprotocol/skills"

// skillList is -skills, in order.
func skillList() []string {
	if *skillNames == "" {
		return nil
	}
	return strings.Split(*skillNames, ",")
}

// SkillFiles are the files of the skill name served by the fake named
// server, by path under the skill's directory, in order.
func SkillFiles(server, name string) [][2]string {
	return [][2]string{
		{"SKILL.md", "---\nname: " + name + "\ndescription: The " + name + " skill\n---\nUse " + name + ".\n"},
		{"ref/GUIDE.md", "How to use " + name + ", from " + server + " <&>.\n"},
	}
}

// SkillDigest is the digest the fake publishes for a file's text.
func SkillDigest(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// skillEntry is the skills/list entry of skill.
func skillEntry(skill string) json.RawMessage {
	var files []any
	for _, f := range SkillFiles(*name, skill) {
		files = append(files, map[string]any{"uri": "skill://" + skill + "/" + f[0], "digest": SkillDigest(f[1]), "size": len(f[1])})
	}
	b, _ := json.Marshal(map[string]any{"uri": "skill://" + skill + "/SKILL.md",
		"frontmatter": map[string]any{"name": skill, "description": "The " + skill + " skill"}, "resources": files})
	return b
}

// declareSkills adds the extension to caps, with -skills.
func declareSkills(caps map[string]any) {
	if *skillNames == "" {
		return
	}
	ext, _ := caps["extensions"].(map[string]any)
	if ext == nil {
		ext = map[string]any{}
		caps["extensions"] = ext
	}
	ext[SkillsExtension] = map[string]any{"directoryRead": true}
}

// skillRequest answers a request of the extension's, or a resources/read
// of a skill:// URI, and reports whether it was one.
func skillRequest(req request) bool {
	var p struct {
		URI string `json:"uri"`
	}
	_ = json.Unmarshal(req.Params, &p)
	if *skillNames == "" || req.Method == "resources/read" && !strings.HasPrefix(p.URI, "skill://") {
		return false
	}
	skill, path, _ := strings.Cut(strings.TrimPrefix(p.URI, "skill://"), "/")
	served := slices.Contains(skillList(), skill)
	switch req.Method {
	case "skills/list":
		var entries []any
		for _, n := range skillList() {
			entries = append(entries, skillEntry(n))
		}
		pageOf(req.ID, req.Params, "skills", entries)
	case "skills/get":
		if !served || path != "SKILL.md" {
			fail(req.ID, -32602, "No skill is served at "+p.URI, nil)
			return true
		}
		reply(req.ID, map[string]any{"skill": skillEntry(skill)})
	case "resources/read":
		for _, f := range SkillFiles(*name, skill) {
			if served && f[0] == path {
				reply(req.ID, map[string]any{"contents": []any{map[string]any{"uri": p.URI, "mimeType": "text/markdown", "text": f[1]}}})
				return true
			}
		}
		fail(req.ID, -32002, "Resource not found", map[string]any{"uri": p.URI})
	case "resources/directory/read":
		if !served || strings.TrimSuffix(path, "/") != "" {
			fail(req.ID, -32602, p.URI+" is not a directory resource", nil)
			return true
		}
		root := "skill://" + skill + "/"
		reply(req.ID, map[string]any{"resources": []any{
			map[string]any{"uri": root + "SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown"},
			map[string]any{"uri": root + "ref", "name": "ref", "mimeType": "inode/directory"}}})
	default:
		return false
	}
	return true
}
