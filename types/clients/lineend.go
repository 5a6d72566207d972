package clients

import "bytes"

// A config.toml saved on Windows may have CRLF line endings and a UTF-8
// byte order mark, both of which Codex reads. What install and restore
// add to such a file has its line endings, and the mark stays first. A
// JSON client config with CRLF line endings keeps them likewise.

const utf8BOM = "\xef\xbb\xbf"

// cutBOM splits data into its byte order mark, if any, and the rest.
func cutBOM(data []byte) (bom, rest []byte) {
	if bytes.HasPrefix(data, []byte(utf8BOM)) {
		return data[:len(utf8BOM):len(utf8BOM)], data[len(utf8BOM):]
	}
	return nil, data
}

// lineEnd is the line ending of data: "\r\n" when its first line ends
// so, else "\n".
func lineEnd(data []byte) string {
	if i := bytes.IndexByte(data, '\n'); i > 0 && data[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// inLineEnd is text with each of its lines ended by eol.
func inLineEnd(text []byte, eol string) []byte {
	lf := bytes.ReplaceAll(text, []byte("\r\n"), []byte("\n"))
	if eol == "\n" {
		return lf
	}
	return bytes.ReplaceAll(lf, []byte("\n"), []byte(eol))
}

// lineBreak is the length of the line break data starts with: 2 for
// "\r\n", 1 for "\n", else 0.
func lineBreak(data []byte) int {
	switch {
	case bytes.HasPrefix(data, []byte("\r\n")):
		return 2
	case bytes.HasPrefix(data, []byte("\n")):
		return 1
	}
	return 0
}
