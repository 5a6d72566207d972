package clients

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestParseEntryShapes(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       Server
	}{
		{"plain", `{"command":"npx","args":["-y","x"],"env":{"A":"1"}}`, Server{Command: "npx", Args: []string{"-y", "x"}}},
		{"opencode array", `{"type":"local","command":["bun","x","srv"],"environment":{"E":"v"},"enabled":false}`, Server{Command: "bun", Args: []string{"x", "srv"}, Disabled: true}},
		{"zed object", `{"command":{"path":"/bin/srv","args":["a"],"env":{}}}`, Server{Command: "/bin/srv", Args: []string{"a"}}},
		{"gemini httpUrl", `{"httpUrl":"https://h/mcp"}`, Server{URL: "https://h/mcp", Transport: "streamable-http"}},
		{"vscode sse", `{"type":"sse","url":"http://h/sse"}`, Server{URL: "http://h/sse", Transport: "sse"}},
		{"windsurf serverUrl", `{"serverUrl":"https://h"}`, Server{URL: "https://h"}},
		{"disabled", `{"command":"x","disabled":true}`, Server{Command: "x", Disabled: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := parseEntry("s", []byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if got.Command != tc.want.Command || strings.Join(got.Args, " ") != strings.Join(tc.want.Args, " ") ||
				got.URL != tc.want.URL || got.Transport != tc.want.Transport || got.Disabled != tc.want.Disabled {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if _, _, err := parseEntry("s", []byte(`{"args":["x"]}`)); err == nil {
		t.Error("an entry without command or URL was accepted")
	}
}

func TestNormalize(t *testing.T) {
	s := Server{Name: "web", Command: "srv", Args: []string{"--key=${env:KEY}"},
		Env:     map[string]string{"API_TOKEN": "abc123", "PLAIN": "x", "FROM_INPUT": "${input:my-key}", "GEMINI": "$HOME_DIR"},
		Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}}
	notes := normalize(&s)
	if s.Args[0] != "--key=${KEY}" || s.Env["FROM_INPUT"] != "${MY_KEY}" || s.Env["GEMINI"] != "${HOME_DIR}" || s.Env["API_TOKEN"] != "abc123" {
		t.Errorf("normalized: %+v", s)
	}
	// The input is noted; the literal secret is left to import, which
	// notes it once with what it offers (the vault).
	if want := []string{`server web: input "my-key" becomes ${MY_KEY}`}; !slices.Equal(notes, want) {
		t.Errorf("notes: %q, want %q", notes, want)
	}
}

func TestJSONInstallKeepsCommentsAndIndent(t *testing.T) {
	src := "{\n\t// keep me\n\t\"a\": 1,\n\t\"mcpServers\": {\n\t\t\"x\": {\"command\": \"y\"},\n\t},\n}\n"
	f := jsonFormat{path: []string{"mcpServers"}, entry: plainEntry}
	out, orig, err := f.install([]byte(src), Entry{Name: "dynamic-mcp", Command: "/bin/d", Args: []string{"serve"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "// keep me") || !strings.Contains(string(out), "\n\t\t\"dynamic-mcp\": {") || strings.Contains(string(out), `"x"`) {
		t.Errorf("installed:\n%s", out)
	}
	back, err := f.restore(out, orig, "dynamic-mcp")
	if err != nil || !strings.Contains(string(back), `"x"`) || strings.Contains(string(back), "dynamic-mcp") {
		t.Errorf("restored: %v\n%s", err, back)
	}
	// A file without the key gets it, parents and all.
	vs := jsonFormat{path: []string{"mcp", "servers"}, entry: vscodeEntry}
	out, _, err = vs.install([]byte(`{"editor.fontSize": 12}`), Entry{Name: "dynamic-mcp", Command: "/bin/d"})
	if err != nil || !strings.Contains(string(out), `"type": "stdio"`) || !strings.Contains(string(out), `"editor.fontSize": 12`) {
		t.Errorf("added: %v\n%s", err, out)
	}
}

func TestTOMLInstallRefusesInlineServers(t *testing.T) {
	_, _, err := tomlFormat{}.install([]byte("mcp_servers.x.command = \"y\"\n"), Entry{Name: "dynamic-mcp", Command: "/bin/d"})
	if err == nil || !strings.Contains(err.Error(), "inline keys") {
		t.Errorf("err = %v", err)
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x"}}}`))
	f.Add([]byte("[mcp_servers.a]\ncommand = \"x\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, fm := range []format{jsonFormat{path: []string{"mcpServers"}, entry: plainEntry}, tomlFormat{}} {
			servers, _, err := fm.read(data)
			if err != nil {
				continue
			}
			out, orig, err := fm.install(data, Entry{Name: "dynamic-mcp", Command: "/bin/d", Args: []string{"serve"}})
			if err != nil {
				continue
			}
			if _, err := fm.restore(out, orig, "dynamic-mcp"); err != nil && len(servers) > 0 {
				t.Fatalf("restore after install failed: %v\ninput: %q", err, data)
			}
		}
	})
}

// VS Code's predefined variables: ${userHome} is $HOME, ${env:NAME} is
// ${NAME}, and a workspace folder, which the hub has not, a note.
func TestNormalizeVSCodeVariables(t *testing.T) {
	s := Server{Name: "fs", Command: "npx", Args: []string{"${workspaceFolder}", "${userHome}/notes", "${workspaceFolder:web}/src"},
		Env: map[string]string{"PROJECT": "${workspaceFolderBasename}", "KEY": "${env:API_KEY}"}}
	notes := normalize(&s)
	if strings.Join(s.Args, " ") != "${WORKSPACE_FOLDER} ${HOME}/notes ${WORKSPACE_FOLDER}/src" ||
		s.Env["PROJECT"] != "${WORKSPACE_FOLDER_BASENAME}" || s.Env["KEY"] != "${API_KEY}" {
		t.Errorf("normalized: %+v", s)
	}
	joined := strings.Join(notes, "\n")
	for _, want := range []string{
		"server fs: ${workspaceFolder} is VS Code's workspace folder: the hub has no workspace; write the path in place of ${WORKSPACE_FOLDER}",
		"server fs: ${workspaceFolder:web} is VS Code's workspace folder",
		"server fs: ${workspaceFolderBasename} is VS Code's workspace folder: the hub has no workspace; write the path in place of ${WORKSPACE_FOLDER_BASENAME}",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("want %q in notes:\n%s", want, joined)
		}
	}
	if len(notes) != 3 || strings.Contains(joined, "secret") {
		t.Errorf("notes:\n%s", joined)
	}
}

// Keys import does not carry over are noted by server, key and what to
// do; Gemini's excludeTools and includeTools (and Windsurf's
// disabledTools) become the group's deny: and allow: of exact names.
func TestParseEntryNotesDroppedKeysAndKeepsToolLists(t *testing.T) {
	s, notes, err := parseEntry("gem", []byte(`{"command":"srv","args":["a"],"env":{"A":"1"},"type":"stdio","disabled":false,
		"excludeTools":["run_shell","a.b"],"includeTools":["read"],"disabledTools":["x"],
		"envFile":"${workspaceFolder}/.env","timeout":30,"alwaysAllow":["read"],"trust":true,"extra":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.Deny, " ") != `^run_shell$ ^a\.b$ ^x$` || strings.Join(s.Allow, " ") != "^read$" {
		t.Errorf("deny %q allow %q", s.Deny, s.Allow)
	}
	want := []string{
		"server gem: alwaysAllow not imported: the client ran these tools without asking; the hub asks no one unless a policy rule says prompt",
		"server gem: envFile not imported: dynamic-mcp reads no env file; copy its variables into env:",
		"server gem: extra not imported: dynamic-mcp has no such setting; carry it over by hand if it matters",
		"server gem: timeout not imported: set the group's timeout: (its call timeout, a duration such as 60s) by hand",
		"server gem: trust not imported: the client ran this server's tools without asking; the hub asks no one unless a policy rule says prompt",
	}
	if strings.Join(notes, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(notes, "\n"), strings.Join(want, "\n"))
	}
	if _, notes, _ := parseEntry("p", []byte(`{"command":"x","args":[],"env":{},"cwd":"/","description":"d","enabled":true,"source":"custom"}`)); len(notes) != 0 {
		t.Errorf("notes of carried keys: %q", notes)
	}
}

// A Gemini CLI excludeTools entry of its own tool with an argument
// pattern, run_shell_command(rm), matches no MCP tool: it is left out of
// deny:, with a note naming it.
func TestParseEntrySkipsGeminiBuiltinPatterns(t *testing.T) {
	s, notes, err := parseEntry("sh", []byte(`{"command":"srv","excludeTools":["run_shell_command(rm)","delete_file","run_shell_command(git push)"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.Deny, " ") != "^delete_file$" {
		t.Errorf("deny %q, want only ^delete_file$", s.Deny)
	}
	want := "server sh: excludeTools run_shell_command(rm), run_shell_command(git push) not imported: Gemini CLI's own tools with an argument pattern, not this MCP server's (they stay in Gemini's settings)"
	if strings.Join(notes, "\n") != want {
		t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(notes, "\n"), want)
	}
}

// Codex's enabled_tools and disabled_tools are the group's allow: and
// deny:; its other keys are noted.
func TestCodexToolListsAndDroppedKeys(t *testing.T) {
	servers, notes, err := tomlFormat{}.read([]byte("[mcp_servers.gh]\ncommand = \"srv\"\ndisabled_tools = [\"delete_repo\"]\nenabled_tools = [\"get_issue\"]\nbearer_token_env_var = \"GH\"\ntool_timeout_sec = 30\n"))
	if err != nil || len(servers) != 1 {
		t.Fatal(servers, err)
	}
	if strings.Join(servers[0].Deny, " ") != "^delete_repo$" || strings.Join(servers[0].Allow, " ") != "^get_issue$" {
		t.Errorf("deny %q allow %q", servers[0].Deny, servers[0].Allow)
	}
	joined := strings.Join(notes, "\n")
	if len(notes) != 2 || !strings.Contains(joined, "server gh: bearer_token_env_var not imported: Codex sends it only to a url server") || !strings.Contains(joined, "server gh: tool_timeout_sec not imported: set the group's timeout:") {
		t.Errorf("notes:\n%s", joined)
	}
}

// Codex's headers of a url server are the group's headers: http_headers
// as they are, env_http_headers and bearer_token_env_var as ${VAR}, each
// replacing one of the same name before it, as Codex sends them; a
// variable the config cannot name is a note.
func TestCodexHeadersFromTheEnvironment(t *testing.T) {
	c, _ := Find(Env{Home: t.TempDir(), OS: "linux"}, "codex")
	servers, notes, err := c.Read([]byte(`[mcp_servers.api]
url = "https://api.example/mcp"
bearer_token_env_var = "API_TOKEN"
http_headers = { "authorization" = "Basic old", "X-Static" = "v1" }
env_http_headers = { "X-Org" = "API_ORG", "X-Static" = "STATIC", "X-Bad" = "not-a-name" }
`))
	if err != nil || len(servers) != 1 {
		t.Fatal(servers, err)
	}
	want := map[string]string{"Authorization": "Bearer ${API_TOKEN}", "X-Org": "${API_ORG}", "X-Static": "${STATIC}"}
	if !maps.Equal(servers[0].Headers, want) {
		t.Errorf("headers %q, want %q", servers[0].Headers, want)
	}
	if strings.Join(notes, "\n") != `server api: env_http_headers X-Bad not imported: "not-a-name" is no variable name the config can refer to; write the header into headers: by hand` {
		t.Errorf("notes:\n%s", strings.Join(notes, "\n"))
	}
}

// An input whose id starts with a digit (VS Code's ${input:1password-token})
// becomes a variable the config reads as one: ${1PASSWORD_TOKEN} is no
// name there, and was written escaped, as the literal text the server got.
func TestNormalizeInputStartingWithADigit(t *testing.T) {
	s := Server{Name: "op", Command: "srv", Args: []string{"--token=${input:1password-token}"},
		Env: map[string]string{"OP_TOKEN": "${input:1password-token}"}}
	notes := normalize(&s)
	if s.Env["OP_TOKEN"] != "${_1PASSWORD_TOKEN}" || s.Args[0] != "--token=${_1PASSWORD_TOKEN}" {
		t.Errorf("normalized: env %q, args %q", s.Env["OP_TOKEN"], s.Args)
	}
	if len(notes) == 0 || !strings.HasSuffix(notes[0], "becomes ${_1PASSWORD_TOKEN}") {
		t.Errorf("notes: %q", notes)
	}
}

// Codex expands no variable in its config's values: its http_headers,
// env, args, command, cwd and url are sent or run byte for byte, so a
// ${VAR} or $VAR in one is imported as literal text ($$), not as a
// variable of the hub's environment.
func TestCodexValuesAreLiteral(t *testing.T) {
	c, _ := Find(Env{Home: t.TempDir(), OS: "linux"}, "codex")
	servers, notes, err := c.Read([]byte(`[mcp_servers.api]
url = "https://api.example/${PATH}/mcp"
bearer_token_env_var = "API_TOKEN"
http_headers = { "X-Key" = "a${c}b", "X-Bare" = "$HOME", "X-Env" = "${env:HOME}" }

[mcp_servers.cmd]
command = "${HOME}/bin/srv"
args = ["--x=${HOME}", "$USER"]
env = { "K" = "${HOME}" }
cwd = "${HOME}"
`))
	if err != nil || len(servers) != 2 {
		t.Fatal(servers, err)
	}
	api, cmd := servers[0], servers[1]
	wantHeaders := map[string]string{"X-Key": "a$${c}b", "X-Bare": "$$HOME", "X-Env": "$${env:HOME}", "Authorization": "Bearer ${API_TOKEN}"}
	if api.URL != "https://api.example/$${PATH}/mcp" || !maps.Equal(api.Headers, wantHeaders) {
		t.Errorf("url %q headers %q, want headers %q", api.URL, api.Headers, wantHeaders)
	}
	if cmd.Command != "$${HOME}/bin/srv" || !slices.Equal(cmd.Args, []string{"--x=$${HOME}", "$$USER"}) || cmd.Env["K"] != "$${HOME}" || cmd.Cwd != "$${HOME}" {
		t.Errorf("command %q args %q env %q cwd %q", cmd.Command, cmd.Args, cmd.Env, cmd.Cwd)
	}
	// A ${ in one is more likely a variable meant than a secret: a note
	// says so, and it is not offered to the vault as a secret would be.
	if len(notes) != 2 || !strings.Contains(notes[0], "server api: imported as the text Codex sends, which expands no ${VAR}: url, http_headers X-Env, http_headers X-Key;") ||
		!strings.Contains(notes[1], "server cmd: imported as the text Codex sends, which expands no ${VAR}: command, cwd, args, env K;") {
		t.Errorf("notes:\n%s", strings.Join(notes, "\n"))
	}
}
