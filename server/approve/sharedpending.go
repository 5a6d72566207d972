package approve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// Pending approvals on a shared store (store: postgres://...): a call
// waiting in the inbox stays on the replica that holds it (its client
// waits there), and is recorded in the store, with that replica and its
// deadline, so that every replica lists it. An approval or denial made on
// another replica is written into the call's row and announced with
// NOTIFY; the replica where the call waits reads it and answers its call.
// The row goes when the call is answered, times out or is cancelled; the
// rows of a replica that died go at their deadline, when a replica lists
// them. The bounds of the inbox hold per replica.

// pendingNS is the namespace of pending calls in a shared store, by id.
const pendingNS = "pending"

// pendingChannel announces an answer written into a pending call's row.
const pendingChannel = "dynamic_mcp_pending"

// sharedPending is a pending call's row in the store.
type sharedPending struct {
	approval.Pending
	// Sessionless: the call has no session a session grant could end with.
	Sessionless bool `json:"sessionless,omitempty"`
	// Credential is the HTTP credential the call came with ("" none),
	// for the bound of a credential's calls on all replicas.
	Credential string `json:"credential,omitempty"`
	// Answer is a person's answer given on another replica, for the
	// replica where the call waits; nil until then.
	Answer *sharedAnswer `json:"answer,omitempty"`
}

// sharedAnswer is an approval (with its options) or a denial.
type sharedAnswer struct {
	OK      bool             `json:"ok"`
	By      string           `json:"by"`
	Options approval.Options `json:"options"`
	// Grant is the id of the grant an approval that is not once makes,
	// chosen by the replica that took the answer, so that it can tell
	// its caller which grant was made.
	Grant string `json:"grant,omitempty"`
}

// boundsKey is the lock under which a replica counts the store's pending
// calls and adds one.
const boundsKey = "bounds"

// sharedAdd records p in the store, or says why it cannot wait: the
// bounds of all calls waiting (maxPending) and of one credential's
// (maxPendingPerCredential) hold on all replicas together. When the
// store fails, the call waits all the same, listed and answerable on
// this replica alone.
func (a *Inbox) sharedAdd(p *pendingCall) error {
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
	defer cancel()
	var refused error // committed all the same: the dead rows' deletion
	err := a.shared.Locked(ctx, pendingNS, boundsKey, sharedWait, func(tx shared.Tx) error {
		all, err := tx.All(ctx, pendingNS)
		if err != nil {
			return err
		}
		now, n, ofCred := a.now(), 0, 0
		for id, b := range all {
			r, ok := decodePending(b)
			if !ok || !now.Before(r.Deadline) {
				if err := tx.Delete(ctx, pendingNS, id); err != nil { // a dead replica's
					return err
				}
				continue
			}
			n++
			if p.cred != "" && r.Credential == p.cred {
				ofCred++
			}
		}
		switch {
		case n >= maxPending:
			refused = fmt.Errorf("%d calls wait for approval already, on all replicas", maxPending)
			return nil
		case p.cred != "" && ofCred >= maxPendingPerCredential:
			refused = fmt.Errorf("%d calls of this credential wait for approval already, on all replicas", maxPendingPerCredential)
			return nil
		}
		b, err := json.Marshal(sharedPending{Pending: p.Pending, Sessionless: p.sessionless, Credential: p.cred})
		if err != nil {
			return err
		}
		return tx.Put(ctx, pendingNS, p.ID, b)
	})
	if err == nil && refused != nil {
		return refused
	}
	if err != nil {
		a.logger.Warn("approval: the pending call could not be recorded in the store; it is listed on this replica alone", "id", p.ID, "err", err)
	}
	return nil
}

// sharedRemove removes the row of the pending call id, once it stopped
// waiting, under the row's lock: an answer being written on another
// replica meanwhile cannot put it back.
func (a *Inbox) sharedRemove(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
	defer cancel()
	err := a.shared.Locked(ctx, pendingNS, id, sharedWait, func(tx shared.Tx) error {
		return tx.Delete(ctx, pendingNS, id)
	})
	if err != nil {
		a.logger.Warn("approval: the row of an answered call could not be removed from the store; it goes at its deadline", "id", id, "err", err)
	}
}

// decodePending reads a row; ok false for one this build cannot read.
func decodePending(b []byte) (sharedPending, bool) {
	var r sharedPending
	return r, json.Unmarshal(b, &r) == nil && r.ID != ""
}

// sharedPendingList are the store's pending calls not waiting here, the
// rows past their deadline removed.
func (a *Inbox) sharedPendingList(here map[string]bool) []approval.Pending {
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
	defer cancel()
	all, err := a.shared.All(ctx, pendingNS)
	if err != nil {
		return nil
	}
	now := a.now()
	var out []approval.Pending
	for id, b := range all {
		r, ok := decodePending(b)
		if !ok || !now.Before(r.Deadline) {
			_ = a.shared.Delete(ctx, pendingNS, id)
			continue
		}
		if !here[id] {
			out = append(out, r.Pending)
		}
	}
	return out
}

// has reports whether the call id waits on this replica.
func (a *Inbox) has(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.pending[id]
	return ok
}

// answerElsewhere writes ans into the row of the call id that waits on
// another replica, once, and announces it: approval.ErrNoPending when no
// call id waits anywhere, or it was answered already.
func (a *Inbox) answerElsewhere(id string, ans sharedAnswer) error {
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
	defer cancel()
	err := a.shared.Locked(ctx, pendingNS, id, sharedWait, func(tx shared.Tx) error {
		b, err := tx.Get(ctx, pendingNS, id)
		if err != nil {
			return err
		}
		r, ok := decodePending(b)
		if !ok || r.Answer != nil || r.Replica == a.replica || !a.now().Before(r.Deadline) {
			return shared.ErrNotFound
		}
		if ans.Options.Session && r.Sessionless {
			return approval.ErrNoSession
		}
		r.Answer = &ans
		if b, err = json.Marshal(r); err != nil {
			return err
		}
		return tx.Put(ctx, pendingNS, id, b)
	})
	if errors.Is(err, shared.ErrNotFound) {
		return approval.ErrNoPending
	}
	if err != nil {
		return err
	}
	if err := a.shared.Notify(ctx, pendingChannel); err != nil {
		a.logger.Warn("approval: an answer could not be announced to the other replicas; it is read at the next announcement", "id", id, "err", err)
	}
	a.logger.Info("approval: answer sent to the replica where the call waits", "id", id, "ok", ans.OK, "by", ans.By)
	return a.awaitApplied(ctx, id)
}

// approveElsewhere answers the call id that waits on another replica
// with an approval with o, and returns the grant it makes (nil for once):
// as every replica lists it once the replica where the call waits has
// made it, or, not listed yet (a grant for one session stays on that
// replica; an answer not applied within appliedWait), its id and what
// this replica knows of it.
func (a *Inbox) approveElsewhere(id, by string, o approval.Options) (*approval.Grant, error) {
	ans := sharedAnswer{OK: true, By: by, Options: o}
	if !o.Once() {
		ans.Grant = NewID("g-")
	}
	if err := a.answerElsewhere(id, ans); err != nil || ans.Grant == "" {
		return nil, err
	}
	// The call's row goes as the call is answered; the grant is saved
	// just after.
	for deadline := time.Now().Add(time.Second); ; time.Sleep(appliedPoll) {
		for _, g := range a.sharedList() {
			if g.ID == ans.Grant {
				return &g, nil
			}
		}
		if o.Session || time.Now().After(deadline) {
			break
		}
	}
	g := &approval.Grant{ID: ans.Grant, Created: a.now(), ApprovedBy: by, Args: o.Args, CallsLeft: o.Calls}
	if o.For > 0 {
		g.Expires = g.Created.Add(time.Duration(o.For))
	}
	return g, nil
}

// appliedPoll is how often answerElsewhere looks whether the replica
// where the call waits applied the answer, for at most appliedWait.
const (
	appliedPoll = 50 * time.Millisecond
	appliedWait = 2 * time.Second
)

// awaitApplied waits, within appliedWait, until the row of the call id
// is gone (the call was answered): an error when the replica where it
// waits cleared the answer instead (it could not apply it). Still
// unapplied after appliedWait, the answer stays for that replica to
// apply (it may be slow, or its listener reconnecting): nil.
func (a *Inbox) awaitApplied(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, appliedWait)
	defer cancel()
	t := time.NewTicker(appliedPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		b, err := a.shared.Get(ctx, pendingNS, id)
		if errors.Is(err, shared.ErrNotFound) {
			return nil
		}
		if err != nil {
			continue
		}
		if r, ok := decodePending(b); ok && r.Answer == nil {
			return errors.New("the replica where the call waits could not apply the answer (see its log); the call waits on")
		}
	}
}

// WatchPending answers, each time a replica announces an answer,
// the calls waiting here that were answered elsewhere, until the hub closes.
func (a *Inbox) WatchPending() {
	a.shared.Watch(a.ctx, pendingChannel, func() { a.safely("answer calls answered on another replica", a.applySharedAnswers) })
}

// applySharedAnswers answers the calls waiting here whose rows hold an
// answer. An approval that fails here (its grant cannot be made) leaves
// the call waiting, its row's answer cleared so that a person can answer
// again.
func (a *Inbox) applySharedAnswers() {
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
	defer cancel()
	all, err := a.shared.All(ctx, pendingNS)
	if err != nil {
		a.logger.Warn("approval: the store's pending calls could not be read", "err", err)
		return
	}
	ids := make([]string, 0, len(all))
	for id := range all {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		r, ok := decodePending(all[id])
		if !ok || r.Answer == nil || r.Replica != a.replica || !a.has(id) {
			continue
		}
		if r.Answer.OK {
			_, err = a.approve(id, r.Answer.By, r.Answer.Options, r.Answer.Grant)
		} else {
			err = a.Deny(id, r.Answer.By)
		}
		if err == nil || errors.Is(err, approval.ErrNoPending) {
			continue
		}
		a.logger.Error("approval: an answer from another replica could not be applied; the call waits on", "id", id, "err", err)
		r.Answer = nil
		if b, merr := json.Marshal(r); merr == nil && a.has(id) {
			_ = a.shared.Put(ctx, pendingNS, id, b)
		}
	}
}
