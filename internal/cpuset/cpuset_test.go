package cpuset

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"0", []int{0}},
		{"3", []int{3}},
		{"0-3", []int{0, 1, 2, 3}},
		{"0,2,5-7", []int{0, 2, 5, 6, 7}},
		{"7,5-6,0,2", []int{0, 2, 5, 6, 7}},
		{"1,1,1-2,2", []int{1, 2}},
		{" 1 , 3 - 4 ", []int{1, 3, 4}},
		{"4-4", []int{4}},
		{"4096", []int{4096}},
	} {
		got, err := Parse(tc.in, "queue")
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Parse(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestParseErrors checks that every refusal names the list and says what
// a good one looks like.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // besides the kind of list
	}{
		{"", "empty queue list: give ids like 0, 0-3 or 0,2"},
		{"   ", "empty queue list"},
		{"1-", `"" is not a non-negative number (use ids like 0, 0-3 or 0,2)`},
		{"-1", `"" is not a non-negative number`},
		{"a", `"a" is not a non-negative number`},
		{"0,,1", `"" is not a non-negative number`},
		{"0,", `"" is not a non-negative number`},
		{"1-2-3", `"2-3" is not a non-negative number`},
		{"3-1", `range "3-1" runs backwards`},
		{"4097", "4097 is larger than 4096"},
		{"0-4000000000", "larger than 4096"},
		{"99999999999999999999", "is not a non-negative number"},
		{"0x1", `"0x1" is not a non-negative number`},
	} {
		_, err := Parse(tc.in, "queue")
		if err == nil {
			t.Errorf("Parse(%q) accepted", tc.in)
			continue
		}
		if !strings.Contains(err.Error(), "queue") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %q, want it to name the queue list and contain %q", tc.in, err, tc.want)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{0}, "0"},
		{[]int{0, 1}, "0-1"},
		{[]int{0, 1, 2, 3, 5}, "0-3,5"},
		{[]int{0, 2, 4}, "0,2,4"},
		{[]int{1, 2, 4, 5, 6, 9}, "1-2,4-6,9"},
		{[]int{1, 0}, "1,0"},
		{[]int{3, 4, 0}, "3-4,0"},
	} {
		if got := Format(tc.in); got != tc.want {
			t.Errorf("Format(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestOnlineAndCheckOnline(t *testing.T) {
	online, err := Online()
	if err != nil {
		t.Fatal(err)
	}
	if len(online) == 0 {
		t.Fatal("no CPU online")
	}
	if !slices.IsSorted(online) {
		t.Errorf("Online() = %v, not sorted", online)
	}
	if err := CheckOnline(online); err != nil {
		t.Errorf("CheckOnline(Online()): %v", err)
	}
	err = CheckOnline([]int{online[0], MaxID})
	if err == nil {
		t.Fatalf("CPU %d accepted as online", MaxID)
	}
	for _, want := range []string{"CPU 4096 is not online", "online: " + Format(online)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("CheckOnline error %q does not contain %q", err, want)
		}
	}
}

// FuzzParseList checks that Parse never panics, and that what it accepts
// is sorted, unique, within 0..MaxID and survives Format and Parse again.
func FuzzParseList(f *testing.F) {
	for _, s := range []string{"0", "0-3", "0,2,5-7", "1-", "", "a", "3-1", "4096", "0-4096", " 1 , 2 ", "+1", "1,,2", "-", "0-0,0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := Parse(s, "CPU")
		if err != nil {
			if ids != nil {
				t.Fatalf("Parse(%q) returned %v with error %v", s, ids, err)
			}
			if !strings.Contains(err.Error(), "CPU") {
				t.Fatalf("Parse(%q) error %q does not name the list", s, err)
			}
			return
		}
		if len(ids) == 0 {
			t.Fatalf("Parse(%q) accepted an empty list", s)
		}
		for i, id := range ids {
			if id < 0 || id > MaxID {
				t.Fatalf("Parse(%q) = %v: %d outside 0..%d", s, ids, id, MaxID)
			}
			if i > 0 && ids[i-1] >= id {
				t.Fatalf("Parse(%q) = %v: not sorted and unique", s, ids)
			}
		}
		f := Format(ids)
		again, err := Parse(f, "CPU")
		if err != nil {
			t.Fatalf("Parse(Format(Parse(%q))) = Parse(%q): %v", s, f, err)
		}
		if !slices.Equal(again, ids) {
			t.Fatalf("round trip of %q through %q gave %v, want %v", s, f, again, ids)
		}
		if Format(again) != f {
			t.Fatalf("Format is not stable: %q then %q", f, Format(again))
		}
	})
}

// TestParseList checks that a paired list keeps the order written and
// refuses an id given twice, naming it.
func TestParseList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"0", []int{0}},
		{"1,0", []int{1, 0}},
		{"3-4,0,2", []int{3, 4, 0, 2}},
		{" 2 , 0 - 1 ", []int{2, 0, 1}},
	} {
		got, err := ParseList(tc.in, "CPU")
		if err != nil {
			t.Errorf("ParseList(%q): %v", tc.in, err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ParseList(%q) = %v, want %v", tc.in, got, tc.want)
		}
		// The same ids as a set.
		set, err := Parse(tc.in, "CPU")
		if err != nil || !slices.Equal(set, slices.Sorted(slices.Values(tc.want))) {
			t.Errorf("Parse(%q) = %v, %v; want %v sorted", tc.in, set, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"1,1", `CPU list "1,1": CPU 1 is given twice`},
		{"0-2,1", "CPU 1 is given twice"},
		{"3,0-4", "CPU 3 is given twice"},
		{"1-", `"" is not a non-negative number`},
		{"", "empty CPU list"},
	} {
		_, err := ParseList(tc.in, "CPU")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseList(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}
