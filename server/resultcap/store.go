package resultcap

import (
	"container/list"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// The result store keeps the whole of each tool result that was cut to
// fit a client's max_result (cut.go), for the session that made the call
// to read in pages (read.go). It is memory of the hub process alone: a
// restart, or another replica, does not have it.
const (
	// resultStoreBytes bounds the results kept, all sessions together.
	resultStoreBytes = 64 << 20
	// resultsPerCaller bounds the results kept for one session (or one
	// credential, for requests without a session).
	resultsPerCaller = 100
	// TTL is how long a result is kept after its call.
	TTL = 30 * time.Minute
	// resultIDBytes is the random part of a result's id: unguessable.
	resultIDBytes = 16
	// resultEntryCost is what an entry costs beyond its bytes (its id,
	// caller, names, page offsets), counted against resultStoreBytes.
	resultEntryCost = 512
)

// Call is the tool call a result came from: who may read the result,
// and the call the policy judges again on every read.
type Call struct {
	Caller string // whose calls these are (call.Session's Caller): only it may read the result
	Group  string
	Server string
	Tool   string          // as the server knows it
	Args   json.RawMessage // the call's arguments, for the policy
}

// Result is the whole of one cut result and what reading it needs.
type Result struct {
	Call
	id      string
	data    []byte // the result as it would have been sent
	pages   []int  // the offset in data where each page starts
	blob    bool   // data is no valid UTF-8: pages are read as base64 blobs
	expires time.Time
	elem    *list.Element // in Store.order
}

func (r *Result) cost() int {
	return len(r.data) + len(r.Args) + 8*len(r.pages) + resultEntryCost
}

// Options bound a Store; the zero value is the hub's bounds.
type Options struct {
	Logger    *slog.Logger     // nil: slog.Default()
	PerCaller int              // results kept for one caller; 0: 100
	Now       func() time.Time // the clock; nil: time.Now
}

// Store holds results, oldest first, within its bounds. It is the hub's
// for the life of the process (kept across reloads); cmd makes it and
// reads its Stats for /metrics.
type Store struct {
	maxBytes  int // resultStoreBytes, smaller in tests
	perCaller int
	ttl       time.Duration
	now       func() time.Time
	logger    *slog.Logger
	cut       atomic.Uint64 // results cut to fit max_result, kept or not

	mu       sync.Mutex // guards the fields below
	byID     map[string]*Result
	order    *list.List     // of *Result, oldest first
	perCount map[string]int // results by caller
	bytes    int            // the cost of the results kept
	evicted  uint64         // results dropped before their time to stay in bounds
}

// New is an empty store with o's bounds.
func New(o Options) *Store {
	s := &Store{maxBytes: resultStoreBytes, perCaller: resultsPerCaller, ttl: TTL, now: time.Now, logger: slog.Default(),
		byID: map[string]*Result{}, order: list.New(), perCount: map[string]int{}}
	if o.Logger != nil {
		s.logger = o.Logger
	}
	if o.PerCaller > 0 {
		s.perCaller = o.PerCaller
	}
	if o.Now != nil {
		s.now = o.Now
	}
	return s
}

// put keeps r (its data, pages and call filled in), evicting what it
// must, oldest first: expired results, then the oldest of r's caller
// when it has perCaller, then the oldest of anyone until r fits. It
// fills in r's id and expiry; an error says why r could not be kept.
func (s *Store) put(r *Result) error {
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
	if s.perCount[r.Caller] >= s.perCaller {
		for e := s.order.Front(); e != nil; e = e.Next() {
			if old := e.Value.(*Result); old.Caller == r.Caller {
				s.drop(old)
				s.evicted++
				break
			}
		}
	}
	for s.bytes+r.cost() > s.maxBytes && s.order.Len() > 0 {
		s.drop(s.order.Front().Value.(*Result))
		s.evicted++
	}
	r.elem = s.order.PushBack(r)
	s.byID[r.id] = r
	s.perCount[r.Caller]++
	s.bytes += r.cost()
	return nil
}

// get is the result id that caller may read, nil when there is none: an
// unknown id, one expired, and another caller's are all the same to it.
func (s *Store) get(id, caller string) *Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(s.now())
	r := s.byID[id]
	if r == nil || r.Caller != caller {
		return nil
	}
	return r
}

// expire drops the results past their time; they are in order of expiry.
func (s *Store) expire(now time.Time) {
	for e := s.order.Front(); e != nil; e = s.order.Front() {
		r := e.Value.(*Result)
		if now.Before(r.expires) {
			return
		}
		s.drop(r)
	}
}

func (s *Store) drop(r *Result) {
	s.order.Remove(r.elem)
	delete(s.byID, r.id)
	if s.perCount[r.Caller]--; s.perCount[r.Caller] <= 0 {
		delete(s.perCount, r.Caller)
	}
	s.bytes -= r.cost()
}

// Stats are the tool results cut to fit max_result since New, and of
// those the store keeps whole the number and bytes now and the ones
// evicted early to stay within its bounds since New, for /metrics.
func (s *Store) Stats() (cut uint64, kept, bytes int, evicted uint64) {
	kept, bytes, evicted = s.stats()
	return s.cut.Load(), kept, bytes, evicted
}

// stats are the results kept, their cost in bytes, and how many were
// evicted early to stay in bounds.
func (s *Store) stats() (n, bytes int, evicted uint64) {
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
func (r *Result) page(n int) []byte {
	end := len(r.data)
	if n < len(r.pages) {
		end = r.pages[n]
	}
	return r.data[r.pages[n-1]:end]
}
