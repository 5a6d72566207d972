package resultcap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// Answers that fit (settings.max_result, a clients: rule's or a
// profile's): a tool result over the client's cap is cut to fit it, and
// kept whole in the Store for the session to read in pages (store.go,
// read.go). Claude Code refuses a result over 25,000 tokens; a search
// tool can answer with megabytes.
//
// What a cut answer holds, in the result's own order of members:
//   - each text block over its share is cut at a line break (else a rune
//     boundary) to its head and tail, with a marker between them stating
//     the sizes; small blocks pass untouched, and so do resource links;
//   - an image, audio, embedded resource or block of an unknown type too
//     large for its share is replaced by a text note saying what it was;
//   - structuredContent is kept when it takes at most a quarter of the
//     cap, else left out (with the note saying so): the specification
//     has a tool that returns it return the same in a text block too
//     ("Structured Content"), and the whole of it is in the store;
//   - isError and _meta are kept (other members while they take at most
//     a quarter of the cap);
//   - last, a text note with the sizes, where the whole result is and how
//     many pages it takes, and a resource_link to it.

// Cut is res, the result of the tools/call c, cut to limit (the client's
// max_result) when it is Over it, the whole kept for c's caller to read
// back; idLen is the length of the JSON-RPC id it will be answered with.
// The caller judges first whether res is the kind of result that is cut:
// a tool's own result (no task's, no input_required answer).
func (s *Store) Cut(res []byte, limit, idLen int, c Call) []byte {
	if !Over(res, limit) {
		return res
	}
	upstream := (&config.Server{Group: c.Group, Name: c.Server}).ID()
	target := max(limit-resultEnvelope-idLen, limit/2) // an id of kilobytes makes its own answer long
	c.Args = bytes.Clone(c.Args)                       // not a slice of the request's params, kept whole
	r := &Result{Call: c, data: res}
	room := target - pageOverhead
	r.pages, r.blob = paginate(res, room)
	link := resultLink{tool: c.Tool, pageSize: room, cap: limit}
	if r.blob {
		link.pageSize = room / 4 * 3
	}
	if err := s.put(r); err != nil {
		link.why = err.Error()
		s.logger.Warn("tool result cut and not kept", "upstream", upstream, "tool", c.Tool, "bytes", len(res), "err", err)
	} else {
		link.uri, link.pages = Scheme+r.id, len(r.pages)
	}
	s.cut.Add(1)
	out := fitResult(res, target, link)
	s.logger.Debug("tool result cut to fit max_result", "upstream", upstream, "tool", c.Tool, "bytes", len(res), "cut_to", len(out), "max_result", limit, "uri", link.uri)
	return out
}

// resultLink says where the whole of a cut result is kept.
type resultLink struct {
	uri      string // dynamic-mcp://results/<id>; "" when it could not be kept
	pages    int
	pageSize int    // the most bytes of the result a page holds
	why      string // why it could not be kept
	tool     string // the tool's name as the client called it
	cap      int    // the client's max_result
}

// resultEnvelope is what the JSON-RPC answer adds around a result, beyond
// the id: a cut answer fits max_result with it.
const resultEnvelope = len(`{"jsonrpc":"2.0","id":,"result":}`) + 8

// minTextKeep is the least a cut text block keeps of its text: below it,
// other blocks are left out first.
const minTextKeep = 200

// fitResult is result cut to at most limit bytes, as the comment above
// says, with link naming where the whole is. A result that is no object,
// or has nothing the cut can shrink enough, comes back as small as the
// cut makes it, never over limit: in the worst case the note alone.
func fitResult(result []byte, limit int, link resultLink) []byte {
	members, err := topMembers(result)
	if err != nil {
		return noteOnly(len(result), limit, link, nil)
	}
	var (
		kept    []jsonrpc.Member // members other than content, in order; content's place marked by a nil Value
		blocks  []*block
		dropped []string // what the note says was left out
		other   int
	)
	for _, m := range members {
		switch m.Key {
		case "content":
			var raws []json.RawMessage
			if json.Unmarshal(m.Value, &raws) == nil {
				for _, r := range raws {
					blocks = append(blocks, newBlock(r))
				}
			}
			kept = append(kept, jsonrpc.Member{Key: "content"})
		case "structuredContent":
			if len(m.Value) > limit/4 {
				dropped = append(dropped, fmt.Sprintf("structuredContent (%s bytes; see the text, or the whole result)", commas(len(m.Value))))
				continue
			}
			kept = append(kept, m)
		default:
			other += len(m.Key) + len(m.Value) + 4
			kept = append(kept, m)
		}
	}
	if !slices.ContainsFunc(kept, func(m jsonrpc.Member) bool { return m.Key == "content" }) {
		kept = append(kept, jsonrpc.Member{Key: "content"})
	}
	if other > limit/4 { // members of megabytes beside content: keep what a client branches on
		kept = slices.DeleteFunc(kept, func(m jsonrpc.Member) bool {
			drop := m.Key != "content" && m.Key != "isError" && m.Key != "structuredContent" && (m.Key != "_meta" || len(m.Value) > limit/8)
			if drop {
				key := m.Key
				if len(key) > 64 {
					key = strings.ToValidUTF8(key[:64], "") + "…"
				}
				dropped = append(dropped, fmt.Sprintf("%s (%s bytes)", key, commas(len(m.Value))))
			}
			return drop
		})
	}
	// The frame: every member but the blocks, with the note (sized for a
	// cut to limit, the most it can say) and the link.
	note := func(cutTo int) []json.RawMessage {
		n := []json.RawMessage{textBlock(summary(len(result), cutTo, limit, link, dropped))}
		if l := linkBlock(len(result), link); l != nil {
			n = append(n, l)
		}
		return n
	}
	frame := len(assemble(kept, nil, note(limit)))
	budget := limit - frame
	if budget < 0 {
		return noteOnly(len(result), limit, link, dropped)
	}
	fitBlocks(blocks, budget, link.uri)
	raws := make([]json.RawMessage, 0, len(blocks))
	for _, b := range blocks {
		if b.raw != nil {
			raws = append(raws, b.raw)
		}
	}
	out := assemble(kept, raws, note(limit))
	for range 3 { // the note says the size it makes, which its digits change
		next := assemble(kept, raws, note(len(out)))
		same := len(next) == len(out)
		out = next
		if same {
			break
		}
	}
	if len(out) > limit { // cannot happen: each step is measured
		return noteOnly(len(result), limit, link, dropped)
	}
	return out
}

// block is one content block on its way into a cut answer.
type block struct {
	raw  json.RawMessage // nil once left out
	kind string          // its type
	text string          // a text block's text
	cut  bool
}

func newBlock(raw json.RawMessage) *block {
	b := &block{raw: raw}
	var head struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &head) == nil {
		b.kind, b.text = head.Type, head.Text
	}
	return b
}

// shrinkable reports whether the block can be made smaller: every kind
// but a resource link.
func (b *block) shrinkable() bool { return b.raw != nil && b.kind != "resource_link" }

// fitBlocks makes blocks fit budget bytes (with a comma between two):
// first blocks that are no text and larger than half the budget become
// notes; then texts are cut, each to at most a level that fits them all;
// when that level would be under minTextKeep, other blocks larger than a
// note become notes, largest first, and texts are cut again; last, blocks
// from the middle are left out whole until the rest fits. Each step is a
// pass or a sort over the blocks: an upstream's answer of a million tiny
// blocks costs no more than its size.
func fitBlocks(blocks []*block, budget int, uri string) {
	size := func() int {
		n := 0
		for _, b := range blocks {
			if b.raw != nil {
				n += len(b.raw) + 1
			}
		}
		return n
	}
	if size() <= budget {
		return
	}
	for _, b := range blocks {
		if b.shrinkable() && b.kind != "text" && len(b.raw) > budget/2 {
			b.replace(uri)
		}
	}
	cutTexts := func() bool {
		for range 3 { // a text whose escapes outgrew its share is fitted again
			if size() <= budget {
				return true
			}
			level, ok := waterLevel(blocks, budget)
			if !ok || level < minTextKeep {
				return false
			}
			for _, b := range blocks {
				if b.raw != nil && b.kind == "text" && !b.cut && len(b.raw) > level {
					b.cutTo(level, uri)
				}
			}
		}
		return size() <= budget
	}
	if cutTexts() {
		return
	}
	var others []*block
	for _, b := range blocks {
		if b.shrinkable() && b.kind != "text" && len(b.raw) > minNoteGain {
			others = append(others, b)
		}
	}
	slices.SortStableFunc(others, func(a, b *block) int { return len(b.raw) - len(a.raw) })
	over := size() - budget
	for _, b := range others {
		if over <= 0 {
			break
		}
		was := len(b.raw)
		b.replace(uri)
		over -= was - len(b.raw)
	}
	if cutTexts() {
		return
	}
	leaveOutMiddle(blocks, budget)
}

// minNoteGain is the size past which a block that is no text is worth
// replacing by a note (which takes about 200 bytes).
const minNoteGain = 400

// waterLevel is the largest size L such that the blocks, each text block
// over L counted as L, fit budget; ok is false when even L = 0 does not
// (the other blocks alone are too large).
func waterLevel(blocks []*block, budget int) (int, bool) {
	fixed := 0
	var texts []int
	for _, b := range blocks {
		switch {
		case b.raw == nil:
		case b.kind == "text" && !b.cut:
			texts = append(texts, len(b.raw))
			fixed++ // its comma
		default:
			fixed += len(b.raw) + 1
		}
	}
	room := budget - fixed
	if room < 0 || len(texts) == 0 {
		return 0, false
	}
	slices.Sort(texts)
	for i, s := range texts {
		rest := len(texts) - i // blocks of size >= s left
		if s*rest > room {
			return room / rest, true
		}
		room -= s
	}
	return room, true // all fit: cannot happen when called over budget
}

// leaveOutMiddle leaves out whole blocks from the middle of the content
// until the rest, with a note in their place, fits budget.
func leaveOutMiddle(blocks []*block, budget int) {
	var live []*block
	for _, b := range blocks {
		if b.raw != nil {
			live = append(live, b)
		}
	}
	noteRoom := 200
	used := noteRoom
	keep := map[*block]bool{}
	for i, j, head := 0, len(live)-1, true; i <= j; head = !head { // from the head and the tail in turn
		b := live[j]
		if head {
			b = live[i]
		}
		if used+len(b.raw)+1 > budget {
			break
		}
		used += len(b.raw) + 1
		keep[b] = true
		if head {
			i++
		} else {
			j--
		}
	}
	var first *block
	n, bytes := 0, 0
	for _, b := range live {
		if !keep[b] {
			n++
			bytes += len(b.raw)
			if first == nil {
				first = b
			}
			b.raw = nil
		}
	}
	if first != nil {
		first.raw = textBlock(fmt.Sprintf("[dynamic-mcp: %s content blocks (%s bytes) left out here]", commas(n), commas(bytes)))
		first.kind, first.cut = "text", true
	}
}

// replace makes the block a text note saying what it was.
func (b *block) replace(uri string) {
	what := b.kind
	if what == "" {
		what = "content block"
	}
	var m struct {
		MimeType string `json:"mimeType"`
		Resource struct {
			URI string `json:"uri"`
		} `json:"resource"`
	}
	_ = json.Unmarshal(b.raw, &m)
	detail := m.MimeType
	if m.Resource.URI != "" {
		detail = m.Resource.URI
	}
	if detail != "" {
		detail += ", "
	}
	where := ""
	if uri != "" {
		where = "; it is in the whole result at " + uri
	}
	b.raw = textBlock(fmt.Sprintf("[dynamic-mcp: %s (%s%s bytes) left out: too large for this client's max_result%s]", what, detail, commas(len(b.raw)), where))
	b.kind, b.cut = "text", true
}

// cutTo cuts a text block to at most size bytes: its text's head and
// tail, with a marker stating the sizes between them; other members of
// the block (annotations, _meta) are kept.
func (b *block) cutTo(size int, uri string) {
	b.cut = true
	old, err := jsonrpc.Marshal(b.text)
	if err != nil {
		return
	}
	frame := len(b.raw) - len(old) // the block without its text's quoted bytes
	if bytes.Count(b.raw, old) != 1 {
		frame = len(`{"type":"text","text":}`) // escaped otherwise: rebuilt below
	}
	where := "see the note at the end"
	if uri != "" {
		where = "the whole result is at " + uri
	}
	marker := func(left int) string {
		return fmt.Sprintf("\n[dynamic-mcp: %s of this text's %s bytes cut here; %s]\n", commas(left), commas(len(b.text)), where)
	}
	room := size - frame - 2 - (jsonStringLen(marker(len(b.text))) - 2)
	text := strings.TrimSpace(marker(len(b.text)))
	if room > 0 {
		head, tail := cleanHead(b.text, room*2/3), cleanTail(b.text, room-room*2/3)
		text = b.text[:head] + marker(len(b.text)-head-(len(b.text)-tail)) + b.text[tail:]
	}
	q, err := jsonrpc.Marshal(text)
	if err != nil {
		return
	}
	if raw, err := jsonrpc.SetField(b.raw, "text", q); err == nil && frame == len(b.raw)-len(old) {
		b.raw = raw
	} else {
		b.raw = textBlock(text)
	}
}

// cleanHead is where a head of s of at most room bytes, encoded as a JSON
// string's inside, ends: after a line break in its last quarter, else at
// a rune boundary.
func cleanHead(s string, room int) int {
	end, used := 0, 0
	for end < len(s) {
		r, size := utf8.DecodeRuneInString(s[end:])
		n := runeJSONLen(r, s[end:])
		if used+n > room {
			break
		}
		used, end = used+n, end+size
	}
	if nl := strings.LastIndexByte(s[:end], '\n'); nl >= 0 && nl+1 >= end-end/4 {
		return nl + 1
	}
	return end
}

// cleanTail is where a tail of s of at most room bytes (as cleanHead
// counts them) begins: after a line break in its first quarter, else at
// a rune boundary.
func cleanTail(s string, room int) int {
	start, used := len(s), 0
	for start > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:start])
		n := runeJSONLen(r, s[start-size:])
		if used+n > room {
			break
		}
		used += n
		start -= size
	}
	span := len(s) - start
	if nl := strings.IndexByte(s[start:], '\n'); nl >= 0 && nl < span/4 {
		return start + nl + 1
	}
	return start
}

// jsonStringLen is the length of s encoded as a JSON string by
// jsonrpc.Marshal, quotes included.
func jsonStringLen(s string) int {
	n := 2
	for i, r := range s {
		n += runeJSONLen(r, s[i:])
	}
	return n
}

// runeJSONLen is how many bytes jsonrpc.Marshal writes for the rune r
// that rest begins with (encoding/json's rules, HTML escaping off).
func runeJSONLen(r rune, rest string) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '\u2028' || r == '\u2029':
		return 6
	case r == utf8.RuneError:
		if _, size := utf8.DecodeRuneInString(rest); size == 1 {
			return 6 // an invalid byte: \ufffd
		}
	}
	return utf8.RuneLen(r)
}

// summary is the note that ends a cut answer.
func summary(size, cutTo, limit int, link resultLink, dropped []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[dynamic-mcp: this result of %s bytes was cut to %s to fit this client's max_result of %s bytes", commas(size), commas(cutTo), commas(max(link.cap, limit)))
	if len(dropped) > 4 {
		dropped = append(dropped[:3:3], commas(len(dropped)-3)+" more members")
	}
	if len(dropped) > 0 {
		fmt.Fprintf(&b, "; left out: %s", strings.Join(dropped, ", "))
	}
	if link.uri == "" {
		fmt.Fprintf(&b, ". The whole result could not be kept: %s.]", link.why)
		return b.String()
	}
	fmt.Fprintf(&b, ". The whole result (its JSON) is at %s in %d pages of at most %s bytes: read %s?page=1 to ?page=%d with resources/read. It is kept for %d minutes, for this session only.]",
		link.uri, link.pages, commas(link.pageSize), link.uri, link.pages, int(TTL.Minutes()))
	return b.String()
}

// linkBlock is the resource_link to the whole result, nil when there is none.
func linkBlock(size int, link resultLink) json.RawMessage {
	if link.uri == "" {
		return nil
	}
	b, _ := jsonrpc.Marshal(map[string]any{
		"type":        "resource_link",
		"uri":         link.uri,
		"name":        "result-" + link.uri[strings.LastIndexByte(link.uri, '/')+1:],
		"title":       "The whole result of " + link.tool,
		"description": fmt.Sprintf("The whole result of this call, as JSON, in %d pages (append ?page=N)", link.pages),
		"mimeType":    "application/json",
		"size":        size,
	})
	return b
}

func textBlock(text string) json.RawMessage {
	b, _ := jsonrpc.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", text})
	return b
}

// noteOnly is the answer when nothing of the result fits beside the note.
func noteOnly(size, limit int, link resultLink, dropped []string) []byte {
	for _, try := range []struct {
		link    resultLink
		dropped []string
	}{{link, dropped}, {link, nil}, {resultLink{why: "its note is too long for the cap"}, nil}} {
		blocks := []json.RawMessage{textBlock(summary(size, limit, limit, try.link, try.dropped))}
		if lb := linkBlock(size, try.link); lb != nil {
			blocks = append(blocks, lb)
		}
		if out := assemble([]jsonrpc.Member{{Key: "content"}}, nil, blocks); len(out) <= limit {
			return out
		}
	}
	return []byte(`{"content":[]}`)
}

// assemble writes the members in order, content (the member with no
// Value) as blocks followed by tail.
func assemble(members []jsonrpc.Member, blocks, tail []json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := jsonrpc.Marshal(m.Key)
		b.Write(k)
		b.WriteByte(':')
		if m.Value != nil {
			b.Write(m.Value)
			continue
		}
		b.WriteByte('[')
		for j, r := range append(slices.Clip(blocks), tail...) {
			if j > 0 {
				b.WriteByte(',')
			}
			b.Write(r)
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return b.Bytes()
}

// topMembers are the members of the JSON object b, in order, values raw.
func topMembers(b []byte) ([]jsonrpc.Member, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var out []jsonrpc.Member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, jsonrpc.Member{Key: key, Value: v})
	}
	return out, nil
}

// commas writes n with thousands separators: 312,448.
func commas(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
