package audit

import (
	"context"
	"encoding/json"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
)

// Stage is the audit trail's stage of the call chain, outermost: it
// admits a call (audit.required refuses every call while the trail
// fails: nothing unaudited) and builds its record from what the stages
// after it decided. The record is not written here: the request's
// outcome (a result budget, a tool error, a cancel) is decided once,
// where the request is answered, and every observer reads that one; so
// Keep is handed the record, for the hub to complete (Ended) and Write
// with the request's outcome. The trail's one writer writes it.
type Stage struct {
	Trail *Trail // the snapshot's, nil when the trail is off
	Keep  func(c *call.Call, r *Record)
}

// Handle admits c, passes it on, and hands Keep its record.
func (s Stage) Handle(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if s.Trail == nil { // off: nothing to admit or record
		return next.Handle(ctx, c)
	}
	if err := s.Trail.Admit(); err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := next.Handle(ctx, c)
	s.Keep(c, NewRecord(start, c))
	return res, err
}
