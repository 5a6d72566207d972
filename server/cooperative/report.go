package cooperative

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
	if _, err := read(args, "description", "action_type", "target", "result"); err != nil {
		return nil, err
	}
	id := eventID()
	trail, err := h.Audit(Entry{Tool: ReportAction, Decision: "reported", EventID: id, Reported: true})
	if err != nil {
		return nil, err
	}
	if !trail {
		return reportAnswer{Explanation: "Not recorded: the hub keeps no audit trail (audit.path is off)."}, nil
	}
	return reportAnswer{Recorded: true, EventID: id,
		Explanation: "Recorded in the audit trail as your report (reported by the agent: not proof that it happened)."}, nil
}
