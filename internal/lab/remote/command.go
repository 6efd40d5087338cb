package remote

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// SplitCommand splits an ssh command line (the value of --ssh-command, like
// GIT_SSH_COMMAND or rsync's -e) into words as a POSIX shell would, without
// running one: words are separated by blanks; single quotes keep everything
// up to the next single quote; double quotes keep everything but `\` before
// one of $ ` " \ and newline; a backslash outside quotes keeps the next
// character; an unquoted `~` or `~/` at the start of a word is $HOME.
//
// What only a shell can do is refused with an error that names it: pipes,
// lists, redirections, sub-shells, `$` and backquote expansions, comments,
// `~user`, and variable assignments before the command. `*`, `?` and `[` are
// kept as they are (a shell does that too when no file matches).
func SplitCommand(s string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool // cur holds a word, possibly empty ('' or "")
		plain  bool // every byte of the word so far is unquoted
	)
	end := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	// Bytes, not runes: every special character is ASCII, and the rest
	// (invalid UTF-8 included) is kept as it is.
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !inWord {
			plain = true
		}
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			end()
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("ssh command %q: unterminated single quote", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			inWord, plain, i = true, false, i+1+j
		case c == '"':
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				switch s[j] {
				case '\\':
					if j+1 < len(s) && strings.IndexByte("$`\"\\\n", s[j+1]) >= 0 {
						j++
						if s[j] != '\n' {
							cur.WriteByte(s[j])
						}
						continue
					}
				case '$', '`':
					return nil, fmt.Errorf("ssh command %q: %q inside double quotes asks for a shell expansion, which is not supported: put the value itself, or use single quotes", s, s[j])
				}
				cur.WriteByte(s[j])
			}
			if j == len(s) {
				return nil, fmt.Errorf("ssh command %q: unterminated double quote", s)
			}
			inWord, plain, i = true, false, j
		case c == '\\':
			if i+1 == len(s) {
				return nil, fmt.Errorf("ssh command %q: a backslash at the end quotes nothing", s)
			}
			i++
			if s[i] != '\n' { // backslash-newline joins lines
				cur.WriteByte(s[i])
				inWord, plain = true, false
			}
		case strings.IndexByte("|&;<>()", c) >= 0:
			return nil, fmt.Errorf("ssh command %q: %q needs a shell (pipes, lists and redirections are not supported): quote it if it is part of an argument, or put the commands in a script", s, c)
		case c == '$' || c == '`':
			return nil, fmt.Errorf("ssh command %q: %q asks for a shell expansion, which is not supported: put the value itself, or quote it", s, c)
		case c == '#' && !inWord:
			return nil, fmt.Errorf("ssh command %q: a comment ('#') is not supported: quote the '#' if it is part of an argument", s)
		case c == '~' && !inWord:
			if i+1 < len(s) && strings.IndexByte("/ \t\n", s[i+1]) < 0 {
				return nil, fmt.Errorf("ssh command %q: ~user is not supported: write the directory", s)
			}
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, fmt.Errorf("ssh command %q: expand ~: %w", s, err)
			}
			cur.WriteString(home)
			inWord, plain = true, false
		case c == '=' && plain && len(words) == 0 && isShellName(cur.String()):
			return nil, fmt.Errorf("ssh command %q: a variable assignment (%s=...) before the command is not supported: set it in the environment instead", s, cur.String())
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	end()
	if len(words) == 0 {
		return nil, errors.New("empty ssh command")
	}
	return words, nil
}

// isShellName reports whether s is a valid shell variable name.
func isShellName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, c := range []byte(s) {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Quote quotes s as one word for a POSIX shell (sh, bash, dash, zsh): ssh
// passes the remote command to the login shell of the remote user as a
// single string, so every argument must be quoted. Words made only of
// characters no shell treats specially, and not of the form NAME=value (an
// assignment), are returned as they are; anything else goes in single
// quotes; a single quote inside closes them, is written as \' and opens
// them again.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_@%+=:,./-", c) >= 0) {
			safe = false
			break
		}
	}
	// NAME=value as the first word would be an assignment.
	if i := strings.IndexByte(s, '='); safe && !(i > 0 && isShellName(s[:i])) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// QuoteCommand quotes each argument with Quote and joins them with spaces:
// the string a POSIX shell splits back into args.
func QuoteCommand(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}
