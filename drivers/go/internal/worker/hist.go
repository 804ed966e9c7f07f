package worker

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// MaxNs is the longest latency a histogram holds (1 hour); longer samples saturate.
const MaxNs = 3_600_000_000_000

// NewHistogram has the bounds of every kvbench histogram: 1 ns .. 1 h, 3 significant digits.
func NewHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(1, MaxNs, 3) }

// Record adds one sample in nanoseconds: below 1 counts as 1, above the range as the maximum.
func Record(h *hdrhistogram.Histogram, ns int64) {
	if ns < 1 {
		ns = 1
	} else if ns > MaxNs {
		ns = MaxNs
	}
	_ = h.RecordValue(ns)
}

// Encode is the HdrHistogram V2 compressed encoding, base64.
//
// hdrhistogram-go writes 1 as the header's normalizing index offset (a constant in that
// library; its counts are not shifted), and the Rust crate refuses any offset other than 0.
// So the encoding is unpacked, that field set to 0, and packed again: the counts are the
// library's own bytes.
func Encode(h *hdrhistogram.Histogram) string {
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return ""
	}
	fixed, err := zeroNormalizingOffset(string(b))
	if err != nil {
		return string(b)
	}
	return fixed
}

func zeroNormalizingOffset(enc string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(raw) < 8 {
		return "", fmt.Errorf("bad encoding")
	}
	n := binary.BigEndian.Uint32(raw[4:8])
	if int(n) > len(raw)-8 {
		return "", fmt.Errorf("bad length")
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw[8 : 8+n]))
	if err != nil {
		return "", err
	}
	inner, err := io.ReadAll(zr)
	if err != nil || len(inner) < 40 {
		return "", fmt.Errorf("bad payload")
	}
	binary.BigEndian.PutUint32(inner[8:12], 0)
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	_, _ = zw.Write(inner)
	if err := zw.Close(); err != nil {
		return "", err
	}
	out := make([]byte, 8, 8+z.Len())
	copy(out, raw[:4])
	binary.BigEndian.PutUint32(out[4:8], uint32(z.Len()))
	out = append(out, z.Bytes()...)
	return base64.StdEncoding.EncodeToString(out), nil
}

// Decode reads what Encode wrote (or any V2 compressed base64 histogram).
func Decode(s string) (*hdrhistogram.Histogram, error) { return hdrhistogram.Decode([]byte(s)) }

// Summarize computes the latency summary exactly as the Rust hdrhistogram crate 7.5 does (see
// docs/protocol.md), walking the histogram's buckets in order; nil for an empty histogram.
// hdrhistogram-go's own quantiles round differently, so they are not used.
func Summarize(h *hdrhistogram.Histogram) *Latency {
	total := h.TotalCount()
	if total == 0 {
		return nil
	}
	var bars []hdrhistogram.Bar
	for _, b := range h.Distribution() {
		if b.Count != 0 {
			bars = append(bars, b)
		}
	}
	quantile := func(q float64) uint64 {
		target := int64(math.Ceil(q * float64(total)))
		if target == 0 {
			target = 1
		}
		var acc int64
		for _, b := range bars {
			acc += b.Count
			if acc >= target {
				return uint64(b.To)
			}
		}
		return 0
	}
	median := func(b hdrhistogram.Bar) float64 { return float64(b.From + ((b.To - b.From + 1) >> 1)) }
	ftotal := float64(total)
	mean := 0.0
	for _, b := range bars {
		mean = mean + median(b)*float64(b.Count)/ftotal
	}
	dev := 0.0
	for _, b := range bars {
		d := median(b) - mean
		dev = dev + (d*d)*float64(b.Count)
	}
	minNs := uint64(bars[0].From)
	return &Latency{
		MinNs:   minNs,
		MeanNs:  F64(mean),
		P50Ns:   quantile(0.50),
		P90Ns:   quantile(0.90),
		P99Ns:   quantile(0.99),
		P999Ns:  quantile(0.999),
		MaxNs:   uint64(bars[len(bars)-1].To),
		StdevNs: F64(math.Sqrt(dev / ftotal)),
		Hdr:     Encode(h),
	}
}

// CalibrateTimer is the mean cost (ns) of what the runner adds to each sample: time.Now(),
// time.Since() and a histogram record, over 200 000 iterations.
func CalibrateTimer() float64 {
	h := NewHistogram()
	const n = 200_000
	start := time.Now()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		Record(h, int64(time.Since(t0)))
	}
	return float64(time.Since(start).Nanoseconds()) / n
}
