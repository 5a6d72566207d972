package fakeupstream

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

var large = flags.Bool("large", false, "also offer the large tool, whose results (LargeResult) are as large as ms bytes")

// largeTools are the tools -large adds.
func largeTools() []any {
	if !*large {
		return nil
	}
	return []any{simpleTool("large", "Answer with a result of about ms bytes; text says which: text, structured, image, mixed, blocks, small")}
}

// largeCall answers a call of the large tool, reporting whether it was one.
func largeCall(req request, name, kind string, n int) bool {
	if !*large || name != toolName("large") {
		return false
	}
	sendRaw(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + LargeResult(kind, n) + `}`)
	return true
}

// LargeResult is the result the large tool answers with, byte for byte,
// for a kind and a size of about n bytes:
//   - text: one text block of numbered lines, with quotes, backslashes,
//     tabs and runes of 2, 3 and 4 bytes, and _meta;
//   - structured: a short text and structuredContent of n bytes;
//   - image: a short text, an image of n bytes of base64 and a resource link;
//   - mixed: a small text, a large text, a resource link, an image of n/4
//     and a last small text, with isError and _meta;
//   - blocks: n/100 text blocks of about 100 bytes each;
//   - small: a text of n bytes written as the others are.
func LargeResult(kind string, n int) string {
	text := func(s string) string { return `{"type":"text","text":` + quoteJSON(s) + `}` }
	link := `{"type":"resource_link","uri":"fake://large/res","name":"res","mimeType":"text/plain"}`
	image := func(n int) string {
		raw := make([]byte, n/4*3)
		for i := range raw {
			raw[i] = byte(i * 7)
		}
		return `{"type":"image","mimeType":"image/png","data":"` + base64.StdEncoding.EncodeToString(raw) + `"}`
	}
	switch kind {
	case "structured":
		var items []string
		for i := 0; len(items)*60 < n; i++ {
			items = append(items, fmt.Sprintf(`{"id":%d,"name":"item %05d","note":"naïve café 日本"}`, i, i))
		}
		return `{"content":[` + text("a list of items") + `],"structuredContent":{"items":[` + strings.Join(items, ",") + `]}}`
	case "image":
		return `{"content":[` + text("a picture") + `,` + image(n) + `,` + link + `]}`
	case "mixed":
		return `{"content":[` + text("first words") + `,` + text(largeText(n)) + `,` + link + `,` + image(n/4) + `,` + text("last words") + `],"isError":true,"_meta":{"example.com/k":"v"}}`
	case "blocks":
		var bs []string
		for i := 0; i < n/100; i++ {
			bs = append(bs, text(fmt.Sprintf("block %05d: %s", i, strings.Repeat("é", 40))))
		}
		return `{"content":[` + strings.Join(bs, ",") + `]}`
	}
	return `{"content":[` + text(largeText(n)) + `],"_meta":{"example.com/k":"v"}}`
}

// largeText is about n bytes of numbered lines.
func largeText(n int) string {
	var b strings.Builder
	for i := 1; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %06d: \"quoted\" back\\slash\ttab naïve 日本語 🙂 %s\n", i, strings.Repeat("lorem ipsum ", i%7))
	}
	return b.String()
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s) // the texts hold no <, > or &: as jsonrpc.Marshal would write them
	return string(b)
}
