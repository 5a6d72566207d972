package policy

import "testing"

func TestArgsMatcher(t *testing.T) {
	m, err := NewArgsMatcher(map[string]string{"path": "/tmp/**"})
	if err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]bool{
		`{"path":"/tmp/a/b"}`:        true,
		`{"PATH":"/tmp/x"}`:          true,
		`{"path":"/etc/passwd"}`:     false,
		`{"path":"/tmp/../etc/x"}`:   false,
		`{"other":"/tmp/x"}`:         false,
		`{"path":["/tmp/a","/etc"]}`: false,
		`not json`:                   false,
	} {
		if got := m.Match([]byte(args)); got != want {
			t.Errorf("%s: got %v, want %v", args, got, want)
		}
	}
	if _, err := NewArgsMatcher(map[string]string{"path": "[unclosed"}); err == nil {
		t.Error("a bad glob was compiled")
	}
}
