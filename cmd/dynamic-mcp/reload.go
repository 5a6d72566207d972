package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// How often the config file is looked at, and how long it must stay
// unchanged before it is read (editors write files in several steps).
const (
	pollInterval = 500 * time.Millisecond
	settleTime   = 300 * time.Millisecond
)

// watchConfig reloads the config at path when the file changes, or at once
// on SIGHUP, and hands each valid new config to apply. An invalid one is
// logged and the old config keeps serving. When the pins directory changes
// (`pin accept` ran) it calls repin. A value on secrets (why: a secret
// changed in the store, say) reloads too, and so does a change of the
// vault's secrets file, vaultFile (`secret set` ran): a server waiting for
// a secret starts once it is set. Each reload's outcome goes to noted (for status). It
// returns when ctx ends.
func watchConfig(ctx context.Context, path, pinsDir, vaultFile string, noted func(reason string, err error), apply func(*config.Config), repin func(), secrets <-chan string, logger *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	current := fileHash(path)
	stamp, changedAt := statStamp(path), time.Time{}
	pins, vaulted := statStamp(pinsDir), statStamp(vaultFile)
	reload := func(reason string) {
		cfg, err := configs.Load(path)
		current = fileHash(path)
		noted(reason, err)
		if err != nil {
			logger.Error("config reload failed, still serving the previous config", "reason", reason, "err", err)
			return
		}
		logger.Info("config reloaded", "reason", reason, "groups", len(cfg.Groups))
		apply(cfg)
	}
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			reload("SIGHUP")
			repin()
		case reason := <-secrets:
			reload(reason)
		case now := <-t.C:
			if s := statStamp(pinsDir); s != pins {
				pins = s
				repin()
			}
			if s := statStamp(vaultFile); s != vaulted {
				vaulted = s
				reload("a secret changed in the vault")
				continue
			}
			if s := statStamp(path); s != stamp {
				stamp, changedAt = s, now
				continue
			}
			if changedAt.IsZero() || now.Sub(changedAt) < settleTime {
				continue
			}
			changedAt = time.Time{}
			if h := fileHash(path); !bytes.Equal(h, current) {
				reload("file changed")
			}
		}
	}
}

type stamp struct {
	mod  time.Time
	size int64
}

func statStamp(path string) stamp {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}
	}
	return stamp{fi.ModTime(), fi.Size()}
}

func fileHash(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	sum := sha256.Sum256(b)
	return sum[:]
}
