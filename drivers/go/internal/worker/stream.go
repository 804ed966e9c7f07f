package worker

import (
	"math"

	"github.com/kvbench/kvbench/drivers/go/internal/plan"
)

// stream derives operation k of a step (plan-format.md "Operation streams"). Ops must be asked
// for in increasing k: a thread walks every op to count the inserts before its own, so
// `insert` records and `latest` are the same on every thread and in every runtime.
type stream struct {
	st      *Step
	next    uint64  // ops before next have been counted
	inserts uint64  // inserts among ops 0..next
	zitems  uint64  // items zetan is summed over (latest)
	zetan   float64 // latest: grows with the newest record
}

func newStream(st *Step) *stream {
	return &stream{st: st, zitems: st.Dist.Count, zetan: st.Dist.Zetan}
}

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
	x := plan.Rnd(s.st.RecSeed, k)
	switch d.Name {
	case "sequential":
		return (d.Start + k) % d.N
	case "shuffle":
		return plan.Perm(d.N, plan.Rnd(s.st.PermSeed, k/d.N), k%d.N)
	case "uniform":
		return plan.Below(x, d.N)
	case "hot":
		return d.Record
	case "zipfian":
		z := plan.Zipf(plan.Unit(x), d.Items, d.Zetan, d.Eta, d.Theta, d.Alpha)
		return uint64(plan.YcsbHash(z)) % d.N
	}
	last := s.st.Last + s.inserts
	for ; s.zitems < last; s.zitems++ {
		s.zetan += 1 / math.Pow(float64(s.zitems+1), d.Theta)
	}
	return last - plan.Zipf(plan.Unit(x), last, s.zetan, d.Eta, d.Theta, d.Alpha)
}

// scanLen is the number of records scan op k visits (MaxInt: to the end).
func (s *stream) scanLen(k uint64) int {
	if s.st.Scan.Max == 0 {
		return math.MaxInt
	}
	lo := s.st.Scan.Min
	return int(lo + plan.Below(plan.Rnd(s.st.LenSeed, k), s.st.Scan.Max-lo+1))
}
