package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// getEnvSecrets are the secrets the everything server is given in its
// environment, by name; its get-env tool answers them all as JSON text,
// the commonest shape of a tool's result (issue 20, finding 10).
var getEnvSecrets = map[string]string{
	"GITHUB_TOKEN":          "ghp_e2eGithubSecret0123",
	"AWS_SECRET_ACCESS_KEY": "e2eAwsSecret/0123+abc",
	"PASSWORD":              "e2e-hunter2-password",
	"sessionKey":            "e2e-session-key-0123",
	"ssh_key":               "e2e-ssh-key-0123",
	"db_pwd":                "e2e-db-pwd-0123",
	"OPENAI_API_KEY":        "sk-e2e-openai-0123",
}

// The everything server's get-env answers its whole environment as JSON
// text; the inspector's page and its export show every secret in it as
// [redacted], and the words that only look like one in clear.
func TestInspectorRedactsGetEnv(t *testing.T) {
	t.Parallel()
	ctx := browse(t)
	var env []string
	for k, v := range getEnvSecrets {
		env = append(env, fmt.Sprintf("%s: %q", k, v))
	}
	const plain = "passwordless keyboard tokenizer"
	env = append(env, fmt.Sprintf("E2E_NOTE: %q", plain))
	base, stderr := startPlainHTTPHub(t, fmt.Sprintf(`
mode: flat
settings: { `+nodeWaits+` }
groups:
  everything:
    description: The reference server
    command: node
    args: %s
    env: { %s }
`, yamlList(referenceServer(t, "server-everything", "stdio")[1:]), strings.Join(env, ", ")))
	c := httpClient(t, base, nil)
	c.initialize("2025-11-25")
	c.waitFlatTools(1)

	browserDo(t, ctx, "open /ui and give the token",
		chromedp.Navigate(base+"/ui"),
		chromedp.WaitVisible(css("#token")),
		chromedp.SendKeys(css("#token"), uiToken(t, stderr)),
		chromedp.Click(css("#login-form button")),
		chromedp.WaitVisible(css("#conn.live")),
	)

	// The client gets its answer whole: the secrets are there to hide.
	res := string(c.call("tools/call", map[string]any{"name": "everything__get-env"}))
	for k, v := range getEnvSecrets {
		if !strings.Contains(res, v) {
			t.Fatalf("get-env did not answer %s=%s: %s", k, v, res)
		}
	}

	row := `tr.row[data-method="tools/call"][data-status="ok"][data-target="get-env"]`
	browserDo(t, ctx, "open get-env's row",
		chromedp.WaitVisible(css(row)),
		chromedp.Click(css(row+" td.target")),
		chromedp.WaitVisible(css(`tr.detail pre.json`)))
	detail := browserGet(t, ctx, "read get-env's detail", chromedp.Text(css(`tr.detail`)))
	export := inspectorExport(t, base, uiToken(t, stderr))
	for what, text := range map[string]string{"the page": detail, "the export": export} {
		if !strings.Contains(text, plain) {
			t.Errorf("%s lacks the get-env result (%q in clear):\n%s", what, plain, text)
		}
		for k, v := range getEnvSecrets {
			if strings.Contains(text, v) {
				t.Errorf("%s shows %s in clear", what, k)
			}
		}
		// Each secret's member held in the text, its value redacted.
		if n := strings.Count(text, `[redacted]`); n < len(getEnvSecrets) {
			t.Errorf("%s redacts %d values, want %d or more:\n%s", what, n, len(getEnvSecrets), text)
		}
	}
	// The export's get-env row holds the result as JSON whose text is
	// JSON: both still read, the secrets "[redacted]", the rest as it was.
	found := false
	for line := range strings.SplitSeq(strings.TrimSpace(export), "\n") {
		var row struct {
			Target string
			Result struct{ Text string }
		}
		mustUnmarshal(t, []byte(line), &row)
		if row.Target != "get-env" {
			continue
		}
		found = true
		var result struct{ Content []struct{ Text string } }
		mustUnmarshal(t, []byte(row.Result.Text), &result)
		if len(result.Content) != 1 {
			t.Fatalf("get-env's result as kept: %s", row.Result.Text)
		}
		var vars map[string]string
		mustUnmarshal(t, []byte(result.Content[0].Text), &vars)
		for k := range getEnvSecrets {
			if vars[k] != "[redacted]" {
				t.Errorf("the export's %s is %q, want [redacted]", k, vars[k])
			}
		}
		if vars["E2E_NOTE"] != plain || vars["PATH"] == "" || vars["PATH"] == "[redacted]" {
			t.Errorf("the export's E2E_NOTE %q, PATH %q", vars["E2E_NOTE"], vars["PATH"])
		}
	}
	if !found {
		t.Errorf("no get-env row in the export:\n%s", export)
	}
	screenshot(t, ctx, "inspector-get-env.png")
}

// inspectorExport is the inspector's history as its export gives it to
// the inspector's token.
func inspectorExport(t *testing.T, base, token string) string {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/ui/api/export", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("export: %d %v: %s", resp.StatusCode, err, b)
	}
	return string(b)
}
