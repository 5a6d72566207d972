package search

import "testing"

// The examples of Porter's paper, and words of tool descriptions.
func TestStem(t *testing.T) {
	for _, tc := range []struct{ word, want string }{
		// Step 1a/1b: plurals, -ed, -ing.
		{"caresses", "caress"}, {"ponies", "poni"}, {"ties", "ti"}, {"caress", "caress"}, {"cats", "cat"},
		{"feed", "feed"}, {"agreed", "agre"}, {"plastered", "plaster"}, {"bled", "bled"}, {"motoring", "motor"},
		{"sing", "sing"}, {"conflated", "conflat"}, {"troubled", "troubl"}, {"sized", "size"}, {"hopping", "hop"},
		{"tanned", "tan"}, {"falling", "fall"}, {"hissing", "hiss"}, {"fizzed", "fizz"}, {"failing", "fail"},
		{"filing", "file"},
		// Step 1c.
		{"happy", "happi"}, {"sky", "sky"},
		// Step 2.
		{"relational", "relat"}, {"conditional", "condit"}, {"rational", "ration"}, {"valenci", "valenc"},
		{"hesitanci", "hesit"}, {"digitizer", "digit"}, {"conformabli", "conform"}, {"radicalli", "radic"},
		{"differentli", "differ"}, {"vileli", "vile"}, {"analogousli", "analog"}, {"vietnamization", "vietnam"},
		{"predication", "predic"}, {"operator", "oper"}, {"feudalism", "feudal"}, {"decisiveness", "decis"},
		{"hopefulness", "hope"}, {"callousness", "callous"}, {"formaliti", "formal"}, {"sensitiviti", "sensit"},
		{"sensibiliti", "sensibl"},
		// Step 3.
		{"triplicate", "triplic"}, {"formative", "form"}, {"formalize", "formal"}, {"electriciti", "electr"},
		{"electrical", "electr"}, {"hopeful", "hope"}, {"goodness", "good"},
		// Step 4.
		{"revival", "reviv"}, {"allowance", "allow"}, {"inference", "infer"}, {"airliner", "airlin"},
		{"gyroscopic", "gyroscop"}, {"adjustable", "adjust"}, {"defensible", "defens"}, {"irritant", "irrit"},
		{"replacement", "replac"}, {"adjustment", "adjust"}, {"dependent", "depend"}, {"adoption", "adopt"},
		{"homologou", "homolog"}, {"communism", "commun"}, {"activate", "activ"}, {"angulariti", "angular"},
		{"homologous", "homolog"}, {"effective", "effect"}, {"bowdlerize", "bowdler"},
		// Step 5.
		{"probate", "probat"}, {"rate", "rate"}, {"cease", "ceas"}, {"controll", "control"}, {"roll", "roll"},
		{"generalizations", "gener"}, {"oscillators", "oscil"},
		// Words of tools: the forms a query and a description use meet.
		{"files", "file"}, {"reading", "read"}, {"reads", "read"}, {"directories", "directori"},
		{"directory", "directori"}, {"messages", "messag"}, {"message", "messag"}, {"echoes", "echo"},
		{"echo", "echo"}, {"screenshots", "screenshot"}, {"repositories", "repositori"}, {"repository", "repositori"},
		// Kept whole, with their plurals: their stems would be another
		// word's (keepWhole).
		{"customer", "customer"}, {"customers", "customer"}, {"custom", "custom"}, {"customize", "custom"},
		{"container", "container"}, {"containers", "container"}, {"contains", "contain"},
		{"provider", "provider"}, {"provides", "provid"}, {"news", "news"}, {"new", "new"},
		{"generate", "gener"}, {"generation", "gener"},
		{"organizations", "organization"}, {"organize", "organ"}, {"community", "community"},
		// Left alone: short words, and anything that is not a-z.
		{"go", "go"}, {"is", "is"}, {"v2", "v2"}, {"über", "über"}, {"", ""},
	} {
		if got := stem(tc.word); got != tc.want {
			t.Errorf("stem(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}

func FuzzStem(f *testing.F) {
	for _, s := range []string{"ies", "eed", "sses", "ing", "yyy", "ational", "e", "ll"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, word string) {
		s := stem(word) // must not panic
		if len(s) > len(word)+1 {
			t.Errorf("stem(%q) = %q grew", word, s)
		}
	})
}
