package worker

import (
	"encoding/json"
	"strings"
	"testing"
)

func decodeOptions(t *testing.T, text string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The options of a job are read as kvbench resolved them; unset ones read as unset.
func TestResolvedOptionsAreReadAsWritten(t *testing.T) {
	o, err := ReadOptions(decodeOptions(t, `{"cache": 8388608, "raw": true, "compression": "zstd", "limit": null}`))
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := o.Int("cache"); !ok || n != 8<<20 {
		t.Errorf("cache = %d, %v", n, ok)
	}
	if _, ok := o.Int("limit"); ok {
		t.Error("an unset option reads as set")
	}
	if !o.Bool("raw") || o.Bool("missing") || o.Text("compression") != "zstd" || o.Text("cache") != "8388608" {
		t.Errorf("read %v %v %q %q", o.Bool("raw"), o.Bool("missing"), o.Text("compression"), o.Text("cache"))
	}
	if eff := o.Effective(); len(eff) != 3 || eff["limit"] != nil {
		t.Errorf("effective %v", eff)
	}
}

// A job whose options kvbench did not resolve (a fraction, a table) is refused, naming the option.
func TestUnresolvedOptionsAreRefused(t *testing.T) {
	for text, want := range map[string]string{
		`{"cache": 1.5}`:      "`cache` = 1.5: kvbench writes",
		`{"cache": {"a": 1}}`: "`cache` = {\"a\":1}: kvbench writes",
	} {
		if _, err := ReadOptions(decodeOptions(t, text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
	}
}
