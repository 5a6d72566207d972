package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// A server whose list pages are large and never end: the hub stops
// reading the list once it holds maxListBytes of it, not after maxPages
// of them (1000 pages of up to max_message_size each: 10 GB held).
// Scaled down, bound and pages alike, to 1 MiB of pages of 128 KiB: under
// -race the hub's reading of a page costs about its size (8 MiB of pages
// of 1 MiB took 3 s of CPU).
func TestFetchAllBoundsWhatItHolds(t *testing.T) {
	defer func(old int) { maxListBytes = old }(maxListBytes)
	maxListBytes = 1 << 20
	desc := strings.Repeat("d", 128<<10)
	served := 0
	errTooMuch := errors.New("the hub read 200 pages of 128 KiB")
	huge := func(_ context.Context, _ string, params any) (json.RawMessage, error) {
		if served == 200 {
			return nil, errTooMuch
		}
		served++
		return json.RawMessage(`{"tools":[{"name":"t` + strconv.Itoa(served) + `","description":"` + desc + `"}],"nextCursor":"` + strconv.Itoa(served) + `"}`), nil
	}
	_, err := fetchAll(t.Context(), "tools/list", "tools", "name", huge)
	if err == nil || errors.Is(err, errTooMuch) || !strings.Contains(err.Error(), "bytes") {
		t.Fatalf("after %d pages of 128 KiB: %v", served, err)
	}
	if limit := maxListBytes/len(desc) + 1; served > limit {
		t.Errorf("%d pages of 128 KiB read, the bound is %d", served, limit)
	}
}
