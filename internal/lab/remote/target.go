package remote

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Target is the device under test as ssh reaches it.
type Target struct {
	// User is the login name; "" leaves it to ssh (its config, then the
	// local user name).
	User string
	// Host is a host name, an ssh config alias or an IP address (an IPv6
	// address without brackets).
	Host string
	// Port is the TCP port; 0 leaves it to ssh (its config, then 22).
	Port int
}

// String gives the target in the form ParseTarget reads.
func (t Target) String() string {
	host := t.Host
	if strings.Contains(host, ":") {
		host = "[" + strings.ReplaceAll(host, "%", "%25") + "]"
	}
	if t.Port != 0 {
		host += ":" + strconv.Itoa(t.Port)
	}
	if t.User != "" {
		host = url.PathEscape(t.User) + "@" + host
	}
	return "ssh://" + host
}

// A host name or config alias: letters, digits, '.', '_' and '-', not
// starting with '-' (ssh would take it for an option) or '.'.
var hostRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// ParseTarget reads ssh://[user@]host[:port], the form of ssh and git URLs;
// an IPv6 address goes in brackets (ssh://root@[2001:db8::2]:2222). Anything
// else (no scheme, a password, a path, a query) is an error that says what
// was wrong.
func ParseTarget(s string) (Target, error) {
	const form = "ssh://[user@]host[:port]"
	rest, ok := strings.CutPrefix(s, "ssh://")
	if !ok {
		if s == "" {
			return Target{}, fmt.Errorf("empty DUT address: want %s", form)
		}
		if i := strings.Index(s, "://"); i >= 0 {
			return Target{}, fmt.Errorf("DUT %q: scheme %q is not supported: want %s", s, s[:i], form)
		}
		return Target{}, fmt.Errorf("DUT %q: want %s, e.g. ssh://%s", s, form, s)
	}
	u, err := url.Parse(s)
	if err != nil && strings.Contains(rest, "[") && !strings.Contains(err.Error(), "port") {
		return Target{}, fmt.Errorf("DUT %q: what is in brackets is not an IPv6 address", s)
	}
	if err != nil {
		return Target{}, fmt.Errorf("DUT %q: %w (want %s)", s, errorsUnwrapURL(err), form)
	}
	switch {
	case rest == "":
		return Target{}, fmt.Errorf("DUT %q: no host (want %s)", s, form)
	case u.Path != "" && u.Path != "/":
		return Target{}, fmt.Errorf("DUT %q: a path (%s) is not supported: want %s", s, u.Path, form)
	case u.RawQuery != "" || u.ForceQuery:
		return Target{}, fmt.Errorf("DUT %q: a query is not supported: want %s", s, form)
	case u.Fragment != "" || strings.Contains(rest, "#"):
		return Target{}, fmt.Errorf("DUT %q: a fragment is not supported: want %s", s, form)
	}
	var t Target
	if u.User != nil {
		if _, set := u.User.Password(); set {
			return Target{}, fmt.Errorf("DUT %q: a password in the address is not supported: use a key (ssh-agent, or IdentityFile in ~/.ssh/config)", s)
		}
		t.User = u.User.Username()
		if err := checkUser(t.User); err != nil {
			return Target{}, fmt.Errorf("DUT %q: %w", s, err)
		}
	}
	host := u.Hostname()
	if host == "" {
		return Target{}, fmt.Errorf("DUT %q: no host (want %s)", s, form)
	}
	bracketed := strings.HasPrefix(u.Host, "[")
	switch {
	case bracketed:
		// url.Parse leaves a zone as "%25zone" decoded to "%zone".
		addr, _, _ := strings.Cut(host, "%")
		if ip := net.ParseIP(addr); ip == nil || ip.To4() != nil {
			return Target{}, fmt.Errorf("DUT %q: what is in brackets is not an IPv6 address", s)
		}
	case strings.Contains(host, ":"):
		return Target{}, fmt.Errorf("DUT %q: put an IPv6 address in brackets: ssh://[%s]", s, host)
	case !hostRE.MatchString(host):
		return Target{}, fmt.Errorf("DUT %q: host %q: use a host name, an ssh config alias or an IP address", s, host)
	}
	t.Host = host
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Target{}, fmt.Errorf("DUT %q: port %q is not a number from 1 to 65535", s, p)
		}
		t.Port = n
	} else if strings.HasSuffix(u.Host, ":") {
		return Target{}, fmt.Errorf("DUT %q: empty port after ':'", s)
	}
	return t, nil
}

// checkUser refuses user names ssh would misread: empty, an option, or with
// white space or control characters.
func checkUser(user string) error {
	if user == "" {
		return fmt.Errorf("empty user name before '@'")
	}
	if strings.HasPrefix(user, "-") {
		return fmt.Errorf("user name %q starts with '-'", user)
	}
	for _, r := range user {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("user name %q contains white space or a control character", user)
		}
	}
	return nil
}

// errorsUnwrapURL drops url.Error's repetition of the whole input.
func errorsUnwrapURL(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}
