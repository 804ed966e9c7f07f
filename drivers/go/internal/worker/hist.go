package worker

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// MaxNs is the longest latency a histogram holds (1 hour); longer samples saturate.
const MaxNs = 3_600_000_000_000

// NewHistogram has the bounds of every kvbench histogram: 1 ns .. 1 h, 3 significant digits.
func NewHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(1, MaxNs, 3) }

// Record adds one sample in nanoseconds, clamped to the histogram's range.
func Record(h *hdrhistogram.Histogram, ns int64) { _ = h.RecordValue(min(max(ns, 1), MaxNs)) }

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
	if fixed, err := zeroNormalizingOffset(string(b)); err == nil {
		return fixed
	}
	return string(b)
}

func zeroNormalizingOffset(enc string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(raw) < 8 || int(binary.BigEndian.Uint32(raw[4:8])) > len(raw)-8 {
		return "", fmt.Errorf("bad encoding")
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw[8 : 8+binary.BigEndian.Uint32(raw[4:8])]))
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
	out := binary.BigEndian.AppendUint32(append([]byte(nil), raw[:4]...), uint32(z.Len()))
	return base64.StdEncoding.EncodeToString(append(out, z.Bytes()...)), nil
}

// CalibrateTimer is the mean cost (ns) of what the op loop adds to each sample: two clock
// reads and a histogram record (the interval's; a mixed step records its kind's too), over
// 200 000 iterations.
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
