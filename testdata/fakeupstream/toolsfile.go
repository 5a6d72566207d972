package fakeupstream

import (
	"encoding/json"
	"os"
	"sync"
)

var toolsFile = flags.String("tools-file", "", "also offer the tools of this tools/list dump ({\"tools\": [...]}, as testdata/search holds), each answering \"called NAME\"")

// fileTools are -tools-file's tools, each as the dump has it; read once.
var fileTools = sync.OnceValue(func() []any {
	if *toolsFile == "" {
		return nil
	}
	b, err := os.ReadFile(*toolsFile)
	if err != nil {
		panic(err)
	}
	var dump struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(b, &dump); err != nil {
		panic(err)
	}
	out := make([]any, len(dump.Tools))
	for i, t := range dump.Tools {
		out[i] = t
	}
	return out
})

// isFileTool reports whether name is one of -tools-file's tools.
func isFileTool(name string) bool {
	for _, t := range fileTools() {
		var def struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(t.(json.RawMessage), &def) == nil && def.Name == name {
			return true
		}
	}
	return false
}
