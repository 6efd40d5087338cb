package remote

import (
	"strings"
	"testing"
)

func TestParseTarget(t *testing.T) {
	good := []struct {
		in   string
		want Target
	}{
		{"ssh://dut", Target{Host: "dut"}},
		{"ssh://dut/", Target{Host: "dut"}},
		{"ssh://root@198.18.0.2", Target{User: "root", Host: "198.18.0.2"}},
		{"ssh://root@198.18.0.2:2222", Target{User: "root", Host: "198.18.0.2", Port: 2222}},
		{"ssh://lab-dut.example.org:22", Target{Host: "lab-dut.example.org", Port: 22}},
		{"ssh://[2001:db8::2]", Target{Host: "2001:db8::2"}},
		{"ssh://admin@[2001:db8::2]:65535", Target{User: "admin", Host: "2001:db8::2", Port: 65535}},
		{"ssh://[fe80::1%25eth0]:22", Target{Host: "fe80::1%eth0", Port: 22}},
		{"ssh://jo%40corp@dut", Target{User: "jo@corp", Host: "dut"}},
		{"ssh://dut_1", Target{Host: "dut_1"}},
	}
	for _, tc := range good {
		got, err := ParseTarget(tc.in)
		if err != nil {
			t.Errorf("ParseTarget(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseTarget(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		// String gives back an address that parses to the same target.
		again, err := ParseTarget(got.String())
		if err != nil || again != got {
			t.Errorf("ParseTarget(%q.String() = %q) = %+v, %v; want %+v", tc.in, got.String(), again, err, got)
		}
	}

	bad := []struct {
		in, want string // want: a part of the error message
	}{
		{"", "empty DUT address"},
		{"root@dut", "want ssh://[user@]host[:port], e.g. ssh://root@dut"},
		{"dut:22", "want ssh://"},
		{"http://dut", `scheme "http" is not supported`},
		{"ssh://", "no host"},
		{"ssh://root@", "no host"},
		{"ssh://root:secret@dut", "a password in the address is not supported"},
		{"ssh://dut/tmp", "a path (/tmp) is not supported"},
		{"ssh://dut?x=1", "a query is not supported"},
		{"ssh://dut#frag", "a fragment is not supported"},
		{"ssh://dut:0", `port "0" is not a number from 1 to 65535`},
		{"ssh://dut:65536", `port "65536"`},
		{"ssh://dut:", "empty port"},
		{"ssh://dut:ssh", "ssh://dut:ssh"},
		{"ssh://2001:db8::2", "put an IPv6 address in brackets"},
		{"ssh://[198.18.0.2]", "is not an IPv6 address"},
		{"ssh://[dut]", "is not an IPv6 address"},
		{"ssh://[::1]:x", `invalid port ":x"`},
		{"ssh://-oProxyCommand=x", "host \"-oProxyCommand=x\""},
		{"ssh://-l@dut", "starts with '-'"},
		{"ssh://@dut", "empty user name"},
		{"ssh://a%20b@dut", "white space"},
		{"ssh://du t", "ssh://du t"},
		{"ssh://.dut", `host ".dut"`},
	}
	for _, tc := range bad {
		got, err := ParseTarget(tc.in)
		if err == nil {
			t.Errorf("ParseTarget(%q) = %+v, want an error", tc.in, got)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseTarget(%q): error %q does not say %q", tc.in, err, tc.want)
		}
	}
}

func TestTargetString(t *testing.T) {
	for _, tc := range []struct {
		t    Target
		want string
	}{
		{Target{Host: "dut"}, "ssh://dut"},
		{Target{User: "root", Host: "198.18.0.2", Port: 2222}, "ssh://root@198.18.0.2:2222"},
		{Target{Host: "2001:db8::2", Port: 22}, "ssh://[2001:db8::2]:22"},
	} {
		if got := tc.t.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.t, got, tc.want)
		}
	}
}
