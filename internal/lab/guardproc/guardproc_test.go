package guardproc

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	type put struct{ key, value string }
	for _, tc := range []struct {
		name  string
		input string
		want  []put
		errs  int
	}{
		{"all put back", "change a/3 x 1\nrestored a/3\n", nil, 0},
		{"killed during a change", "change a/3 x 1\nchange b/7 y 2\nrestored b/7\n", []put{{"a/3", "x 1"}}, 0},
		// A second change of one key before it was put back keeps the
		// value told first: the original.
		{"changed twice", "change a/3 x 1\nchange a/3 x 2\n", []put{{"a/3", "x 1"}}, 0},
		{"in the order told", "change b/4 1\nchange a/3 2\n", []put{{"b/4", "1"}, {"a/3", "2"}}, 0},
		{"bad lines counted, good ones kept", "change a/3\nhello\nrestored\nrestored a/3 x\nchange a/3 x 1\n", []put{{"a/3", "x 1"}}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []put
			errs := Run(strings.NewReader(tc.input), func(k, v string) error { got = append(got, put{k, v}); return nil })
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("put back %+v, want %+v", got, tc.want)
			}
			if len(errs) != tc.errs {
				t.Errorf("errors %v, want %d", errs, tc.errs)
			}
		})
	}
	if errs := Run(strings.NewReader("change a/3 x 1\n"), func(string, string) error { return errors.New("EBUSY") }); len(errs) != 1 {
		t.Errorf("a failed put-back: errors %v, want 1", errs)
	}
	var g Guard
	if err := g.Change("a/1", "x"); err == nil || g.Close() != nil {
		t.Errorf("a Guard without Env: Change = %v, want an error (and nothing to close)", err)
	}
}
