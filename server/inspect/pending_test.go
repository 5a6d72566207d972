package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Calls still pending are charged to the history's budget like any row:
// 40 pending calls each sent 64 progress notifications of 64 KiB (160 MiB
// sent) leave the inspector holding about its 8 MiB budget, not 160 MiB;
// a row pushed out of the history keeps nothing more while its call goes
// on, and its end is still told.
func TestPendingCallsChargedToBudget(t *testing.T) {
	const budget = 8 << 20
	i := New(Options{MaxBytes: budget})
	defer i.Close()
	progress := json.RawMessage(`{"progressToken":1,"progress":1,"message":"` + strings.Repeat("p", 64<<10-64) + `"}`)
	before := heapAfterGC()
	var ctxs []context.Context
	var calls []*traffic.Call
	for n := range 40 {
		c := &traffic.Call{Session: "s1", Transport: "stdio", ID: json.RawMessage(fmt.Sprint(n)), Method: "tools/call",
			Params: json.RawMessage(`{"name":"slow"}`), Start: time.Now()}
		ctx := i.CallStarted(context.Background(), c)
		for range maxMessages {
			i.Message(ctx, &traffic.Message{Direction: traffic.FromUpstream, Server: "g", Method: "notifications/progress", Params: progress})
		}
		ctxs, calls = append(ctxs, ctx), append(calls, c)
	}
	held := int64(heapAfterGC()) - int64(before)
	t.Logf("held %d KiB for 40 pending calls sent %d KiB", held>>10, 40*maxMessages*len(progress)>>10)
	if limit := int64(budget + budget/2); held > limit {
		t.Errorf("the inspector holds %d KiB for pending calls, want at most %d KiB (its budget and a half)", held>>10, limit>>10)
	}
	sub, _, err := i.subscribe()
	if err != nil {
		t.Fatal(err)
	}
	defer i.unsubscribe(sub)
	for n, ctx := range ctxs {
		calls[n].Status = traffic.StatusOK
		i.CallEnded(ctx, calls[n])
	}
	ends := 0
	for len(sub.ch) > 0 {
		if e := sub.take(<-sub.ch); e.kind == evEnd {
			ends++
		}
	}
	if ends != len(ctxs) {
		t.Errorf("%d ends told, want %d", ends, len(ctxs))
	}
	runtime.KeepAlive(ctxs)
}
