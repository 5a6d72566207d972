package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
)

// The approvals table marks a row whose arguments are cut, here or in
// the hub's inbox, with the whole arguments' size; a row that fits is
// shown as it is.
func TestPrintApprovalsMarksCutArguments(t *testing.T) {
	now := time.Now()
	long, _ := json.Marshal(strings.Repeat("x", 100))
	for _, tc := range []struct {
		p    approval.Pending
		want string
		not  string
	}{
		{approval.Pending{ID: "short", Arguments: json.RawMessage(`{"a":1}`), ArgumentsSize: 7}, `{"a":1}`, "cut"},
		{approval.Pending{ID: "wide", Arguments: json.RawMessage(`{"a":` + string(long) + `}`), ArgumentsSize: 107}, "(107 bytes, cut)", ""},
		{approval.Pending{ID: "inbox", Arguments: json.RawMessage(`"{\"a\":1…"`), ArgumentsSize: 9000, Clipped: true}, "(9000 bytes, cut)", ""},
	} {
		var b strings.Builder
		printApprovals(&b, approval.List{Pending: []approval.Pending{tc.p}}, now)
		row := b.String()
		if !strings.Contains(row, tc.want) || (tc.not != "" && strings.Contains(row, tc.not)) {
			t.Errorf("%s: %s", tc.p.ID, row)
		}
	}
}
