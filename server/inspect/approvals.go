package inspect

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
)

// Approver is the hub's approval inbox (server.Hub): the calls a prompt
// rule holds for a person's answer, and the grants in force.
type Approver interface {
	Approvals() approval.List
	Approve(id, by string, o approval.Options) (*approval.Grant, error)
	Deny(id, by string) error
	Revoke(id, by string) error
}

// approver is who the inspector's answers are recorded as.
const approver = "ui"

// maxApproveBody bounds an approve request's grant options.
const maxApproveBody = 64 << 10

// mountApprovals serves the inbox under api/: GET approvals (the calls
// waiting and the grants), POST approvals/{id}/approve (its body, if any,
// the grant's approval.Options), POST approvals/{id}/deny and POST
// grants/{id}/revoke. Behind the inspector's token, as all of api/.
func (i *Inspector) mountApprovals(mux *http.ServeMux) {
	inbox := i.opts.Approvals
	mux.HandleFunc("GET "+Prefix+"api/approvals", func(w http.ResponseWriter, _ *http.Request) {
		l := approval.List{Pending: []approval.Pending{}, Grants: []approval.Grant{}}
		if inbox != nil {
			l = inbox.Approvals()
		}
		for n := range l.Pending {
			l.Pending[n].Session = sessionLabel(l.Pending[n].Session)
		}
		for n := range l.Grants {
			l.Grants[n].Session = sessionLabel(l.Grants[n].Session)
		}
		writeJSON(w, l)
	})
	mux.HandleFunc("POST "+Prefix+"api/approvals/{id}/approve", func(w http.ResponseWriter, r *http.Request) {
		var o approval.Options
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxApproveBody))
		if err == nil && len(body) > 0 {
			err = json.Unmarshal(body, &o)
		}
		if err == nil {
			err = o.Check() // args without for, calls or session: as the CLI refuses them
		}
		if err != nil {
			http.Error(w, "bad grant options: "+err.Error(), http.StatusBadRequest)
			return
		}
		if inbox == nil {
			answerError(w, approval.ErrNoPending)
			return
		}
		g, err := inbox.Approve(r.PathValue("id"), approver, o)
		if err != nil {
			answerError(w, err)
			return
		}
		if g != nil {
			g.Session = sessionLabel(g.Session)
		}
		writeJSON(w, map[string]any{"approved": true, "grant": g})
	})
	mux.HandleFunc("POST "+Prefix+"api/approvals/{id}/deny", func(w http.ResponseWriter, r *http.Request) {
		err := approval.ErrNoPending
		if inbox != nil {
			err = inbox.Deny(r.PathValue("id"), approver)
		}
		answerError(w, err)
	})
	mux.HandleFunc("POST "+Prefix+"api/grants/{id}/revoke", func(w http.ResponseWriter, r *http.Request) {
		err := approval.ErrNoGrant
		if inbox != nil {
			err = inbox.Revoke(r.PathValue("id"), approver)
		}
		answerError(w, err)
	})
}

// answerError answers 204 for nil, 404 for an id that is not there, 400
// for any other refusal.
func answerError(w http.ResponseWriter, err error) {
	switch {
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, approval.ErrNoPending), errors.Is(err, approval.ErrNoGrant):
		http.Error(w, err.Error(), http.StatusNotFound)
	default:
		http.Error(w, err.Error(), http.StatusBadRequest)
	}
}
