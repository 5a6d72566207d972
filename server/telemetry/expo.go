package telemetry

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The metrics are written here in the Prometheus text format (0.0.4) or
// OpenMetrics 1.0.0, as the scraper's Accept asks, byte for byte as
// client_golang's promhttp handler (v1.25, with EnableOpenMetrics) wrote
// them before: the client, its client_model (protobuf) and common/expfmt
// were 1.3 MB of the binary with the protobuf runtime they pulled in, and
// their initialisers ran in every process. What is not kept: the protobuf
// exposition, which a scraper asks for only to read native histograms (the
// hub has none); it is answered in text, which every scraper reads.
// expo_golden_test.go and expo_ref_test.go hold the output to client_golang's.

// metricType is a family's TYPE.
type metricType uint8

const (
	counterType metricType = iota
	gaugeType
	histogramType
	summaryType
)

// family is one metric family as gathered for one scrape.
type family struct {
	name, help, unit string
	typ              metricType
	samples          []sample
}

// sample is one series of a family: its labels (sorted by name) and its
// value, or its buckets and quantiles.
type sample struct {
	labels []labelPair
	value  float64
	count  uint64    // histogram, summary
	bounds []float64 // histogram: upper bounds, +Inf left out; summary: quantiles
	counts []uint64  // histogram: cumulative counts per bound; summary: unused
	quants []float64 // summary: value per quantile in bounds
}

type labelPair struct{ name, value string }

// gatherer collects the families of one scrape.
type gatherer struct{ fams map[string]*family }

// add puts a series of the family name (declared with help, unit and typ
// at its first series) with the label names and values given.
func (g *gatherer) add(name, help string, typ metricType, s sample) {
	f := g.fams[name]
	if f == nil {
		f = &family{name: name, help: help, typ: typ}
		g.fams[name] = f
	}
	f.samples = append(f.samples, s)
}

// gauge and counter put a series with labels names[i]=values[i].
func (g *gatherer) gauge(name, help string, v float64, names []string, values ...string) {
	g.add(name, help, gaugeType, sample{labels: pairs(names, values), value: v})
}

func (g *gatherer) counter(name, help string, v float64, names []string, values ...string) {
	g.add(name, help, counterType, sample{labels: pairs(names, values), value: v})
}

// pairs zips label names and values, sorted by name.
func pairs(names, values []string) []labelPair {
	if len(names) == 0 {
		return nil
	}
	out := make([]labelPair, len(names))
	for i := range names {
		out[i] = labelPair{names[i], values[i]}
	}
	slices.SortFunc(out, func(a, b labelPair) int { return strings.Compare(a.name, b.name) })
	return out
}

// sorted returns the families by name, each family's series by their label
// values in turn, as client_golang's registry orders them; families with no
// series are left out.
func (g *gatherer) sorted() []*family {
	out := make([]*family, 0, len(g.fams))
	for _, f := range g.fams {
		if len(f.samples) == 0 {
			continue
		}
		slices.SortStableFunc(f.samples, func(a, b sample) int {
			for i := range min(len(a.labels), len(b.labels)) {
				if c := strings.Compare(a.labels[i].value, b.labels[i].value); c != 0 {
					return c
				}
			}
			return 0
		})
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b *family) int { return strings.Compare(a.name, b.name) })
	return out
}

// format is what a scrape is answered in.
type format struct {
	contentType string
	openMetrics bool
}

// offered are the formats a scrape is answered in, in expfmt's order of
// preference (its protobuf formats left out: see above).
var offered = []struct {
	typ, sub, version, contentType string
	openMetrics                    bool
}{
	{"application", "openmetrics-text", "1.0.0", "application/openmetrics-text; version=1.0.0; charset=utf-8", true},
	{"application", "openmetrics-text", "0.0.1", "application/openmetrics-text; version=0.0.1; charset=utf-8", true},
	{"text", "plain", "0.0.4", "text/plain; version=0.0.4; charset=utf-8", false},
}

// negotiate picks the format of the Accept header as expfmt.NegotiateAccept
// did with the OpenMetrics formats offered: the clauses by q, the first
// offered format a clause matches wins, a clause's type or subtype "*"
// matching any, its version (for text/plain 0.0.4 and OpenMetrics 0.0.1
// when it gives none) the format's; text otherwise. The escaping is the
// matching clause's, when it names one.
func negotiate(accept string) format {
	for _, ac := range parseAccept(accept) {
		version := ac.params["version"]
		switch {
		case version != "":
		case ac.typ == "application" && ac.sub == "openmetrics-text":
			version = "0.0.1"
		case ac.typ == "text" && ac.sub == "plain":
			version = "0.0.4"
		}
		escaping := "underscores"
		switch e := ac.params["escaping"]; e {
		case "allow-utf-8", "underscores", "dots", "values":
			escaping = e
		}
		for _, f := range offered {
			if (ac.typ == "*" || ac.typ == f.typ) && (ac.sub == "*" || ac.sub == f.sub) && version == f.version {
				return format{f.contentType + "; escaping=" + escaping, f.openMetrics}
			}
		}
	}
	return format{"text/plain; version=0.0.4; charset=utf-8; escaping=underscores", false}
}

type acceptClause struct {
	typ, sub string
	q        float64
	params   map[string]string
}

// parseAccept parses an Accept header as munnerz/goautoneg does (the
// parser expfmt used): clauses without a subtype are dropped but for "*",
// and so are those of more than one "/"; parameters without a value are
// left out; the clauses are ordered by q, a concrete type before "*".
func parseAccept(header string) []acceptClause {
	var out []acceptClause
	for part := range strings.SplitSeq(header, ",") {
		part = strings.Trim(part, " ")
		mt, rest, _ := strings.Cut(part, ";")
		a := acceptClause{q: 1}
		typ, sub, _ := strings.Cut(mt, "/")
		a.typ = strings.Trim(typ, " ")
		switch {
		case sub == "":
			if a.typ != "*" {
				continue
			}
			a.sub = "*"
		case strings.Contains(sub, "/"):
			continue
		default:
			a.sub = strings.Trim(sub, " ")
		}
		if rest != "" {
			a.params = map[string]string{}
			for p := range strings.SplitSeq(rest, ";") {
				k, rest, _ := strings.Cut(p, "=")
				v, more, _ := strings.Cut(rest, "=")
				if rest == "" || more != "" {
					continue // nothing after "=", or a second "=" with more after it
				}
				if k = strings.Trim(k, " "); k == "q" {
					q, _ := strconv.ParseFloat(v, 32)
					a.q = q
				} else {
					a.params[k] = strings.Trim(v, " ")
				}
			}
		}
		out = append(out, a)
	}
	sort.Sort(byQ(out))
	return out
}

// byQ is goautoneg's order (sort.Sort, so the same comparisons on the same
// few clauses give the same order).
type byQ []acceptClause

func (s byQ) Len() int      { return len(s) }
func (s byQ) Swap(i, j int) { s[i], s[j] = s[j], s[i] }
func (s byQ) Less(i, j int) bool {
	a, b := s[i], s[j]
	switch {
	case a.q > b.q:
		return true
	case a.typ != "*" && b.typ == "*":
		return true
	case a.sub != "*" && b.sub == "*":
		return true
	}
	return false
}

// gzipEncoding reports whether the Accept-Encoding header takes gzip over
// identity, as promhttp's negotiation (identity and gzip offered) did for
// a well-formed header. Where promhttp's parser stopped at a malformed
// element or took "GZIP" for another coding, this reads the rest and
// any case (codings are case-insensitive, RFC 9110 8.4.1).
func gzipEncoding(header string) bool {
	best, bestQ := "identity", -1.0
	var specs []acceptClause
	for part := range strings.SplitSeq(header, ",") {
		v, rest, _ := strings.Cut(part, ";")
		v = strings.ToLower(strings.TrimSpace(v))
		if v == "" {
			continue
		}
		q := 1.0
		if k, qs, ok := strings.Cut(rest, "="); ok && strings.TrimSpace(k) == "q" {
			if f, err := strconv.ParseFloat(strings.TrimSpace(qs), 64); err == nil {
				q = f
			} else {
				continue
			}
		}
		specs = append(specs, acceptClause{typ: v, q: q})
	}
	for _, offer := range []string{"identity", "gzip"} {
		for _, s := range specs {
			if s.q > bestQ && (s.typ == "*" || s.typ == offer) {
				best, bestQ = offer, s.q
			}
		}
	}
	return best == "gzip" && bestQ != 0
}

var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// exposition serves what gather collects at each scrape.
type exposition struct {
	gather func(*gatherer)
	// errors counts what promhttp_metric_handler_errors_total counted:
	// failed writes of the answer (gathering does not fail here).
	encodingErrors atomic.Uint64
}

const handlerErrorsHelp = "Total number of internal errors encountered by the promhttp metric handler."

func (e *exposition) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g := &gatherer{fams: map[string]*family{}}
	e.gather(g)
	g.counter("promhttp_metric_handler_errors_total", handlerErrorsHelp, float64(e.encodingErrors.Load()), []string{"cause"}, "encoding")
	g.counter("promhttp_metric_handler_errors_total", handlerErrorsHelp, 0, []string{"cause"}, "gathering")

	f := negotiate(r.Header.Get("Accept"))
	h := w.Header()
	h.Add("Vary", "Accept")
	h.Add("Vary", "Accept-Encoding")
	h.Set("Content-Type", f.contentType)
	var out io.Writer = w
	if gzipEncoding(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		zw := gzipWriters.Get().(*gzip.Writer)
		zw.Reset(w)
		defer func() { _ = zw.Close(); gzipWriters.Put(zw) }()
		out = zw
	}
	var only map[string]bool
	if names := r.URL.Query()["name[]"]; len(names) > 0 {
		only = map[string]bool{}
		for _, n := range names {
			only[n] = true
		}
	}
	bw := bufio.NewWriter(out)
	for _, fam := range g.sorted() {
		if only != nil && !only[fam.name] {
			continue
		}
		writeFamily(bw, fam, f.openMetrics)
	}
	if f.openMetrics {
		bw.WriteString("# EOF\n")
	}
	if bw.Flush() != nil {
		e.encodingErrors.Add(1)
	}
}

var (
	helpEscaper   = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	quotedEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// writeFamily writes f in the text format or in OpenMetrics, as expfmt's
// MetricFamilyToText and MetricFamilyToOpenMetrics did (no exemplars, no
// timestamps, no _created lines: the hub has none of them).
func writeFamily(w *bufio.Writer, f *family, om bool) {
	name, typ := f.name, ""
	switch f.typ {
	case counterType:
		typ = "counter"
		if om {
			if n, ok := strings.CutSuffix(name, "_total"); ok {
				name = n
			} else {
				typ = "unknown"
			}
		}
	case gaugeType:
		typ = "gauge"
	case histogramType:
		typ = "histogram"
	case summaryType:
		typ = "summary"
	}
	if f.help != "" {
		w.WriteString("# HELP " + name + " ")
		if om {
			quotedEscaper.WriteString(w, f.help)
		} else {
			helpEscaper.WriteString(w, f.help)
		}
		w.WriteByte('\n')
	}
	w.WriteString("# TYPE " + name + " " + typ + "\n")
	if om && f.unit != "" {
		w.WriteString("# UNIT " + name + " ")
		quotedEscaper.WriteString(w, f.unit)
		w.WriteByte('\n')
	}
	float := writeFloat
	if om {
		float = writeOMFloat
	}
	// count writes a count: a float in the text format, an integer in
	// OpenMetrics.
	count := func(n uint64) {
		if om {
			w.WriteString(strconv.FormatUint(n, 10))
		} else {
			writeFloat(w, float64(n))
		}
	}
	// sumAndCount writes the _sum and _count lines of a histogram or a
	// summary.
	sumAndCount := func(s sample) {
		writeName(w, f.name, "_sum", s.labels, "", 0, float)
		float(w, s.value)
		w.WriteByte('\n')
		writeName(w, f.name, "_count", s.labels, "", 0, float)
		count(s.count)
	}
	for _, s := range f.samples {
		switch f.typ {
		case counterType, gaugeType:
			writeName(w, f.name, "", s.labels, "", 0, float)
			float(w, s.value)
		case histogramType:
			for i, b := range s.bounds {
				writeName(w, f.name, "_bucket", s.labels, "le", b, float)
				count(s.counts[i])
				w.WriteByte('\n')
			}
			writeName(w, f.name, "_bucket", s.labels, "le", math.Inf(1), float)
			count(s.count)
			w.WriteByte('\n')
			sumAndCount(s)
		case summaryType:
			for i, q := range s.bounds {
				writeName(w, f.name, "", s.labels, "quantile", q, float)
				float(w, s.quants[i])
				w.WriteByte('\n')
			}
			sumAndCount(s)
		}
		w.WriteByte('\n')
	}
}

// writeName writes the series' name, suffix and labels, with the extra
// label (le, quantile) last when extra is set, and the space before the
// value.
func writeName(w *bufio.Writer, name, suffix string, labels []labelPair, extra string, extraValue float64, float func(*bufio.Writer, float64)) {
	w.WriteString(name)
	w.WriteString(suffix)
	sep := byte('{')
	for _, l := range labels {
		w.WriteByte(sep)
		w.WriteString(l.name + `="`)
		quotedEscaper.WriteString(w, l.value)
		w.WriteByte('"')
		sep = ','
	}
	if extra != "" {
		w.WriteByte(sep)
		w.WriteString(extra + `="`)
		float(w, extraValue)
		w.WriteByte('"')
		sep = ','
	}
	if sep == ',' {
		w.WriteByte('}')
	}
	w.WriteByte(' ')
}

// writeFloat is expfmt's: Go's shortest 'g' form, with "+Inf".
func writeFloat(w *bufio.Writer, f float64) {
	var b [32]byte
	w.Write(appendFloat(b[:0], f))
}

// writeOMFloat is OpenMetrics': the same with ".0" on a whole number.
func writeOMFloat(w *bufio.Writer, f float64) {
	var b [32]byte
	out := appendFloat(b[:0], f)
	if !math.IsNaN(f) && !math.IsInf(f, 0) && !bytes.ContainsAny(out, "e.") {
		out = append(out, ".0"...)
	}
	w.Write(out)
}

func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "+Inf"...)
	case f == 0:
		return append(b, '0') // -0 too, as expfmt wrote it
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
