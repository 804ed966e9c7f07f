package plan

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"
)

// Sections of a plan file that a worker reads.
const (
	secData   = 1
	secIndex  = 2
	secSorted = 3
	secCanon  = 4
)

// File is a mapped plan file (plan-format.md "The plan file"): stored records, their
// canonical records and the key order.
type File struct {
	data                 []byte
	index, sorted, canon []byte
	maxValue, dataEnd    uint64
}

func le32(b []byte, at uint64) uint32 { return binary.LittleEndian.Uint32(b[at:]) }
func le64(b []byte, at uint64) uint64 { return binary.LittleEndian.Uint64(b[at:]) }

// Open maps a plan file and checks its header, checksum and sections.
func Open(path string) (*File, error) {
	data, err := mapFile(path)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %v", path, err)
	}
	f := &File{data: data}
	if err := f.parse(); err != nil {
		_ = unix.Munmap(data)
		return nil, fmt.Errorf("plan %s: %v", path, err)
	}
	return f, nil
}

func mapFile(path string) ([]byte, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() < 64 {
		return nil, fmt.Errorf("not a kvbench plan (%d bytes)", st.Size())
	}
	return unix.Mmap(int(fd.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
}

func (f *File) parse() error {
	d := f.data
	n := uint64(le32(d, 12))
	switch {
	case string(d[:8]) != "KVBPLAN\x00":
		return fmt.Errorf("not a kvbench plan (bad magic)")
	case le32(d, 8) != 2:
		return fmt.Errorf("format version %d, this worker reads 2", le32(d, 8))
	case n > 126 || 64+32*n > uint64(len(d)):
		return fmt.Errorf("section count %d: at most 126, inside the file", n)
	}
	sum := xxh3.New()
	_, _ = sum.Write(d[:56])
	_, _ = sum.Write(d[64 : 64+32*n])
	records, distinct := le64(d, 32), le64(d, 40)
	want := map[uint32]uint64{secIndex: records, secCanon: records, secSorted: distinct}
	for i := uint64(0); i < n; i++ {
		at := 64 + 32*i
		kind, off, length, count := le32(d, at), le64(d, at+8), le64(d, at+16), le64(d, at+24)
		if off%8 != 0 || off > uint64(len(d)) || length > uint64(len(d))-off {
			return fmt.Errorf("section %d (kind %d) is not aligned or runs past the end of the file", i, kind)
		}
		s := d[off : off+length]
		_, _ = sum.Write(s)
		per := map[uint32]uint64{secIndex: 16, secSorted: 4, secCanon: 4}[kind]
		if per != 0 && (length != per*count || count != want[kind]) {
			return fmt.Errorf("section %d (kind %d): %d bytes for %d entries, %d expected", i, kind, length, count, want[kind])
		}
		switch kind {
		case secData:
			f.dataEnd = off + length
		case secIndex:
			f.index = s
		case secSorted:
			f.sorted = s
		case secCanon:
			f.canon = s
		}
	}
	if sum.Sum64() != le64(d, 56) {
		return fmt.Errorf("checksum mismatch")
	}
	return f.checkIndex()
}

// checkIndex bounds every record's key and value inside the file, and finds the longest value.
func (f *File) checkIndex() error {
	for r := uint64(0); r < uint64(len(f.index))/16; r++ {
		off, kl, vl := le64(f.index, 16*r), uint64(le32(f.index, 16*r+8)), uint64(le32(f.index, 16*r+12))
		if off > f.dataEnd || kl+vl > f.dataEnd-off {
			return fmt.Errorf("record %d lies outside DATA", r)
		}
		f.maxValue = max(f.maxValue, vl)
	}
	return nil
}

// Key of stored record r.
func (f *File) Key(r uint64) []byte {
	off, kl := le64(f.index, 16*r), uint64(le32(f.index, 16*r+8))
	return f.data[off : off+kl]
}

// Value of stored record r (the key is followed by its value).
func (f *File) Value(r uint64) []byte {
	off, kl, vl := le64(f.index, 16*r), uint64(le32(f.index, 16*r+8)), uint64(le32(f.index, 16*r+12))
	return f.data[off+kl : off+kl+vl]
}

// Canon is the record whose value a read of r's key returns (r without a CANON section).
func (f *File) Canon(r uint64) uint64 {
	if f == nil || f.canon == nil {
		return r
	}
	return uint64(le32(f.canon, 4*r))
}

// Sorted is the record at sorted position p; Positions how many there are (0: no SORTED).
func (f *File) Sorted(p uint64) uint64 { return uint64(le32(f.sorted, 4*p)) }

// Positions is the number of distinct keys in key order (0 without a SORTED section).
func (f *File) Positions() uint64 {
	if f == nil {
		return 0
	}
	return uint64(len(f.sorted)) / 4
}

// Close unmaps the file.
func (f *File) Close() error { return unix.Munmap(f.data) }
