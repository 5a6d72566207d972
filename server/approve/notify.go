package approve

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// Desktop notifications of calls that come to the approval inbox
// (settings.notify): notify-send where it is on PATH, osascript on macOS.
// Each runs as a child of its own, bounded in time and in number; one
// that cannot start, or is over the bound, is skipped: a notification
// never holds up a call.
const (
	maxNotifying  = 4
	notifyTimeout = 5 * time.Second
)

// notifyCommand is the command that shows title and body, nil when this
// machine has none.
func notifyCommand(ctx context.Context, title, body string) *exec.Cmd {
	if runtime.GOOS == "darwin" {
		if p, err := exec.LookPath("osascript"); err == nil {
			return exec.CommandContext(ctx, p, "-e", "on run argv\ndisplay notification (item 2 of argv) with title (item 1 of argv)\nend run", title, body)
		}
		return nil
	}
	if p, err := exec.LookPath("notify-send"); err == nil {
		return exec.CommandContext(ctx, p, "--app-name=dynamic-mcp", "--", title, body)
	}
	return nil
}

// notifyApproval shows a desktop notification of p when the config asks.
func (a *Inbox) notifyApproval(cfg *config.Config, p approval.Pending) {
	if !cfg.Settings.Notify {
		return
	}
	select {
	case a.notifying <- struct{}{}:
	default:
		a.logger.Debug("approval: notification skipped, others are being shown", "id", p.ID)
		return
	}
	title := "dynamic-mcp: approve " + p.Tool + "?"
	body := fmt.Sprintf("%s/%s wants %s %s (approval %s). %s, or deny it, in the inspector or the CLI.",
		p.Group, p.Server, p.Method, p.Tool, p.ID, cfg.Command("approve", p.ID))
	if p.Client != "" {
		body = p.Client + ": " + body
	}
	if !a.spawn(func() {
		defer func() { <-a.notifying }()
		ctx, cancel := context.WithTimeout(a.ctx, notifyTimeout)
		defer cancel()
		cmd := notifyCommand(ctx, title, body)
		if cmd == nil {
			return
		}
		if err := cmd.Run(); err != nil {
			a.logger.Debug("approval: notification failed", "err", err)
		}
	}) {
		<-a.notifying
	}
}
