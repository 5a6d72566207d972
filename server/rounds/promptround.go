package rounds

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/approve"
	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/server/routes"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// A prompt policy rule asks a 2026-07-28 client's user in an
// input_required answer ("Multi Round-Trip Requests", SEP-2322): a server
// of that version sends the client no requests, so the hub cannot send it
// elicitation/create as it does an older client. The call is answered
// input_required with the question as its one input request and a sealed
// requestState of the hub's that names the rule, the caller and the call
// (callDigest); nothing is sent upstream and nothing is held. The retry
// that brings the answer with that state is the call: accept lets that
// retry through the policy, once (the state is single-use), and it goes
// upstream as a first call would, without the hub's state and answer
// (further rounds of the upstream's own follow as for any call); decline,
// cancel or another answer deny it -32001, as an older client's do. A
// state the hub did not seal, altered, expired, of another caller or
// call, or used already is refused -32602, as every state of the hub's is
// (see Rounds.Call).
//
// The retry of a later round, the upstream's own, of a call the policy
// let through carries that round's state (see Rounds.Call): the rule is
// not asked again for it. A question's state whose call no rule stops any
// more (a reload made it allowed) reaches Rounds.Call, which refuses it as
// used: the client sends the call again.

// PromptInputKey is the key of the hub's question among a round's input
// requests, and of its answer among the retry's inputResponses.
const PromptInputKey = "dynamic-mcp-policy-prompt"

// maxPromptRounds bounds the questions the hub has put in input_required
// answers, all clients together, whose retry has not come yet: each is
// kept until it is answered or expires (settings.prompt_timeout). A call that would
// ask past it is denied. maxPromptRoundsPerCaller is one caller's share
// (a session, or a credential without one), so that a client that leaves
// its questions unanswered cannot keep the others from being asked;
// maxPromptRoundsPerCredential that of all the callers of one HTTP
// credential (session.Client; "" has none), so that one credential with
// many sessions cannot either.
const (
	maxPromptRounds              = 1024
	maxPromptRoundsPerCaller     = 64
	maxPromptRoundsPerCredential = 256
)

// promptRounds are the questions asked in input_required answers and not
// answered yet, by the id their state names, with whose each is and when
// it expires: a state is good for one retry.
type promptRounds struct {
	mu   sync.Mutex           // guards open
	open map[string]openRound // id -> the round
}

type openRound struct {
	caller string
	cred   string // the HTTP credential, "" for none
	exp    time.Time
}

func newPromptRounds() *promptRounds { return &promptRounds{open: map[string]openRound{}} }

// put keeps id, caller's of credential cred, until exp; false when too
// many are open, in all, of caller or of cred, those expired at now
// forgotten first.
func (r *promptRounds) put(id, caller, cred string, exp, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	full := func() bool {
		if len(r.open) >= maxPromptRounds {
			return true
		}
		n, nc := 0, 0
		for _, o := range r.open {
			if o.caller == caller {
				n++
			}
			if cred != "" && o.cred == cred {
				nc++
			}
		}
		return n >= maxPromptRoundsPerCaller || nc >= maxPromptRoundsPerCredential
	}
	if full() {
		for k, o := range r.open {
			if now.After(o.exp) {
				delete(r.open, k)
			}
		}
		if full() {
			return false
		}
	}
	r.open[id] = openRound{caller: caller, cred: cred, exp: exp}
	return true
}

// take forgets id, and reports whether it was open: a round is taken once.
func (r *promptRounds) take(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.open[id]
	delete(r.open, id)
	return ok
}

// Round asks a 2026-07-28 client's user about a call in an
// input_required answer, or reads the answer its retry brings (the
// input_required round of approve.Ways): nil lets the call through; a
// *call.Answer answers the request; any other error denies the call with
// that reason. A client that cannot be asked so is asked through Inbox.
type Round struct {
	Rounds *Rounds
	Config *config.Config
	Inbox  call.Asker
}

// Ask asks about c, which rule d stops, or reads the answer.
func (a Round) Ask(ctx context.Context, c *call.Call, d policy.Decision) error {
	r := a.Rounds
	who, digest := c.Session.Caller(), callDigest(c)
	token, retry := jsonrpc.StringValue(c.Request.Field("requestState"))
	if !retry {
		if c.Request.Field("requestState") != nil {
			return &call.Answer{Err: jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: requestState must be a string")}
		}
		if !routes.CanElicit(c.Session.Capabilities().Elicitation, "") || approve.InboxFor(a.Config, c.Session.ClientName()) { // the question is a form
			// The approval inbox takes such a client's question, as an
			// older client's (issue 24).
			return a.Inbox.Ask(ctx, c, d)
		}
		return r.putQuestion(a.Config, c, d, who, digest)
	}
	st, err := r.states.open(token, who, digest)
	if err != nil {
		return &call.Answer{Err: jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: "+err.Error())}
	}
	if st.Prompt == "" {
		// A later round of a call the policy let through, the upstream's
		// own: Rounds.Call checks its state again and resumes it.
		return nil
	}
	answers, err := inputResponses(c.Request.Field("inputResponses")) // before take: a malformed retry leaves the state good
	if err != nil {
		var re *jsonrpc.Error
		if errors.As(err, &re) {
			return &call.Answer{Err: re}
		}
		return err
	}
	if !r.prompts.take(st.Round) {
		return &call.Answer{Err: jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: "+ErrStateUsed.Error())}
	}
	if st.Prompt != ruleName(d) {
		// The config changed since the question: the rule that stops the
		// call now asks its own.
		return r.putQuestion(a.Config, c, d, who, digest)
	}
	raw := answers.Field(PromptInputKey)
	if raw == nil {
		// Not answered: asked again, as the specification has a server
		// do with an input request its retry leaves unanswered.
		return r.putQuestion(a.Config, c, d, who, digest)
	}
	if err := approve.Accepted(raw); err != nil {
		return err
	}
	// The retry is the call: it goes upstream as the first call would
	// have, without the hub's state and the answer to its question.
	c.Request, c.Params = WithoutRound(c.Request), WithoutRound(c.Params)
	return nil
}

// Answers reports whether c is the 2026-07-28 retry that answers a
// question the hub put about it (its requestState names a rule).
func (a Round) Answers(c *call.Call) bool {
	token, ok := jsonrpc.StringValue(c.Request.Field("requestState"))
	if !ok || !c.Modern {
		return false
	}
	st, err := a.Rounds.states.open(token, c.Session.Caller(), callDigest(c))
	return err == nil && st.Prompt != ""
}

// putQuestion is the input_required answer that asks c's user about it,
// with a state for one retry within settings.prompt_timeout (of cfg); who
// is the caller (see call.Session's Caller), digest c's (see callDigest).
func (r *Rounds) putQuestion(cfg *config.Config, c *call.Call, d policy.Decision, who, digest string) error {
	id, err := randomID()
	if err != nil {
		return err
	}
	exp := r.states.now().Add(approve.PromptTimeout(cfg))
	state, err := r.states.seal(sealedState{Round: id, Prompt: ruleName(d), Caller: who, Call: digest, Expires: exp.UnixMilli()})
	if err != nil {
		return err
	}
	type question struct {
		Mode            string `json:"mode"`
		Message         string `json:"message"`
		RequestedSchema any    `json:"requestedSchema"`
	}
	type inputRequest struct {
		Method string   `json:"method"`
		Params question `json:"params"`
	}
	res, err := jsonrpc.Marshal(struct {
		ResultType    mcp.ResultType          `json:"resultType"`
		InputRequests map[string]inputRequest `json:"inputRequests"`
		RequestState  string                  `json:"requestState"`
	}{mcp.ResultTypeInputRequired, map[string]inputRequest{PromptInputKey: {Method: string(mcp.MethodElicitationCreate), Params: question{
		Mode: "form", Message: approve.Message(cfg, c.Method, c.Server.ID(), c.Name, c.Args, d), RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
	}}}, state})
	if err != nil {
		return err
	}
	if !r.prompts.put(id, who, c.Session.Credential(), exp, r.states.now()) {
		return fmt.Errorf("too many questions wait for an answer (at most %d of one client, %d of one credential, %d in all)",
			maxPromptRoundsPerCaller, maxPromptRoundsPerCredential, maxPromptRounds)
	}
	return &call.Answer{Result: res}
}

// ruleName is the rule a decision names, as a block names it.
func ruleName(d policy.Decision) string {
	if d.Rule == "" {
		return "policy_default"
	}
	return d.Rule
}

// WithoutRound are params without the requestState and inputResponses of
// a round: what a first call carries.
func WithoutRound(params jsonrpc.Object) jsonrpc.Object {
	if params.Field("requestState") == nil && params.Field("inputResponses") == nil {
		return params
	}
	b := params.Bytes()
	for _, k := range []string{"requestState", "inputResponses"} {
		if out, err := jsonrpc.DeleteField(b, k); err == nil {
			b = out
		}
	}
	o, err := jsonrpc.ScanObject(b)
	if err != nil {
		return params
	}
	return o
}
