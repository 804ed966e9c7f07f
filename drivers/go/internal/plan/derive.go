// Package plan derives a run's data and operation streams from seeds (docs/plan-format.md,
// format 2) and reads the plan file that holds what cannot be derived.
package plan

import (
	"encoding/binary"
	"math/bits"
	"strconv"
)

// G is the SplitMix64 increment.
const G = 0x9E3779B97F4A7C15

// Mix64 is SplitMix64's finaliser.
func Mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// Rnd is the i-th output of a SplitMix64 sequence started at s.
func Rnd(s, i uint64) uint64 { return Mix64(s + (i+1)*G) }

// Below maps x to [0, n) by the high half of the 128-bit product.
func Below(x, n uint64) uint64 {
	hi, _ := bits.Mul64(x, n)
	return hi
}

// Unit maps x to a double in [0, 1).
func Unit(x uint64) float64 { return float64(x>>11) * (1.0 / (1 << 53)) }

// YcsbHash is FNV-1a 64 over the 8 little-endian bytes of r, made non-negative as Java's
// Math.abs does (MinInt64 stays negative).
func YcsbHash(r uint64) int64 {
	h := uint64(0xCBF29CE484222325)
	for i := 0; i < 8; i++ {
		h = (h ^ (r >> (8 * i) & 0xFF)) * 0x100000001B3
	}
	if s := int64(h); s < 0 {
		return -s
	}
	return int64(h)
}

// Perm is the i-th element (i < n) of a keyed permutation of 0..n: a 4-round Feistel network
// on an even number of bits, cycle-walking until the result is below n.
func Perm(n, key, i uint64) uint64 {
	if n <= 1 {
		return 0
	}
	b := max(2, 64-bits.LeadingZeros64(n-1))
	b += b & 1
	half := uint(b / 2)
	mask := uint64(1)<<half - 1
	var k [4]uint64
	for j := range k {
		k[j] = Rnd(key, uint64(j))
	}
	for x := i; ; {
		l, r := x>>half, x&mask
		for _, kj := range k {
			l, r = r, l^(Mix64(r^kj)&mask)
		}
		if x = l<<half | r; x < n {
			return x
		}
	}
}

// Zipf is YCSB's ZipfianGenerator.nextLong for a uniform u; oneHalf is its constant
// `1 + 0.5^theta`, computed once by the caller.
func Zipf(u float64, items uint64, zetan, eta, oneHalf, alpha float64) uint64 {
	uz := u * zetan
	if uz < 1.0 {
		return 0
	}
	if uz < oneHalf {
		return 1
	}
	// float64() rounds the product, so no compiler fuses it into a multiply-add.
	return uint64(float64(items) * Pow(float64(eta*u)-eta+1, alpha))
}

// ZipfEta is YCSB's eta for a zipfian over items with zeta(items) = zetan.
func ZipfEta(items uint64, theta, zetan float64) float64 {
	zeta2 := 0 + 1/Pow(1, theta) + 1/Pow(2, theta)
	return (1 - Pow(2/float64(items), 1-theta)) / (1 - zeta2/zetan)
}

// Printable is the alphabet of printable values: no `"` and no `\`.
const Printable = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'()*+,-./:;<=>?@[]^_`{|}~ "

// PoolSize is the number of pool positions a value may start at.
const PoolSize = 1 << 20

// Pool is the printable pool of pool_seed for values up to max bytes.
func Pool(seed, max uint64) []byte {
	p := make([]byte, PoolSize+max)
	for j := range p {
		x := Rnd(seed, uint64(j)>>3) >> (8 * (j & 7)) & 0xFF
		p[j] = Printable[x%93]
	}
	return p
}

// Dataset derives keys and values (plan-format.md "Records"); a stored dataset reads them
// from its plan file.
type Dataset struct {
	Generator, KeyKind                 string
	Width                              int
	Min, Max                           uint64
	Random                             bool
	Loaded, Total, PoolSeed, ValueSeed uint64
	File                               *File
	pool                               []byte
	stored, jsonDocs                   bool // the generator, decided in Init (not compared per value)
}

// Init builds the pool; call once before Key or Value.
func (d *Dataset) Init() {
	longest := d.Max
	if d.File != nil {
		longest = max(longest, d.File.maxValue)
	}
	d.pool = Pool(d.PoolSeed, longest)
	d.stored, d.jsonDocs = d.Generator == "stored", d.Generator == "json-docs"
}

// MaxLen is the longest value before a generator's framing (json-docs adds its own).
func (d *Dataset) MaxLen() int { return len(d.pool) - PoolSize }

// Canon is the record whose state and value stand for r (plan-format.md "State").
func (d *Dataset) Canon(r uint64) uint64 { return d.File.Canon(r) }

// Key appends key(r) to dst.
func (d *Dataset) Key(dst []byte, r uint64) []byte {
	switch d.KeyKind {
	case "u32be":
		return binary.BigEndian.AppendUint32(dst, uint32(r))
	case "u64be":
		return binary.BigEndian.AppendUint64(dst, r)
	case "ycsb":
		return strconv.AppendInt(append(dst, "user"...), YcsbHash(r), 10)
	case "stored":
		return append(dst, d.File.Key(r)...)
	}
	var digits [20]byte
	s := strconv.AppendUint(digits[:0], r, 10)
	for i := len(s); i < d.Width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// Value returns value(r, v): a slice of the pool or the plan file, or dst refilled.
func (d *Dataset) Value(dst []byte, r, v uint64) []byte {
	h := Mix64(Rnd(d.ValueSeed, r) ^ v*G)
	min, max := d.Min, d.Max
	switch {
	case d.stored && v == 0:
		return d.File.Value(r)
	case d.stored:
		min = uint64(len(d.File.Value(r)))
		max = min
	case d.Random:
		n := min + Below(h, max-min+1)
		dst = dst[:0]
		for i := uint64(0); uint64(len(dst)) < n; i++ {
			dst = binary.LittleEndian.AppendUint64(dst, Rnd(h, i))
		}
		return dst[:n]
	}
	n := min + Below(h, max-min+1)
	o := Below(Mix64(h), PoolSize)
	text := d.pool[o : o+n]
	if !d.jsonDocs {
		return text
	}
	dst = append(append(dst[:0], `{"text": "`...), text...)
	dst = strconv.AppendUint(append(dst, `", "created_at": `...), 1700000000+r, 10)
	return append(dst, '}')
}
