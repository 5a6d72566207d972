package local

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
)

// A connection to the hub opens with one line each way: the bridge's
// Hello, then the hub's Reply. After a Reply without Error to an
// OpSession hello, the connection carries the client's MCP messages,
// one per line, both ways, as stdio does.

// What a Hello asks.
const (
	OpSession = "session" // be a session of the hub for a client
	OpStatus  = "status"  // say how the hub is doing, then close
	OpStop    = "stop"    // stop the hub, then close
	// OpUI asks the hub to serve its inspector on the loopback address
	// Hello.Addr (once: the same address again gets the same answer,
	// another one a refusal), then close.
	OpUI = "ui"
	// The approval inbox (issue 24): list the calls waiting and the
	// grants (OpApprovals); approve the call Hello.ID, with the grant
	// Hello.Grant asks for (OpApprove); deny it (OpDeny); end the grant
	// Hello.ID (OpRevoke). Then close. Who answers is the hub's to say
	// (Approver), never the Hello's: a connection may claim anything.
	OpApprovals = "approvals"
	OpApprove   = "approve"
	OpDeny      = "deny"
	OpRevoke    = "revoke"
)

// maxLine bounds a Hello or a Reply: a status lists every session.
const maxLine = 1 << 20

// Hello is the first line a bridge sends.
type Hello struct {
	// Version is the bridge's build: a hub of another build refuses the
	// session, and the bridge runs a hub of its own.
	Version string `json:"dynamic-mcp"`
	Op      string `json:"op"`
	// Pass says that, after the Reply, the bridge passes the hub its
	// stdin and stdout (SendFiles) and the hub talks to the client on
	// them directly: the bridge is then out of the path of every
	// message, and only waits for the session's end (Done). Without it
	// the bridge copies bytes both ways on the connection.
	Pass bool `json:"pass,omitempty"`
	// Profile is the config's profile the client is shown (serve
	// --profile), "" for the whole config.
	Profile string `json:"profile,omitempty"`
	// Addr is where OpUI asks the inspector to be served.
	Addr string `json:"addr,omitempty"`
	// Env is EnvDigests of the variables the config reads (${VAR}), as
	// the bridge has them: an OpSession hello whose values differ from
	// the hub's is refused (ErrEnv).
	Env map[string]string `json:"env,omitempty"`
	// ID is the pending call (OpApprove, OpDeny) or grant (OpRevoke).
	ID string `json:"id,omitempty"`
	// Grant is what OpApprove grants beyond the call; nil for it alone.
	Grant *approval.Options `json:"grant,omitempty"`
}

// Done is the hub's last line to a bridge that passed its stdin and
// stdout: the session ended as the client closed stdin. A connection that
// ends without it means the hub went away.
type Done struct {
	Done bool `json:"done"`
}

// Reply is the hub's answer to a Hello.
type Reply struct {
	Version string `json:"dynamic-mcp"` // the hub's build
	PID     int    `json:"pid"`
	// Error says why the hub refused; empty when it accepted.
	Error string `json:"error,omitempty"`
	// Status answers OpStatus.
	Status *Status `json:"status,omitempty"`
	// UI answers OpUI.
	UI *UI `json:"ui,omitempty"`
	// Approvals answers OpApprovals.
	Approvals *approval.List `json:"approvals,omitempty"`
	// Grant is the grant OpApprove made, if any.
	Grant *approval.Grant `json:"grant,omitempty"`
	// Peer is the process id of the process that answered, as the OS
	// says (PeerPID; 0 where it does not): not sent, set by the asker.
	Peer int `json:"-"`
}

// UI is where the hub serves its inspector, and the inspector's token
// (the socket is the user's alone: the token may travel on it).
type UI struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// Status is what the hub says of itself.
type Status struct {
	Config   string    `json:"config"`
	Started  time.Time `json:"started"`
	Sessions []Client  `json:"sessions"`
	// Upstreams are the hub's servers as it sees them, in config order;
	// nil from a hub that does not say (status then checks on its own).
	Upstreams []Upstream `json:"upstreams,omitempty"`
	// Reload is the hub's last config reload, nil before the first.
	Reload *Reload `json:"reload,omitempty"`
	// UI is where the hub serves its inspector and its token (the socket
	// is the user's alone, as for OpUI), nil when it serves none.
	UI *UI `json:"ui,omitempty"`
}

// Upstream is one server of the hub as its status shows it.
type Upstream struct {
	Group     string `json:"group"`
	Server    string `json:"server"`
	Transport string `json:"transport"`
	State     string `json:"state"`
	Protocol  string `json:"protocol,omitempty"`
	// Tools the client gets (after the group's deny and allow lists),
	// and those the lists hide.
	Tools  int `json:"tools"`
	Hidden int `json:"hidden,omitempty"`
	// ReadyIn is how long its last connect took; Since when it has been
	// in its state.
	ReadyIn    time.Duration `json:"ready_in,omitempty"`
	Since      time.Time     `json:"since,omitzero"`
	Error      string        `json:"error,omitempty"`
	PinChanged []string      `json:"pin_changed,omitempty"`
}

// Reload is the outcome of the hub's last config reload.
type Reload struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
	// Error is why the config was refused (the hub kept serving the one
	// before it), "" when it was applied.
	Error string `json:"error,omitempty"`
}

// Client is one session of the hub, by what its client said in
// initialize.
type Client struct {
	ID      string `json:"id"`
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

// ErrVersion is a hub's refusal of a bridge of another build.
var ErrVersion = errors.New("the running hub is another version")

// WriteLine writes v as one line of JSON.
func WriteLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadLine reads one line of JSON from r into v, at most maxLine bytes.
func ReadLine(r *bufio.Reader, v any) error {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine {
			return fmt.Errorf("handshake line over %d bytes", maxLine)
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	return nil
}

// Approver is who answers the approval inbox over the socket, as grants
// and the audit trail record it: "cli:" and the user's name. The socket
// admits only this user (its private directory, and the peer's uid where
// the OS tells it), so the hub says it of every connection itself: a
// name a Hello gave ("ui", say) would be the connection's claim.
func Approver() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	if name := os.Getenv("USER"); name != "" {
		return "cli:" + name
	}
	return "cli"
}
