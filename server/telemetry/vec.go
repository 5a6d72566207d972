package telemetry

import (
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// value is a float64 that is added to atomically: a counter's or a
// gauge's.
type value struct{ bits atomic.Uint64 }

func (v *value) Add(d float64) {
	for {
		old := v.bits.Load()
		if v.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

func (v *value) Inc()         { v.Add(1) }
func (v *value) Dec()         { v.Add(-1) }
func (v *value) get() float64 { return math.Float64frombits(v.bits.Load()) }

// histogram counts observations in buckets of upper bounds.
type histogram struct {
	bounds []float64
	mu     sync.Mutex
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	count  uint64
}

// Observe counts v in the first bucket whose bound is at least v.
func (h *histogram) Observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v)
	h.mu.Lock()
	h.counts[i]++
	h.count++
	h.sum += v
	h.mu.Unlock()
}

// snapshot is the histogram as a sample: cumulative counts.
func (h *histogram) snapshot() sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := sample{bounds: h.bounds, counts: make([]uint64, len(h.bounds)), count: h.count, value: h.sum}
	var n uint64
	for i := range h.bounds {
		n += h.counts[i]
		s.counts[i] = n
	}
	return s
}

// vec is a metric family of series by label values, each made at its
// first use and kept.
type vec[T any] struct {
	name, help string
	labels     []string
	make       func() *T
	mu         sync.RWMutex
	series     map[string]*series[T]
}

type series[T any] struct {
	values []string
	m      *T
}

func newVec[T any](name, help string, labels []string, make func() *T) *vec[T] {
	return &vec[T]{name: name, help: help, labels: labels, make: make, series: map[string]*series[T]{}}
}

// with returns the series of the label values (as many as the labels),
// made at its first use. It does not allocate once the series exists.
func (v *vec[T]) with(values ...string) *T {
	var buf [256]byte
	key := buf[:0]
	for _, s := range values {
		key = append(append(key, s...), 0xff)
	}
	v.mu.RLock()
	s := v.series[string(key)]
	v.mu.RUnlock()
	if s != nil {
		return s.m
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if s := v.series[string(key)]; s != nil {
		return s.m
	}
	s = &series[T]{values: slices.Clone(values), m: v.make()}
	v.series[string(key)] = s
	return s.m
}

// each calls fn with the label pairs and metric of every series.
func (v *vec[T]) each(fn func(labels []labelPair, m *T)) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	for _, s := range v.series {
		fn(pairs(v.labels, s.values), s.m)
	}
}

// counterVec, gaugeVec and histogramVec gather their series.
type counterVec struct{ *vec[value] }

func newCounterVec(name, help string, labels ...string) counterVec {
	return counterVec{newVec(name, help, labels, func() *value { return new(value) })}
}

func (v counterVec) gather(g *gatherer) {
	v.each(func(l []labelPair, m *value) {
		g.add(v.name, v.help, counterType, sample{labels: l, value: m.get()})
	})
}

type histogramVec struct{ *vec[histogram] }

func newHistogramVec(name, help string, bounds []float64, labels ...string) histogramVec {
	return histogramVec{newVec(name, help, labels, func() *histogram {
		return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
	})}
}

func (v histogramVec) gather(g *gatherer) {
	v.each(func(l []labelPair, m *histogram) {
		s := m.snapshot()
		s.labels = l
		g.add(v.name, v.help, histogramType, s)
	})
}
