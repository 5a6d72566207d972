package call

import (
	"encoding/json"
	"errors"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// Answer is what an Asker answers a request with instead of a decision:
// the result that puts the question to the client (a 2026-07-28
// input_required answer), or the error that refuses the state the retry
// came with. It is no policy block: the stages pass it on as it is.
type Answer struct {
	Result json.RawMessage
	Err    *jsonrpc.Error
}

func (a *Answer) Error() string {
	if a.Err != nil {
		return a.Err.Error()
	}
	return "the question is put to the client in an input_required answer"
}

// IsAnswer reports whether err is an *Answer.
func IsAnswer(err error) bool {
	var a *Answer
	return errors.As(err, &a)
}

// AnswerWith is what a stage answers when a decision refused the call
// with err: the result of an *Answer, or err.
func AnswerWith(err error) (json.RawMessage, error) {
	var a *Answer
	if !errors.As(err, &a) {
		return nil, err
	}
	if a.Err != nil {
		return nil, a.Err
	}
	return a.Result, nil
}
