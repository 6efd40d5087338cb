package remote

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitCommand(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"ssh", []string{"ssh"}},
		{"  ssh\t-F  lab.conf \n", []string{"ssh", "-F", "lab.conf"}},
		{`ssh -i 'my key' -o "User=jo smith"`, []string{"ssh", "-i", "my key", "-o", "User=jo smith"}},
		{`ssh -o ProxyCommand='nc -X 5 -x proxy:1080 %h %p'`, []string{"ssh", "-o", "ProxyCommand=nc -X 5 -x proxy:1080 %h %p"}},
		{`ssh a\ b "q\"uote" "back\\slash" "keep\n" '\' ''`, []string{"ssh", "a b", `q"uote`, `back\slash`, `keep\n`, `\`, ""}},
		{"ssh -F ~/lab.conf", []string{"ssh", "-F", home + "/lab.conf"}},
		{"ssh -F '~/lab.conf' a~b", []string{"ssh", "-F", "~/lab.conf", "a~b"}},
		{"ssh \\\n -v", []string{"ssh", "-v"}},
		{"ip netns exec t-gen ssh -F x", []string{"ip", "netns", "exec", "t-gen", "ssh", "-F", "x"}},
		{"ssh -o ProxyJump=[::1]:22 a#b", []string{"ssh", "-o", "ProxyJump=[::1]:22", "a#b"}},
		{"'A=b' ssh", []string{"A=b", "ssh"}},
		{"ssh A=b", []string{"ssh", "A=b"}},
	} {
		got, err := SplitCommand(tc.in)
		if err != nil {
			t.Errorf("SplitCommand(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("SplitCommand(%q) (-want +got):\n%s", tc.in, diff)
		}
	}

	for _, tc := range []struct{ in, want string }{
		{"", "empty ssh command"},
		{"  \t", "empty ssh command"},
		{"ssh 'x", "unterminated single quote"},
		{`ssh "x`, "unterminated double quote"},
		{`ssh x\`, "a backslash at the end"},
		{"ssh | tee log", `'|' needs a shell`},
		{"ssh; rm x", `';' needs a shell`},
		{"ssh 2>/dev/null", `'>' needs a shell`},
		{"ssh && x", `'&' needs a shell`},
		{"(ssh)", `'(' needs a shell`},
		{"ssh -F $HOME/x", `'$' asks for a shell expansion`},
		{"ssh -F `pwd`/x", "'`' asks for a shell expansion"},
		{`ssh "$HOME"`, "inside double quotes"},
		{"ssh # comment", "a comment"},
		{"ssh -F ~jo/x", "~user is not supported"},
		{"SSH_AUTH_SOCK=/x ssh", "a variable assignment (SSH_AUTH_SOCK=...)"},
	} {
		got, err := SplitCommand(tc.in)
		if err == nil {
			t.Errorf("SplitCommand(%q) = %q, want an error", tc.in, got)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SplitCommand(%q): error %q does not say %q", tc.in, err, tc.want)
		}
	}
}

// quoteCases are words a remote shell must get back unchanged.
var quoteCases = []string{
	"", "plain", "--duration=2s", "/usr/local/bin/xdpeng", "a b", "it's", "''", `"`, `\`, `\'`,
	"$HOME", "`id`", "$(id)", "a;b", "a|b", "a&b", "<x>", "*", "?", "[a]", "~", "~root", "#c",
	"x\ny", "tab\there", "{a,b}", "!", "A=b", "PATH=/x", "é", "\xff\xfe", "-n", "%", "a=b=c",
}

// TestQuoteSh checks Quote against a real shell: sh must hand each quoted
// word to printf unchanged.
func TestQuoteSh(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("no sh to check quoting with: %v", err)
	}
	for _, w := range quoteCases {
		out, err := exec.Command(sh, "-c", "printf '%s' "+Quote(w)).Output()
		if err != nil {
			t.Errorf("sh -c with %q: %v", Quote(w), err)
			continue
		}
		if string(out) != w {
			t.Errorf("Quote(%q) = %s: sh gives back %q", w, Quote(w), out)
		}
	}
	// A quoted NAME=value first word is a command name, not an assignment.
	out, err := exec.Command(sh, "-c", Quote("A=b")+" 2>/dev/null; echo ${A-unset}").Output()
	if err != nil || string(out) != "unset\n" {
		t.Errorf("sh ran %s as an assignment: %q, %v", Quote("A=b"), out, err)
	}
	if got := Quote("--duration=2s"); got != "--duration=2s" {
		t.Errorf("Quote(--duration=2s) = %s, want it unquoted", got)
	}
	if got := Quote("PATH=/x"); got != "'PATH=/x'" {
		t.Errorf("Quote(PATH=/x) = %s, want it quoted (it would be an assignment)", got)
	}
}

func TestQuoteCommandSplits(t *testing.T) {
	got, err := SplitCommand(QuoteCommand(quoteCases))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(quoteCases, got); diff != "" {
		t.Errorf("SplitCommand(QuoteCommand(x)) != x (-want +got):\n%s", diff)
	}
}

// FuzzQuoteSplit: what QuoteCommand quotes, SplitCommand splits back.
func FuzzQuoteSplit(f *testing.F) {
	for i := 0; i+2 < len(quoteCases); i += 3 {
		f.Add(quoteCases[i], quoteCases[i+1], quoteCases[i+2])
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		args := []string{a, b, c}
		got, err := SplitCommand(QuoteCommand(args))
		if err != nil {
			t.Fatalf("SplitCommand(QuoteCommand(%q)): %v", args, err)
		}
		if !slices.Equal(got, args) {
			t.Fatalf("SplitCommand(QuoteCommand(%q)) = %q", args, got)
		}
	})
}
