package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
)

// jsonFields returns the JSON names of the fields of struct value v, in
// their order, those of embedded structs in place.
func jsonFields(v any) []string {
	var names []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
			case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
				walk(f.Type)
			case f.IsExported():
				if name == "" {
					name = f.Name
				}
				names = append(names, name)
			}
		}
	}
	walk(reflect.TypeOf(v))
	return names
}

// intervalLike names the summary field an interval line's key stands for
// where their names differ: the interval's time for the run's length, a
// rate for its total.
var intervalLike = map[string]string{
	"t": "duration_s", "rx_bps": "rx_bytes", "tx_bps": "tx_bytes", "proto": "per_proto", "out": "out_tx",
}

// orderedLine is an interval line written with its keys in the order of
// the summary line's fields (summary), so that both read alike: a key the
// summary has takes its place; one it lacks takes that of the field it
// stands for (intervalLike, or its name without a "_pps" suffix); the
// rest come last, sorted.
type orderedLine struct {
	m       map[string]any
	summary []string
}

func (o orderedLine) MarshalJSON() ([]byte, error) {
	rank := func(k string) int {
		if like, ok := intervalLike[k]; ok && slices.Contains(o.summary, like) {
			return 2*slices.Index(o.summary, like) + 1
		}
		if i := slices.Index(o.summary, k); i >= 0 {
			return 2 * i
		}
		if i := slices.Index(o.summary, strings.TrimSuffix(k, "_pps")); i >= 0 {
			return 2*i + 1
		}
		return 2 * len(o.summary)
	}
	keys := make([]string, 0, len(o.m))
	for k := range o.m {
		keys = append(keys, k)
	}
	slices.SortStableFunc(keys, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(o.m[k])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
