package plan

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/zeebo/xxh3"
)

// Vectors is tests/vectors/derive.json (written by the Rust side), numbers kept exact.
func Vectors(t testing.TB) map[string]any {
	text, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "tests", "vectors", "derive.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// U reads a JSON integer as u64 (signed ones wrap).
func U(x any) uint64 {
	s := string(x.(json.Number))
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		return n
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return uint64(n)
}

// F reads a JSON number as a double.
func F(x any) float64 { f, _ := x.(json.Number).Float64(); return f }

func list(x any) []any         { return x.([]any) }
func obj(x any) map[string]any { return x.(map[string]any) }

func TestPrimitives(t *testing.T) {
	p := obj(Vectors(t)["primitives"])
	fns := map[string]func(a []any) uint64{
		"mix64":    func(a []any) uint64 { return Mix64(U(a[0])) },
		"rnd":      func(a []any) uint64 { return Rnd(U(a[0]), U(a[1])) },
		"below":    func(a []any) uint64 { return Below(U(a[0]), U(a[1])) },
		"stream":   func(a []any) uint64 { return Mix64(U(a[0]) ^ Mix64(U(a[1]))) },
		"ycsbhash": func(a []any) uint64 { return uint64(YcsbHash(U(a[0]))) },
	}
	for name, f := range fns {
		for _, c := range list(p[name]) {
			a := list(c)
			if got := f(a); got != U(a[len(a)-1]) {
				t.Errorf("%s%v = %d", name, a, got)
			}
		}
	}
	for _, c := range list(p["unit"]) {
		if a := list(c); Unit(U(a[0])) != F(a[1]) {
			t.Errorf("unit%v = %v", a, Unit(U(a[0])))
		}
	}
}

func TestPool(t *testing.T) {
	v := obj(Vectors(t)["pool"])
	p := Pool(U(v["pool_seed"]), U(v["max"]))
	if uint64(len(p)) != U(v["len"]) || string(p[:64]) != v["first64"] || xxh3.Hash(p) != U(v["xxh3"]) {
		t.Fatalf("pool: len %d first64 %q xxh3 %d", len(p), p[:64], xxh3.Hash(p))
	}
}

// DatasetOf builds a Dataset from a job's dataset object.
func DatasetOf(d map[string]any) *Dataset {
	k, v := obj(d["key"]), obj(d["value"])
	ds := &Dataset{Generator: d["generator"].(string), KeyKind: k["kind"].(string), Width: int(U(k["width"])),
		Min: U(v["min"]), Max: U(v["max"]), Random: v["content"] == "random", Loaded: U(d["loaded"]),
		Total: U(d["total"]), PoolSeed: U(d["pool_seed"]), ValueSeed: U(d["value_seed"])}
	ds.Init()
	return ds
}

func TestKeys(t *testing.T) {
	for _, c := range list(Vectors(t)["keys"]) {
		c := obj(c)
		k := obj(c["key"])
		ds := &Dataset{KeyKind: k["kind"].(string), Width: int(U(k["width"]))}
		for i, r := range list(c["records"]) {
			if got := hex.EncodeToString(ds.Key(nil, U(r))); got != list(c["hex"])[i] {
				t.Errorf("%v key(%d) = %s, want %s", k, U(r), got, list(c["hex"])[i])
			}
		}
	}
}

func TestValues(t *testing.T) {
	for _, c := range list(Vectors(t)["values"]) {
		c := obj(c)
		ds := DatasetOf(obj(c["dataset"]))
		buf := make([]byte, 0, 64)
		for _, x := range list(c["values"]) {
			a := list(x)
			if got := hex.EncodeToString(ds.Value(buf, U(a[0]), U(a[1]))); got != a[2] {
				t.Errorf("%s value(%d, %d) = %s, want %s", ds.Generator, U(a[0]), U(a[1]), got, a[2])
			}
		}
	}
}

func TestPerm(t *testing.T) {
	for _, c := range list(Vectors(t)["perm"]) {
		c := obj(c)
		n, key := U(c["n"]), U(c["key"])
		for i, want := range list(c["first"]) {
			if got := Perm(n, key, uint64(i)); got != U(want) {
				t.Errorf("perm(%d, %d, %d) = %d, want %d", n, key, i, got, U(want))
			}
		}
		if sum, ok := c["xxh3"]; ok {
			var all []byte
			for i := uint64(0); i < n; i++ {
				all = binary.LittleEndian.AppendUint64(all, Perm(n, key, i))
			}
			if xxh3.Hash(all) != U(sum) {
				t.Errorf("perm(%d): xxh3 %d, want %d", n, xxh3.Hash(all), U(sum))
			}
		}
	}
}

func TestZipfian(t *testing.T) {
	z := obj(Vectors(t)["zipfian"])
	d := obj(z["dist"])
	for _, x := range list(z["draws"]) {
		a := list(x)
		got := Zipf(Unit(U(a[0])), U(d["items"]), F(d["zetan"]), F(d["eta"]), 1+Pow(0.5, F(d["theta"])), F(d["alpha"]))
		if got != U(a[1]) || uint64(YcsbHash(got))%U(d["n"]) != U(a[2]) {
			t.Errorf("zipf draw %v: %d, record %d", a, got, uint64(YcsbHash(got))%U(d["n"]))
		}
	}
	for _, name := range []string{"dist", "theta_0_8"} {
		d := obj(z[name])
		if eta := ZipfEta(U(d["items"]), F(d["theta"]), F(d["zetan"])); eta != F(d["eta"]) {
			t.Errorf("%s: eta %v, want %v", name, eta, F(d["eta"]))
		}
	}
}
