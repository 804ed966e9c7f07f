package worker

import (
	"math"
	"slices"

	"github.com/kvbench/kvbench/drivers/go/internal/plan"
)

// stream derives operation k of a step (plan-format.md "Operation streams"). Ops must be asked
// for in increasing k: a thread walks every op to count the inserts before its own, so
// `insert` records and `latest` are the same on every thread and in every runtime.
type stream struct {
	st      *Step
	dist    dist    // st.Dist.Name, decided once (not a string compared per op)
	next    uint64  // ops before next have been counted
	inserts uint64  // inserts among ops 0..next
	zitems  uint64  // items zetan is summed over (latest)
	zetan   float64 // latest: grows with the newest record
	eta     float64 // latest: recomputed as zetan grows
	oneHalf float64 // 1 + 0.5^theta
}

func newStream(st *Step) *stream {
	s := &stream{st: st, dist: dist(slices.Index(distNames, st.Dist.Name)), zitems: st.Dist.Count, zetan: st.Dist.Zetan, eta: st.Dist.Eta}
	if st.Dist.Name == "zipfian" || st.Dist.Name == "latest" {
		s.oneHalf = 1 + plan.Pow(0.5, st.Dist.Theta)
	}
	return s
}

// dist is a distribution's place in distNames.
type dist int

const (
	distSequential dist = iota
	distShuffle
	distLoadOrder
	distUniform
	distHot
	distZipfian
	distLatest
)

// kind of op k.
func (s *stream) kind(k uint64) string {
	if s.st.Kind != "mixed" {
		return s.st.Kind
	}
	x := plan.Rnd(s.st.KindSeed, k)
	for i, t := range s.st.Thresholds {
		if x < t {
			return s.st.Kinds[i]
		}
	}
	return s.st.Kinds[len(s.st.Kinds)-1]
}

// op returns the kind and record of op k (a sorted position for scans).
func (s *stream) op(k uint64) (string, uint64) {
	if s.st.Kind == "mixed" {
		for ; s.next < k; s.next++ {
			if s.kind(s.next) == "insert" {
				s.inserts++
			}
		}
	} else if s.st.Kind == "insert" {
		s.inserts = k
	}
	kind := s.kind(k)
	if kind == "insert" {
		return kind, s.st.InsertBase + s.inserts
	}
	return kind, s.record(k)
}

func (s *stream) record(k uint64) uint64 {
	d := &s.st.Dist
	switch s.dist {
	case distUniform:
		return plan.Below(plan.Rnd(s.st.RecSeed, k), d.N)
	case distSequential:
		return (d.Start + k) % d.N
	case distShuffle:
		return plan.Perm(d.N, plan.Rnd(s.st.PermSeed, k/d.N), k%d.N)
	case distLoadOrder: // pass 0 of shuffle, every pass: reads replay the load's order
		return plan.Perm(d.N, plan.Rnd(s.st.PermSeed, 0), k%d.N)
	case distHot:
		return d.Record
	case distZipfian:
		return s.zipfian(k)
	}
	return s.latest(plan.Rnd(s.st.RecSeed, k), s.st.Last+s.inserts)
}

// zipfian draws as YCSB's nextKeynum does: again while the record is not written yet.
func (s *stream) zipfian(k uint64) uint64 {
	d := &s.st.Dist
	x, last := plan.Rnd(s.st.RecSeed, k), s.st.Last+s.inserts
	for i := uint64(0); ; i++ {
		z := plan.Zipf(plan.Unit(x), d.Items, d.Zetan, d.Eta, s.oneHalf, d.Alpha)
		if r := uint64(plan.YcsbHash(z)) % d.N; r <= last {
			return r
		}
		x = plan.Rnd(plan.Rnd(s.st.RecSeed, k), i)
	}
}

// latest is YCSB's SkewedLatestGenerator: zeta grows term by term with the newest record, and
// eta follows it.
func (s *stream) latest(x, last uint64) uint64 {
	d := &s.st.Dist
	if last > s.zitems {
		for ; s.zitems < last; s.zitems++ {
			s.zetan += 1 / plan.Pow(float64(s.zitems+1), d.Theta)
		}
		s.eta = plan.ZipfEta(d.Count, d.Theta, s.zetan)
	}
	return last - plan.Zipf(plan.Unit(x), last, s.zetan, s.eta, s.oneHalf, d.Alpha)
}

// unitSize is the number of operations of one timed unit.
func unitSize(st *Step) uint64 {
	switch st.Kind {
	case "load", "update", "insert", "delete":
		return st.Batch
	case "multi-get":
		return st.KeysPerRequest
	}
	return 1
}

// scanLen is the number of records scan op k visits (MaxInt: to the end).
func (s *stream) scanLen(k uint64) int {
	if s.st.Scan.Max == 0 {
		return math.MaxInt
	}
	lo := s.st.Scan.Min
	return int(lo + plan.Below(plan.Rnd(s.st.LenSeed, k), s.st.Scan.Max-lo+1))
}
