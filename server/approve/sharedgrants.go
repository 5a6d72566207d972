package approve

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"

	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/server/ratelimit"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// Grants on a shared store (store: postgres://...): a grant for every
// session is kept in the store, so that a grant made on one replica lets
// the calls it covers through on every replica, and a call counted
// against it on one is counted for all (under the store's lock of the
// grant). A grant for one session stays with the replica that holds the
// session, as the pending calls do.

// grantNS is the namespace of grants in a shared store, by grant id.
const grantNS = "grant"

// sharedWait bounds each exchange with the shared store on a call's
// path: a store that does not answer makes the call ask a person (the
// safe side), not hang.
const sharedWait = ratelimit.SharedWait

// decodeGrant reads a stored grant (an approval.Grant as JSON) and compiles its argument globs.
func decodeGrant(b []byte) (*grant, error) {
	g := new(grant)
	if err := json.Unmarshal(b, &g.Grant); err != nil {
		return nil, err
	}
	if len(g.Args) > 0 {
		m, err := policy.NewArgsMatcher(g.Args)
		if err != nil {
			return nil, err
		}
		g.args = m
	}
	return g, nil
}

// sharedGrants are the store's grants in force, oldest first; those past
// their time are removed.
func (a *Inbox) sharedGrants(ctx context.Context) ([]*grant, error) {
	all, err := a.shared.All(ctx, grantNS)
	if err != nil {
		return nil, err
	}
	now := a.now()
	out := make([]*grant, 0, len(all))
	for id, b := range all {
		g, err := decodeGrant(b)
		if err != nil {
			continue // not one this build can read: it covers nothing
		}
		if !g.Expires.IsZero() && !now.Before(g.Expires) {
			_ = a.shared.Delete(ctx, grantNS, id)
			continue
		}
		out = append(out, g)
	}
	slices.SortFunc(out, func(x, y *grant) int { return x.Created.Compare(y.Created) })
	return out, nil
}

// sharedUse is use for the store's grants: the first that covers the
// call is counted against, under the store's lock of it, after reading
// it again (another replica may have used its last call meanwhile).
func (a *Inbox) sharedUse(owner, group, server, method, name string, args json.RawMessage) (id, by string, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
	defer cancel()
	grants, err := a.sharedGrants(ctx)
	if err != nil {
		return "", "", false
	}
	return a.sharedUseOf(ctx, grants, owner, group, server, method, name, args)
}

// sharedUseOf is sharedUse among grants, as read from the store (each is
// read again under its lock before it is counted against).
func (a *Inbox) sharedUseOf(ctx context.Context, grants []*grant, owner, group, server, method, name string, args json.RawMessage) (id, by string, ok bool) {
	for _, g := range grants {
		if !g.covers(a.now(), owner, group, server, method, name, args) {
			continue
		}
		err := a.shared.Locked(ctx, grantNS, g.ID, sharedWait, func(tx shared.Tx) error {
			b, err := tx.Get(ctx, grantNS, g.ID)
			if err != nil {
				return err // revoked or used up meanwhile: ErrNotFound
			}
			cur, err := decodeGrant(b)
			if err != nil {
				return err
			}
			if !cur.covers(a.now(), owner, group, server, method, name, args) {
				return shared.ErrNotFound
			}
			cur.Used++
			if cur.CallsLeft > 0 {
				if cur.CallsLeft--; cur.CallsLeft == 0 {
					id, by, ok = cur.ID, cur.ApprovedBy, true
					return tx.Delete(ctx, grantNS, cur.ID)
				}
			}
			b, err = json.Marshal(cur.Grant)
			if err != nil {
				return err
			}
			id, by, ok = cur.ID, cur.ApprovedBy, true
			return tx.Put(ctx, grantNS, cur.ID, b)
		})
		if err == nil && ok {
			return id, by, true
		}
		id, by, ok = "", "", false
	}
	return "", "", false
}

// sharedPut keeps g in the store, pushing out the oldest past maxGrants.
func (a *Inbox) sharedPut(g *grant) error {
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
	defer cancel()
	grants, err := a.sharedGrants(ctx)
	if err != nil {
		return err
	}
	for i := 0; i <= len(grants)-maxGrants; i++ {
		if err := a.shared.Delete(ctx, grantNS, grants[i].ID); err != nil {
			return err
		}
	}
	b, err := json.Marshal(g.Grant)
	if err != nil {
		return err
	}
	return a.shared.Put(ctx, grantNS, g.ID, b)
}

// sharedList are the store's grants, for the inbox's list.
func (a *Inbox) sharedList() []approval.Grant {
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
	defer cancel()
	grants, err := a.sharedGrants(ctx)
	if err != nil {
		return nil
	}
	out := make([]approval.Grant, 0, len(grants))
	for _, g := range grants {
		out = append(out, g.public())
	}
	return out
}

// sharedRevoke removes the store's grant id: approval.ErrNoGrant when
// there is none.
func (a *Inbox) sharedRevoke(id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
	defer cancel()
	err := a.shared.Locked(ctx, grantNS, id, sharedWait, func(tx shared.Tx) error {
		if _, err := tx.Get(ctx, grantNS, id); err != nil {
			return err
		}
		return tx.Delete(ctx, grantNS, id)
	})
	if errors.Is(err, shared.ErrNotFound) {
		return approval.ErrNoGrant
	}
	return err
}

// grantsChannel announces a grant made on one replica to the others,
// whose calls waiting for approval it may cover.
const grantsChannel = "dynamic_mcp_grants"

// WatchGrants releases, each time a replica announces a grant, the
// calls waiting here that it covers, until the hub closes.
func (a *Inbox) WatchGrants() {
	a.shared.Watch(a.ctx, grantsChannel, func() { a.safely("release calls a shared grant covers", a.releaseShared) })
}

// releaseShared lets through the calls waiting here that a grant on the
// shared store covers, each counted against it. A call that stopped
// waiting meanwhile (timed out) has still used its count: the safe side.
// The grants are read once for all the waiting calls.
func (a *Inbox) releaseShared() {
	a.mu.Lock()
	waiting := slices.Collect(maps.Values(a.pending))
	a.mu.Unlock()
	if len(waiting) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
	grants, err := a.sharedGrants(ctx)
	cancel()
	if err != nil {
		a.logger.Warn("approval: could not read the shared grants", "err", err)
		return
	}
	for _, q := range waiting {
		ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
		id, by, ok := a.sharedUseOf(ctx, grants, q.owner, q.Group, q.Server, q.Method, q.name, q.args)
		cancel()
		if !ok {
			continue
		}
		a.mu.Lock()
		if _, still := a.takeLocked(q.ID); still {
			q.answer <- verdict{ok: true, by: by, grant: id}
			a.logger.Info("approval: call released by a grant of another replica", "id", q.ID, "grant", id, "tool", q.Tool)
		}
		a.mu.Unlock()
	}
}

// announceGrant tells the other replicas a grant was made.
func (a *Inbox) announceGrant() error {
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
	defer cancel()
	return a.shared.Notify(ctx, grantsChannel)
}
