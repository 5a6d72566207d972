package cooperative

import "github.com/dynamic-mcp/dynamic-mcp/types/clip"

// maxReportText bounds each text of a report the audit record keeps, as
// the record bounds its own strings.
const maxReportText = 1 << 10

// reportAnswer is reportAction's answer: the seed's keys (recorded,
// event_id) and trusted, always false: the hub records the agent's word,
// it does not check it.
type reportAnswer struct {
	Recorded    bool   `json:"recorded"`
	EventID     string `json:"event_id,omitempty"`
	Trusted     bool   `json:"trusted"`
	Explanation string `json:"explanation"`
}

func reportAction(h Host, args []byte) (any, error) {
	in, err := read(args, "description", "action_type", "target", "result")
	if err != nil {
		return nil, err
	}
	id := eventID()
	report := map[string]string{"description": clip.Marked(in.Description, maxReportText, "…"), "action_type": in.ActionType,
		"target": clip.Marked(in.Target, maxReportText, "…"), "result": in.Result}
	trail, err := h.Audit(Entry{Tool: ReportAction, Decision: "reported", EventID: id, Reported: true, Report: report})
	if err != nil {
		return nil, err
	}
	if !trail {
		return reportAnswer{Explanation: "Not recorded: the hub keeps no audit trail (audit.path is off)."}, nil
	}
	return reportAnswer{Recorded: true, EventID: id,
		Explanation: "Recorded in the audit trail as your report (reported by the agent: not proof that it happened)."}, nil
}
