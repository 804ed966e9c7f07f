// Package plan reads a kvbench plan file (docs/plan-format.md) through a read-only memory map.
// Nothing is copied or parsed up front: keys, values and operations are sliced out of the map
// when an operation needs them, as the Rust and Python readers do.
package plan

import (
	"encoding/binary"
	"fmt"
	"os"
	"syscall"
)

// Section kinds.
const (
	Data        = 1
	Index       = 2
	Sorted      = 3
	UpdateData  = 4
	UpdateIndex = 5
	Ops         = 6
	ScanExpect  = 7
	Spec        = 8
)

// Operation kinds.
const (
	Put    = 1
	Get    = 2
	Delete = 3
	Scan   = 4
)

// None marks "no value": the key must be absent.
const None = 0xFFFFFFFF

// FormatVersion is the plan format this reader understands.
const FormatVersion = 1

var magic = []byte("KVBPLAN\x00")

// Section is one entry of the section table.
type Section struct {
	Kind, Index           uint32
	Offset, Length, Count uint64
}

type sectionKey struct{ kind, index uint32 }

// Op is one operation: four u32.
type Op struct {
	Kind, Key, Value, Aux uint32
}

// Plan is a mapped plan file.
type Plan struct {
	data          []byte
	Version       uint32
	Seed          uint64
	SpecHash      uint64
	Records       uint64
	UniqueRecords uint64
	RawBytes      uint64
	UpdateValues  uint64
	Sections      []Section
	bykey         map[sectionKey]Section
	index         []byte
	sorted        []byte
	updIndex      []byte
}

func le32(b []byte, at uint64) uint32 { return binary.LittleEndian.Uint32(b[at : at+4]) }
func le64(b []byte, at uint64) uint64 { return binary.LittleEndian.Uint64(b[at : at+8]) }

// Open maps and checks a plan.
func Open(path string) (*Plan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %v", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("plan %s: %v", path, err)
	}
	size := st.Size()
	refuse := func(why string) error {
		return fmt.Errorf("plan %s: %s; delete it so kvbench rebuilds it", path, why)
	}
	if size < 4096 {
		return nil, refuse("not a kvbench plan (shorter than 4096 bytes)")
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("plan %s: mmap: %v", path, err)
	}
	p, err := parse(data, refuse)
	if err != nil {
		_ = syscall.Munmap(data)
		return nil, err
	}
	return p, nil
}

func parse(data []byte, refuse func(string) error) (*Plan, error) {
	if string(data[:8]) != string(magic) {
		return nil, refuse("not a kvbench plan (bad magic)")
	}
	p := &Plan{data: data, bykey: map[sectionKey]Section{}}
	p.Version = le32(data, 8)
	if p.Version != FormatVersion {
		return nil, refuse(fmt.Sprintf("format version %d, this reader knows %d", p.Version, FormatVersion))
	}
	count := le32(data, 12)
	if count > 126 {
		return nil, refuse(fmt.Sprintf("%d sections (at most 126)", count))
	}
	p.Seed = le64(data, 16)
	p.SpecHash = le64(data, 24)
	p.Records = le64(data, 32)
	p.UniqueRecords = le64(data, 40)
	p.RawBytes = le64(data, 48)
	p.UpdateValues = le64(data, 56)
	n := uint64(len(data))
	for i := uint64(0); i < uint64(count); i++ {
		at := 64 + 32*i
		s := Section{Kind: le32(data, at), Index: le32(data, at+4), Offset: le64(data, at+8), Length: le64(data, at+16), Count: le64(data, at+24)}
		if s.Offset > n || s.Length > n-s.Offset {
			return nil, refuse(fmt.Sprintf("section %d (kind %d) runs past the end of the file", i, s.Kind))
		}
		p.Sections = append(p.Sections, s)
		p.bykey[sectionKey{s.Kind, s.Index}] = s
	}
	for _, need := range []struct {
		kind uint32
		name string
	}{{Index, "INDEX"}, {Sorted, "SORTED"}, {UpdateIndex, "UPDATE_INDEX"}} {
		if _, ok := p.bykey[sectionKey{need.kind, 0}]; !ok {
			return nil, refuse("no " + need.name + " section")
		}
	}
	p.index = p.section(Index, 0)
	p.sorted = p.section(Sorted, 0)
	p.updIndex = p.section(UpdateIndex, 0)
	return p, nil
}

func (p *Plan) section(kind, index uint32) []byte {
	s := p.bykey[sectionKey{kind, index}]
	return p.data[s.Offset : s.Offset+s.Length]
}

// Close unmaps the plan; nothing sliced from it may be used afterwards.
func (p *Plan) Close() error {
	if p.data == nil {
		return nil
	}
	d := p.data
	p.data = nil
	return syscall.Munmap(d)
}

// Len is the file's length.
func (p *Plan) Len() int { return len(p.data) }

// Key is the key of record r.
func (p *Plan) Key(r uint32) []byte {
	at := 16 * uint64(r)
	off := le64(p.index, at)
	klen := uint64(le32(p.index, at+8))
	return p.data[off : off+klen]
}

// Value is value index j: a load value (j < records) or an update value.
func (p *Plan) Value(j uint32) []byte {
	if uint64(j) < p.Records {
		at := 16 * uint64(j)
		off := le64(p.index, at)
		klen := uint64(le32(p.index, at+8))
		vlen := uint64(le32(p.index, at+12))
		return p.data[off+klen : off+klen+vlen]
	}
	at := 16 * (uint64(j) - p.Records)
	off := le64(p.updIndex, at)
	l := uint64(le32(p.updIndex, at+12))
	return p.data[off : off+l]
}

// UpdateRecord is the record whose key update value u (0-based) is written under.
func (p *Plan) UpdateRecord(u uint64) uint32 { return le32(p.updIndex, 16*u+8) }

// Sorted is the record number at sorted position pos.
func (p *Plan) Sorted(pos uint64) uint32 { return le32(p.sorted, 4*pos) }

// OpList is one phase's operations.
type OpList struct{ b []byte }

// Len is the number of operations.
func (o OpList) Len() int { return len(o.b) / 16 }

// At is operation i.
func (o OpList) At(i int) Op {
	b := o.b[16*i : 16*i+16]
	return Op{binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:]), binary.LittleEndian.Uint32(b[12:])}
}

// Ops returns phase p's operations, false when the plan has no such phase.
func (p *Plan) Ops(phase int) (OpList, bool) {
	s, ok := p.bykey[sectionKey{Ops, uint32(phase)}]
	if !ok {
		return OpList{}, false
	}
	n := s.Count * 16
	if n > s.Length {
		n = s.Length
	}
	return OpList{p.data[s.Offset : s.Offset+n]}, true
}

// ScanExpect returns the SCAN_EXPECT array of a scan phase (nil when absent).
func (p *Plan) ScanExpect(phase int) ScanExpectList {
	s, ok := p.bykey[sectionKey{ScanExpect, uint32(phase)}]
	if !ok {
		return ScanExpectList{}
	}
	return ScanExpectList{p.data[s.Offset : s.Offset+s.Length], true}
}

// ScanExpectList is the expected value index per sorted position.
type ScanExpectList struct {
	b  []byte
	OK bool
}

// At is the value index expected at sorted position pos (None when deleted).
func (s ScanExpectList) At(pos uint64) uint32 { return le32(s.b, 4*pos) }

// Len is the number of positions.
func (s ScanExpectList) Len() int { return len(s.b) / 4 }

// SpecJSON is the SPEC section's text (empty when absent).
func (p *Plan) SpecJSON() []byte {
	if _, ok := p.bykey[sectionKey{Spec, 0}]; !ok {
		return nil
	}
	return p.section(Spec, 0)
}
