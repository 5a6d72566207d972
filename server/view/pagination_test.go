package view

import (
	"encoding/json"
	"testing"
)

func TestPage(t *testing.T) {
	items := []json.RawMessage{[]byte(`{"n":1}`), []byte(`{"n":2}`), []byte(`{"n":3}`)}
	first, err := Page("things", items, nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Things     []json.RawMessage `json:"things"`
		NextCursor string            `json:"nextCursor"`
	}
	if err := json.Unmarshal(first, &p); err != nil || len(p.Things) != 2 || p.NextCursor == "" {
		t.Fatalf("first Page %s: %v", first, err)
	}
	second, err := Page("things", items, json.RawMessage(`{"cursor":"`+p.NextCursor+`"}`), 2)
	if err != nil || string(second) != `{"things":[{"n":3}]}` {
		t.Fatalf("second Page %s: %v", second, err)
	}
	if empty, _ := Page("things", nil, nil, 2); string(empty) != `{"things":[]}` {
		t.Errorf("empty list: %s", empty)
	}
	for _, bad := range []string{`{"cursor":"!!"}`, `{"cursor":"OTk"}`, `{"cursor":5}`} {
		if _, err := Page("things", items, json.RawMessage(bad), 2); err == nil {
			t.Errorf("cursor %s accepted", bad)
		}
	}
}
