package server

import (
	"container/list"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// The result store keeps the whole of each tool result that was cut to
// fit a client's max_result (resultcap.go), for the session that made
// the call to read in pages (resultread.go). It is memory of the hub
// process alone: a restart, or another replica, does not have it.
const (
	// resultStoreBytes bounds the results kept, all sessions together.
	resultStoreBytes = 64 << 20
	// resultsPerCaller bounds the results kept for one session (or one
	// credential, for requests without a session).
	resultsPerCaller = 100
	// resultTTL is how long a result is kept after its call.
	resultTTL = 30 * time.Minute
	// resultIDBytes is the random part of a result's id: unguessable.
	resultIDBytes = 16
	// resultEntryCost is what an entry costs beyond its bytes (its id,
	// caller, names, page offsets), counted against resultStoreBytes.
	resultEntryCost = 512
)

// storedResult is the whole of one cut result and what reading it needs:
// who may, and the call that made it, which the policy judges again on
// every read.
type storedResult struct {
	id      string
	caller  string // see caller(sess): only it may read the result
	data    []byte // the result as it would have been sent
	pages   []int  // the offset in data where each page starts
	blob    bool   // data is no valid UTF-8: pages are read as base64 blobs
	group   string
	server  string
	tool    string          // as the server knows it
	args    json.RawMessage // the call's arguments, for the policy
	expires time.Time
	elem    *list.Element // in resultStore.order
}

func (r *storedResult) cost() int {
	return len(r.data) + len(r.args) + 8*len(r.pages) + resultEntryCost
}

// resultStore holds results, oldest first, within its bounds.
type resultStore struct {
	maxBytes  int // resultStoreBytes, smaller in tests
	perCaller int
	ttl       time.Duration
	now       func() time.Time
	cut       atomic.Uint64 // results cut to fit max_result, kept or not

	mu       sync.Mutex // guards the fields below
	byID     map[string]*storedResult
	order    *list.List     // of *storedResult, oldest first
	perCount map[string]int // results by caller
	bytes    int            // the cost of the results kept
	evicted  uint64         // results dropped before their time to stay in bounds
}

func newResultStore() *resultStore {
	return &resultStore{maxBytes: resultStoreBytes, perCaller: resultsPerCaller, ttl: resultTTL, now: time.Now,
		byID: map[string]*storedResult{}, order: list.New(), perCount: map[string]int{}}
}

// put keeps r (its data, pages and call filled in), evicting what it
// must, oldest first: expired results, then the oldest of r's caller
// when it has perCaller, then the oldest of anyone until r fits. It
// fills in r's id and expiry; an error says why r could not be kept.
func (s *resultStore) put(r *storedResult) error {
	if r.cost() > s.maxBytes {
		return fmt.Errorf("at %s bytes it is larger than the hub keeps (%s bytes for all results)", commas(len(r.data)), commas(s.maxBytes))
	}
	id := make([]byte, resultIDBytes)
	if _, err := rand.Read(id); err != nil {
		return fmt.Errorf("result id: %w", err)
	}
	r.id = base64.RawURLEncoding.EncodeToString(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	r.expires = now.Add(s.ttl)
	s.expire(now)
	if s.perCount[r.caller] >= s.perCaller {
		for e := s.order.Front(); e != nil; e = e.Next() {
			if old := e.Value.(*storedResult); old.caller == r.caller {
				s.drop(old)
				s.evicted++
				break
			}
		}
	}
	for s.bytes+r.cost() > s.maxBytes && s.order.Len() > 0 {
		s.drop(s.order.Front().Value.(*storedResult))
		s.evicted++
	}
	r.elem = s.order.PushBack(r)
	s.byID[r.id] = r
	s.perCount[r.caller]++
	s.bytes += r.cost()
	return nil
}

// get is the result id that caller may read, nil when there is none: an
// unknown id, one expired, and another caller's are all the same to it.
func (s *resultStore) get(id, caller string) *storedResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(s.now())
	r := s.byID[id]
	if r == nil || r.caller != caller {
		return nil
	}
	return r
}

// expire drops the results past their time; they are in order of expiry.
func (s *resultStore) expire(now time.Time) {
	for e := s.order.Front(); e != nil; e = s.order.Front() {
		r := e.Value.(*storedResult)
		if now.Before(r.expires) {
			return
		}
		s.drop(r)
	}
}

func (s *resultStore) drop(r *storedResult) {
	s.order.Remove(r.elem)
	delete(s.byID, r.id)
	if s.perCount[r.caller]--; s.perCount[r.caller] <= 0 {
		delete(s.perCount, r.caller)
	}
	s.bytes -= r.cost()
}

// ResultStats are the tool results the hub cut to fit max_result since
// New, and of those it keeps whole the number and bytes now and the ones
// evicted early to stay within its bounds since New, for /metrics.
func (h *Hub) ResultStats() (cut uint64, kept, bytes int, evicted uint64) {
	kept, bytes, evicted = h.results.stats()
	return h.results.cut.Load(), kept, bytes, evicted
}

// stats are the results kept, their cost in bytes, and how many were
// evicted early to stay in bounds.
func (s *resultStore) stats() (n, bytes int, evicted uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len(), s.bytes, s.evicted
}

// paginate splits data into pages whose text, encoded as a JSON string,
// takes at most room bytes (base64 of at most room bytes when data is no
// valid UTF-8: blob). Pages break at rune boundaries, so that each is
// valid UTF-8 text on its own and together they are data exactly.
func paginate(data []byte, room int) (starts []int, blob bool) {
	room = max(room, 64)
	if !utf8.Valid(data) {
		per := room / 4 * 3
		for off := 0; off < len(data); off += per {
			starts = append(starts, off)
		}
		return starts, true
	}
	s := string(data)
	used := 2
	starts = append(starts, 0)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		n := runeJSONLen(r, s[i:])
		if used+n > room {
			starts = append(starts, i)
			used = 2
		}
		used += n
		i += size
	}
	return starts, false
}

// page is page n (from 1) of r: its bytes.
func (r *storedResult) page(n int) []byte {
	end := len(r.data)
	if n < len(r.pages) {
		end = r.pages[n]
	}
	return r.data[r.pages[n-1]:end]
}
