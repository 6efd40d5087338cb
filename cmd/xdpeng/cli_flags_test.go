package main

// Bad input that the flags alone show wrong: refused before the command
// looks at a device or for root, so these run without either, in the
// namespace of the test, on interface names that need not exist.

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// commands is every subcommand of xdpeng. TestCLICommands fails when the
// binary has another one, so that a new command comes with its cases here
// rather than being skipped by them.
var commands = []string{"bench", "compare", "count", "demo", "fwd", "gen", "kern", "l2fwd", "latency", "probe", "progbench", "rxdrop", "selftest", "stats", "steer", "testbed", "txonly"}

func TestCLICommands(t *testing.T) {
	var got []string
	for _, c := range rootCmd.Commands() {
		if c.IsAvailableCommand() && c.Name() != "help" && c.Name() != "completion" {
			got = append(got, c.Name())
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, commands) {
		t.Errorf("xdpeng has the commands %v, the tests know %v: add the new one's cases", got, commands)
	}
}

type badInput struct {
	name string
	gen  bool     // run in the generator namespace
	user bool     // run as nobody, without capabilities
	args []string // after the binary
	want []string // every one must be in stderr
}

// TestCLIFlagErrors runs bad input that the flags alone show wrong and
// checks the exit status and the message. The "not root" cases run as
// nobody (with setpriv when the test runs as root).
func TestCLIFlagErrors(t *testing.T) {
	bin := buildCLI(t)
	cases := []badInput{
		{name: "no interface", args: []string{"rxdrop", "-d", "1s"}, want: []string{"xdpeng: no interface given: use -i DEV"}},
		{name: "busy-poll without time", args: []string{"rxdrop", "-i", "lo", "-d", "1s", "-B", "--busy-poll-usecs", "0"},
			want: []string{"--busy-poll-usecs 0, --busy-poll-budget 64: busy polling needs both positive"}},
		{name: "busy-poll knobs without -B", args: []string{"rxdrop", "-i", "lo", "-d", "1s", "--busy-poll-budget", "16"},
			want: []string{"--busy-poll-usecs and --busy-poll-budget set busy polling: add --busy-poll (-B)"}},
		{name: "gen no interface", args: []string{"gen", "--count", "10"}, want: []string{"xdpeng: no interface given: use -i DEV", "usage: xdpeng gen"}},
		{name: "txonly no interface", args: []string{"txonly"}, want: []string{"xdpeng: no interface given: use -i DEV", "usage: xdpeng txonly"}},
		{name: "kern no interface", args: []string{"kern", "pass"}, want: []string{"xdpeng: no interface given: use -i DEV"}},
		{name: "empty queue list", args: []string{"rxdrop", "-i", "dut0", "-q", "", "-d", "1s"},
			want: []string{"empty queue list"}},
		{name: "open queue range", args: []string{"rxdrop", "-i", "dut0", "-q", "1-", "-d", "1s"},
			want: []string{`queue list "1-"`, "use ids like 0, 0-3 or 0,2"}},
		{name: "queue not a number", args: []string{"rxdrop", "-i", "dut0", "-q", "a", "-d", "1s"},
			want: []string{`"a" is not a non-negative number`}},
		{name: "malformed CPU list", args: []string{"rxdrop", "-i", "dut0", "-q", "0", "--cpus", "1-", "-d", "1s"},
			want: []string{`CPU list "1-"`, "use ids like"}},
		{name: "CPUs and queues differ", args: []string{"rxdrop", "-i", "dut0", "-q", "0-1", "--cpus", "1", "-d", "1s"},
			want: []string{"1 CPU(s) for 2 queue(s): give one CPU per queue"}},
		{name: "frame size", args: []string{"rxdrop", "-i", "dut0", "--frame-size", "3000", "-d", "1s"},
			want: []string{"--frame-size: frame size 3000: must be a power of two from 2048 to the page size"}},
		{name: "frame size beyond the page", args: []string{"rxdrop", "-i", "dut0", "-f", "1048576", "-d", "1s"},
			want: []string{"--frame-size: frame size 1048576: must be a power of two from 2048 to the page size", "(here: 2048"}},
		{name: "headroom", args: []string{"rxdrop", "-i", "dut0", "--headroom", "2000", "-d", "1s"},
			want: []string{"--headroom 2000: at most 1344 with 2048-byte frames (-f)"}},
		{name: "huge pages mode", args: []string{"rxdrop", "-i", "dut0", "-u", "--huge-pages", "always", "-d", "1s"},
			want: []string{`--huge-pages "always": use auto, on or off`}},
		{name: "ring not a power of two", args: []string{"rxdrop", "-i", "dut0", "--ring-size", "1000", "-d", "1s"},
			want: []string{"xdpeng: --ring-size: ring size 1000: must be a power of two between 1 and 65536"}},
		{name: "ring too large", args: []string{"rxdrop", "-i", "dut0", "--ring-size", "131072", "-d", "1s"},
			want: []string{"xdpeng: --ring-size: ring size 131072: must be a power of two between 1 and 65536"}},
		{name: "one ring wrong", args: []string{"rxdrop", "-i", "dut0", "--fill-size", "3", "-d", "1s"},
			want: []string{"xdpeng: --fill-size: ring size 3: must be a power of two"}},
		{name: "txonly ring", args: []string{"txonly", "-i", "gen0", "-C", "10", "--ring-size", "1000"},
			want: []string{"xdpeng: --ring-size: ring size 1000: must be a power of two"}},
		{name: "batch larger than the ring", args: []string{"rxdrop", "-i", "dut0", "-b", "128", "--ring-size", "64", "-d", "1s"},
			want: []string{"batch size 128 is larger than the rx ring (64)", "a batch must fit in the rings"}},
		{name: "batch zero", args: []string{"rxdrop", "-i", "dut0", "-b", "0", "-d", "1s"},
			want: []string{"batch size 0: must be between 1 and"}},
		{name: "copy and zero-copy", args: []string{"rxdrop", "-i", "dut0", "-c", "-z", "-d", "1s"},
			want: []string{"-c (copy) and -z (zero-copy) exclude each other"}},
		{name: "interval", args: []string{"rxdrop", "-i", "dut0", "-n", "0", "-d", "1s"}, want: []string{"-n/--interval 0s: must be positive"}},
		{name: "duration neither seconds nor a duration", args: []string{"rxdrop", "-i", "dut0", "-d", "5x"},
			want: []string{`"5x" is neither seconds (5, 0.5) nor a duration (5s, 500ms, 1m)`}},
		{name: "kern interval", args: []string{"kern", "drop", "-i", "dut0", "-n", "-1"}, want: []string{"-n/--interval -1s: must be positive"}},
		{name: "xdpsock's -I", args: []string{"rxdrop", "-i", "dut0", "-I", "i40e-eth0-TxRx-0"},
			want: []string{"xdpsock's -I (an IRQ string", "the statistics interval is -n"}},
		{name: "steer not root", user: true, args: []string{"steer", "-i", "dut0", "--pin", "/x"},
			want: []string{"steer needs root"}},
		{name: "rxdrop not root", user: true, args: []string{"rxdrop", "-i", "dut0", "-d", "1s"},
			want: []string{"xdpeng: rxdrop needs root", "CAP_NET_ADMIN", "run it with sudo"}},
		{name: "unknown flag", args: []string{"rxdrop", "-i", "dut0", "--bogus"}, want: []string{"unknown flag: --bogus", "--help"}},
		{name: "unknown command", args: []string{"bogus"}, want: []string{`unknown command "bogus" for "xdpeng"`}},
		{name: "an argument for -d", args: []string{"rxdrop", "-i", "dut0", "5"},
			want: []string{`rxdrop takes no arguments, only flags: "5" (did you mean -d 5?)`, "usage: xdpeng rxdrop"}},
		{name: "an argument for -i", args: []string{"probe", "lo"},
			want: []string{`probe takes no arguments, only flags: "lo" (did you mean -i lo?)`}},
		{name: "an argument", args: []string{"kern", "drop", "-i", "dut0", "bogus"},
			want: []string{`kern drop takes no arguments, only flags: "bogus" (see xdpeng kern drop --help)`}},
		{name: "unknown kern path", args: []string{"kern", "bogus"}, want: []string{`unknown subcommand "bogus"`, "drop, pass"}},
		{name: "kern mode", args: []string{"kern", "drop", "-i", "dut0", "-m", "bogus", "-d", "1s"},
			want: []string{`unknown XDP mode "bogus" (want native or generic)`}},
		{name: "kern native and generic", args: []string{"kern", "drop", "-i", "dut0", "-N", "-S"},
			want: []string{"-S (generic) and -N (native) contradict each other"}},
		{name: "kern -m native and -S", args: []string{"kern", "drop", "-i", "dut0", "-m", "native", "-S"},
			want: []string{"-m native and -S (generic) contradict each other"}},
		{name: "kern -m generic and --native-mode", args: []string{"kern", "drop", "-i", "dut0", "-m", "skb", "--native-mode"},
			want: []string{"-m skb and -N (native) contradict each other"}},
		{name: "native and generic", args: []string{"rxdrop", "-i", "dut0", "-N", "-S"},
			want: []string{"-N (native) and -S (generic) exclude each other"}},
		{name: "kern hook", args: []string{"kern", "drop", "-i", "dut0", "--hook", "bogus", "-d", "1s"},
			want: []string{`--hook "bogus": want xdp or tc`}},
		{name: "kern redirect without -o", args: []string{"kern", "redirect", "-i", "dut0", "-d", "1s"},
			want: []string{"redirect needs -o OUT"}},
		{name: "gen bad MAC", args: []string{"gen", "-i", "gen0", "--count", "10", "--dst-mac", "zz"},
			want: []string{`--dst-mac: "zz" is not an Ethernet address like 02:00:00:00:00:01`}},
		{name: "gen IP outside the benchmark range", args: []string{"gen", "-i", "gen0", "--count", "10", "--dst-ip", "10.1.1.1"},
			want: []string{"--dst-ip 10.1.1.1 is outside 198.18.0.0/15"}},
		{name: "gen bad source IP", args: []string{"gen", "-i", "gen0", "--count", "10", "--src-ip", "nope"},
			want: []string{`--src-ip "nope" is not an IP address`}},
		{name: "gen bad port", args: []string{"gen", "-i", "gen0", "--count", "10", "--dst-port", "70000"},
			want: []string{`invalid argument "70000" for "--dst-port"`}},
		{name: "gen size", args: []string{"gen", "-i", "gen0", "--count", "10", "--size", "10"},
			want: []string{"--size 10 out of range: frame size with FCS must be 64..1518 (1522 with a VLAN tag)"}},
		{name: "gen size below 64 with FCS", args: []string{"gen", "-i", "gen0", "-C", "10", "-s", "63"},
			want: []string{"--size 63 out of range"}},
		{name: "txonly VLAN priority", args: []string{"txonly", "-i", "gen0", "-C", "10", "-V", "-K", "8"},
			want: []string{"-K/--vlan-pri 8 out of range: 0..7"}},
		{name: "txonly priority without a tag", args: []string{"txonly", "-i", "gen0", "-C", "10", "-K", "3"},
			want: []string{"-K/--vlan-pri 3: untagged frames have no priority; tag them with -V or -J ID"}},
		{name: "gen VLAN ID", args: []string{"gen", "-i", "gen0", "-C", "10", "-J", "5000"},
			want: []string{"-J/--vlan 5000 out of range: 1..4094"}},
		{name: "txonly pattern", args: []string{"txonly", "-i", "gen0", "-C", "10", "-P", "zz"},
			want: []string{`-P/--pattern "zz": want 32 bits in hex`}},
		{name: "txonly pattern and fill", args: []string{"txonly", "-i", "gen0", "-C", "10", "-P", "1234", "--fill", "7"},
			want: []string{"--fill and -P/--pattern both fill the payload"}},
		{name: "gen pattern and fill", args: []string{"gen", "-i", "gen0", "-C", "10", "-P", "1234", "--fill", "7"},
			want: []string{"--fill and -P/--pattern both fill the payload"}},
		{name: "fwd -G", args: []string{"fwd", "-i", "dut0", "-o", "dut1", "-G", "zz", "-d", "1s"},
			want: []string{`--dst-mac: "zz" is not an Ethernet address`}},
		{name: "gen quiet takes no value", args: []string{"gen", "-i", "gen0", "-C", "10", "-Q=maybe"},
			want: []string{`invalid argument "maybe"`}},
		{name: "gen ports", args: []string{"gen", "-i", "gen0", "--count", "10", "--ports", "0"},
			want: []string{"--ports 0: need at least 1"}},
		{name: "txonly ports", args: []string{"txonly", "-i", "gen0", "--count", "10", "--ports", "0"},
			want: []string{"--ports 0: need at least 1"}},
		{name: "txonly ports past 65535", args: []string{"txonly", "-i", "gen0", "--count", "10", "--ports", "65530"},
			want: []string{"--ports: 65530 ports counted up from destination port 9 go past port 65535: at most 65527 fit"}},
		{name: "gen xdp-pass", args: []string{"gen", "-i", "gen0", "--count", "10", "--xdp-pass", "sometimes"},
			want: []string{`--xdp-pass "sometimes": want auto, always or never`}},
		{name: "txonly xdp-pass", args: []string{"txonly", "-i", "gen0", "--count", "10", "--xdp-pass", "sometimes"},
			want: []string{`--xdp-pass "sometimes": want auto, always or never`}},
		{name: "gen unbounded", args: []string{"gen", "-i", "gen0"},
			want: []string{"gen needs a bound: give --count N or --duration D"}},
		{name: "gen negative duration", args: []string{"gen", "-i", "gen0", "-d", "-1"},
			want: []string{"xdpeng: -d/--duration -1s: must not be negative"}},
		{name: "txonly negative duration", args: []string{"txonly", "-i", "gen0", "-d", "-1"},
			want: []string{"xdpeng: -d/--duration -1s: must not be negative"}},
		{name: "rxdrop negative duration", args: []string{"rxdrop", "-i", "dut0", "-d", "-1"},
			want: []string{"xdpeng: -d/--duration -1s: must not be negative"}},
		{name: "stats negative duration", args: []string{"stats", "-i", "lo", "-d", "-0.5"},
			want: []string{"xdpeng: -d/--duration -500ms: must not be negative"}},
		{name: "gen not root", user: true, args: []string{"gen", "-i", "gen0", "--count", "10"},
			want: []string{"needs root", "sudo"}},
		{name: "count top", args: []string{"count", "-i", "dut0", "--top", "-1", "-d", "1s"},
			want: []string{"--top -1"}},
		{name: "count by", args: []string{"count", "-i", "dut0", "--by", "flow", "-d", "1s"},
			want: []string{`--by "flow"`, "port", "rxhash"}},
		{name: "l2fwd frame size", args: []string{"l2fwd", "-i", "dut0", "--frame-size", "1000", "-d", "1s"},
			want: []string{"frame size 1000"}},
		{name: "txonly unbounded", args: []string{"txonly", "-i", "gen0"},
			want: []string{"txonly needs a bound"}},
		{name: "txonly IP outside the benchmark range", args: []string{"txonly", "-i", "gen0", "--count", "10", "--dst-ip", "10.1.1.1"},
			want: []string{"--dst-ip 10.1.1.1 is outside 198.18.0.0/15"}},
		{name: "txonly with a receive-only flag", args: []string{"txonly", "-i", "gen0", "--count", "10", "--udp-port", "9"},
			want: []string{"--udp-port does not apply to txonly: it receives nothing"}},
		{name: "txonly with match", args: []string{"txonly", "-i", "gen0", "--count", "10", "--match", "proto=udp"},
			want: []string{"--match does not apply to txonly: it receives nothing"}},
		{name: "txonly with an XDP mode", args: []string{"txonly", "-i", "gen0", "--count", "10", "-S"},
			want: []string{"--generic does not apply to txonly: it attaches no XDP program"}},
		{name: "txonly with a headroom", args: []string{"txonly", "-i", "gen0", "--count", "10", "--headroom", "256"},
			want: []string{"--headroom does not apply to txonly: it receives nothing"}},
		{name: "txonly jumbo without -F", args: []string{"txonly", "-i", "gen0", "--count", "10", "--size", "9018"},
			want: []string{"--size 9018 out of range", "larger frames need multi-buffer (-F"}},
		{name: "fwd to itself", args: []string{"fwd", "-i", "dut0", "-o", "dut0", "-d", "1s"},
			want: []string{"both dut0", "l2fwd"}},
		{name: "fwd without -o", args: []string{"fwd", "-i", "dut0", "-d", "1s"},
			want: []string{"no output interface given: use -o DEV"}},
		{name: "metrics without a port", args: []string{"rxdrop", "-i", "dut0", "--metrics", "localhost", "-d", "1s"},
			want: []string{`--metrics "localhost": want HOST:PORT or a port`, "127.0.0.1:9100"}},
		{name: "metrics port zero", args: []string{"kern", "drop", "-i", "dut0", "--metrics", "127.0.0.1:0", "-d", "1s"},
			want: []string{"port 0 would pick a port nobody knows"}},
		{name: "metrics port not a number", args: []string{"gen", "-i", "gen0", "--count", "10", "--metrics", "127.0.0.1:http"},
			want: []string{`port "http" is not a number`}},
		{name: "snaplen without -w", args: []string{"rxdrop", "-i", "dut0", "--snaplen", "100", "-d", "1s"},
			want: []string{"--snaplen is for the capture: give -w FILE too"}},
		{name: "capture count without -w", args: []string{"count", "-i", "dut0", "--capture-count", "100", "-d", "1s"},
			want: []string{"--capture-count is for the capture: give -w FILE too"}},
		{name: "snaplen too large", args: []string{"l2fwd", "-i", "dut0", "-w", "x.pcap", "--snaplen", "300000", "-d", "1s"},
			want: []string{"--snaplen 300000: want 1..262144"}},
		{name: "txonly errors", args: []string{"txonly", "-i", "gen0", "--count", "10", "-e"},
			want: []string{"--errors does not apply to txonly: it runs no XDP program"}},
		{name: "txonly capture", args: []string{"txonly", "-i", "gen0", "--count", "10", "-w", "x.pcap"},
			want: []string{"--write does not apply to txonly: it receives nothing to capture"}},
		{name: "stats without -i", args: []string{"stats", "-d", "1s"}, want: []string{"no interface given: use -i DEV"}},
		{name: "stats device twice", args: []string{"stats", "-i", "lo,lo", "-d", "1s"}, want: []string{"-i lo: listed twice"}},
		{name: "stats no such device", args: []string{"stats", "-i", "nosuch0", "-d", "1s"},
			want: []string{`-i: interface "nosuch0" not found`, "ip link"}},
		{name: "stats interval", args: []string{"stats", "-i", "lo", "-I", "0s"}, want: []string{"-n/--interval 0s: must be positive"}},
		{name: "stats interval in seconds", args: []string{"stats", "-i", "lo", "-n", "0"}, want: []string{"-n/--interval 0s: must be positive"}},
		{name: "testbed MTU", args: []string{"testbed", "up", "--name", "x", "--mtu", "70000"},
			want: []string{"--mtu 70000: use 68-65535 (9000 for jumbo frames)"}},
		{name: "xsk-map not pinned", args: []string{"rxdrop", "-i", "lo", "-d", "1s", "--xsk-map", "/nonexistent-xsks"},
			want: []string{"--xsk-map /nonexistent-xsks:", "a pinned XSKMAP"}},
		{name: "program not there", args: []string{"rxdrop", "-i", "lo", "-d", "1s", "--program", "/nonexistent.o"},
			want: []string{"--program /nonexistent.o:"}},
		{name: "udp-port with xsk-map", args: []string{"rxdrop", "-i", "lo", "-d", "1s", "--xsk-map", "/x", "--udp-port", "9"},
			want: []string{"--udp-port and --match are xdpeng's program's"}},
		{name: "match with xsk-map", args: []string{"rxdrop", "-i", "lo", "-d", "1s", "--xsk-map", "/x", "--match", "proto=tcp"},
			want: []string{"--udp-port and --match are xdpeng's program's"}},
		{name: "redirect-cpu without CPUs", args: []string{"kern", "redirect-cpu", "-i", "lo"},
			want: []string{"redirect-cpu needs -c CPUS"}},
		{name: "redirect-cpu remote action", args: []string{"kern", "redirect-cpu", "-i", "lo", "-c", "0", "-r", "redirect"},
			want: []string{`-r/--remote-action "redirect": want drop or pass`}},
		{name: "redirect-cpu xdp-bench program mode", args: []string{"kern", "redirect-cpu", "-i", "lo", "-c", "0", "-p", "l4-hash"},
			want: []string{"-p l4-hash: xdp-bench redirect-cpu's program mode; xdpeng's redirect-cpu goes round robin"}},
		{name: "redirect-cpu queue", args: []string{"kern", "redirect-cpu", "-i", "lo", "-c", "0", "-q", "0"},
			want: []string{"-q/--qsize 0: want a queue of 1 frame or more"}},
		{name: "redirect-cpu offline CPU", args: []string{"kern", "redirect-cpu", "-i", "lo", "-c", "4000"},
			want: []string{"-c/--cpus:"}},
		{name: "kern packet operation", args: []string{"kern", "drop", "-i", "lo", "-p", "parse"},
			want: []string{`-p/--packet-operation "parse": want no-touch, read-data, parse-ip, swap-macs`}},
		{name: "kern packet operation at tc", args: []string{"kern", "drop", "-i", "lo", "--hook", "tc", "-p", "read-data"},
			want: []string{"-p and -l are the XDP hook's"}},
		{name: "kern load-bytes without an operation", args: []string{"kern", "pass", "-i", "lo", "-l", "load-bytes"},
			want: []string{"give -p read-data, parse-ip or swap-macs too"}},
		{name: "kern load mode", args: []string{"kern", "drop", "-i", "lo", "-l", "bytes"},
			want: []string{`-l/--load-mode "bytes": want dpa or load-bytes`}},
		{name: "kern count-proto with an operation", args: []string{"kern", "drop", "-i", "lo", "--count-proto", "-p", "parse-ip"},
			want: []string{"--count-proto parses the headers itself"}},
		{name: "compare packet operation on no path", args: []string{"compare", "--testbed", "--paths", "xsk-drop", "--packet-operation", "read-data"},
			want: []string{"a packet operation applies to the in-kernel XDP paths"}},
		{name: "real-time policy without a priority", args: []string{"rxdrop", "-i", "lo", "-d", "1s", "-W", "SCHED_FIFO"},
			want: []string{"-W SCHED_FIFO needs a real-time priority: -U 1-99"}},
		{name: "priority without a real-time policy", args: []string{"l2fwd", "-i", "lo", "-d", "1s", "-U", "5"},
			want: []string{"-U/--schpri 5: give -W SCHED_FIFO or SCHED_RR too"}},
		{name: "unknown policy", args: []string{"txonly", "-i", "lo", "-d", "1s", "-W", "idle"},
			want: []string{"-W/--policy: unknown scheduling policy \"idle\""}},
		{name: "xdpsock's -w CLOCK", args: []string{"rxdrop", "-i", "lo", "-d", "1s", "-w", "MONOTONIC"},
			want: []string{"-w MONOTONIC: xdpsock's -w names a clock; xdpeng's -w writes a capture file"}},
		{name: "tx cycle with a rate", args: []string{"txonly", "-i", "lo", "-d", "1s", "-T", "1000", "--rate", "100"},
			want: []string{"-T/--tx-cycle and --rate both pace the sending: give one"}},
		{name: "tx cycle", args: []string{"txonly", "-i", "lo", "-d", "1s", "-T", "soon"},
			want: []string{`-T/--tx-cycle "soon": give microseconds (-T 1000) or a positive duration (1ms)`}},
		{name: "force with xsk-map", args: []string{"rxdrop", "-i", "lo", "-d", "1s", "--xsk-map", "/x", "--force"},
			want: []string{"--force replaces an XDP program", "with --xsk-map alone xdpeng attaches none"}},
		{name: "bad match", args: []string{"count", "-i", "lo", "-d", "1s", "--match", "proto=icmp,port=7"},
			want: []string{"--match", "ports are UDP's or TCP's"}},
		{name: "match and udp-port", args: []string{"rxdrop", "-i", "lo", "-d", "1s", "--match", "proto=tcp", "--udp-port", "9"},
			want: []string{"--udp-port N is --match proto=udp,port=N: give one"}},
		{name: "steer bad match", args: []string{"steer", "-i", "lo", "--pin", "/x", "--match", "colour=red"},
			want: []string{"--match", "KEY is one of"}},
		{name: "steer without a way", args: []string{"steer", "-i", "lo"},
			want: []string{"use --pin PATH, --socket PATH, or both"}},
		{name: "tc with -S", args: []string{"kern", "drop", "-i", "lo", "--hook", "tc", "-S", "-d", "1s"},
			want: []string{"mean nothing with --hook tc"}},
		{name: "tc with -N", args: []string{"kern", "drop", "-i", "lo", "--hook", "tc", "-N", "-d", "1s"},
			want: []string{"mean nothing with --hook tc"}},
		{name: "xdpsock's spelling", args: []string{"-i", "dut0", "-r", "-q", "0"},
			want: []string{"xdpsock's spelling", "xdpeng rxdrop -i dut0 -q 0"}},
		{name: "flags first, no mode", args: []string{"-i", "dut0"},
			want: []string{"the command comes first, then its flags: xdpeng rxdrop|txonly|l2fwd -i dut0"}},
		{name: "demo unknown generator method", args: []string{"demo", "--gen-method", "foo"},
			want: []string{`--gen-method: unknown method "foo": use auto, live, xsk, packet`}},
		{name: "compare bogus path", args: []string{"compare", "-i", "dut0", "--paths", "bogus", "--duration", "1s"},
			want: []string{"bogus"}},
		{name: "compare peers without a bed", args: []string{"compare", "-i", "dut0", "--peers", "/", "--paths", "xdpsock-drop"},
			want: []string{"--peers is for --testbed"}},
		{name: "compare peers not a directory", args: []string{"compare", "--testbed", "--peers", "/nonexistent-peers", "--paths", "xdpsock-drop"},
			want: []string{`peers directory "/nonexistent-peers": not a directory`}},
		{name: "bench peers not a directory", args: []string{"bench", "--peers", "/nonexistent-peers"},
			want: []string{"--peers /nonexistent-peers: not a directory"}},
		{name: "compare loss without ndr", args: []string{"compare", "--testbed", "--loss", "0.5"},
			want: []string{"--loss is for --ndr"}},
		{name: "compare ndr without a bed", args: []string{"compare", "-i", "dut0", "--ndr"},
			want: []string{"zero-loss search needs a generator", "--testbed"}},
		{name: "compare ndr trial too short", args: []string{"compare", "--testbed", "--ndr", "--trial", "100ms"},
			want: []string{"trial length 100ms is too short: use at least 500ms"}},
		{name: "compare ndr resolution", args: []string{"compare", "--testbed", "--ndr", "--resolution", "0"},
			want: []string{"resolution 0% of the upper bound"}},
		{name: "compare ndr loss", args: []string{"compare", "--testbed", "--ndr", "--loss", "100"},
			want: []string{"loss limit 100%"}},
		{name: "compare verify without ndr", args: []string{"compare", "--testbed", "--verify", "5"},
			want: []string{"--verify is for --ndr"}},
		{name: "compare verify 0", args: []string{"compare", "--testbed", "--ndr", "--verify", "0"},
			want: []string{"--verify 0: give 1 to 100 trials at the answer"}},
		{name: "compare dut without dut-if", args: []string{"compare", "--dut", "ssh://root@198.18.0.2", "--gen-if", "gen0"},
			want: []string{"--dut needs --dut-if DEV"}},
		{name: "compare dut without gen-if", args: []string{"compare", "--dut", "ssh://root@198.18.0.2", "--dut-if", "dut0"},
			want: []string{"--dut needs --gen-if DEV"}},
		{name: "compare dut not a URL", args: []string{"compare", "--dut", "root@198.18.0.2", "--dut-if", "dut0", "--gen-if", "gen0"},
			want: []string{"--dut: ", "want ssh://[user@]host[:port], e.g. ssh://root@198.18.0.2"}},
		{name: "compare dut and testbed", args: []string{"compare", "--dut", "ssh://h", "--dut-if", "dut0", "--gen-if", "gen0", "--testbed"},
			want: []string{"give one of -i DEV", "--testbed", "--dut"}},
		{name: "compare dut-if without dut", args: []string{"compare", "--testbed", "--dut-if", "dut0"},
			want: []string{"--dut-if is for --dut"}},
		{name: "compare dut ports differ", args: []string{"compare", "--dut", "ssh://h", "--dut-if", "dut0,dut1", "--gen-if", "gen0"},
			want: []string{"--dut-if names 2 port(s), --gen-if 1"}},
		{name: "compare dut path without command", args: []string{"compare", "--dut", "ssh://h", "--dut-if", "dut0", "--gen-if", "gen0", "--paths", "xdp-drop,af-packet"},
			want: []string{"path af-packet has no xdpeng command to run it on a DUT on another host", "xsk-drop"}},
		{name: "compare dut forward on one port", args: []string{"compare", "--dut", "ssh://h", "--dut-if", "dut0", "--gen-if", "gen0", "--paths", "xdp-redirect"},
			want: []string{"path xdp-redirect needs 2 DUT ports"}},
		{name: "compare dut layout", args: []string{"compare", "--dut", "ssh://h", "--dut-if", "dut0", "--gen-if", "gen0", "--paths", "xdp-drop", "--layout", "B"},
			want: []string{"--layout is for --testbed"}},
		{name: "compare dut ssh command", args: []string{"compare", "--dut", "ssh://h", "--dut-if", "dut0", "--gen-if", "gen0", "--paths", "xdp-drop", "--ssh-command", "ssh | tee"},
			want: []string{"--ssh-command: ", "needs a shell"}},
		{name: "latency dut bed flag", args: []string{"latency", "--dut", "ssh://h", "--dut-if", "dut0", "--gen-if", "gen0", "--paths", "xdp-tx", "--bed-queues", "2"},
			want: []string{"--bed-queues is for the test bed, not --dut"}},
		{name: "latency queues without dut", args: []string{"latency", "-q", "0"},
			want: []string{"-q/--queues is for --dut"}},
		{name: "bench dut-if without dut", args: []string{"bench", "--dut-if", "dut0"},
			want: []string{"--dut-if is for --dut"}},
		{name: "latency drop path", args: []string{"latency", "--paths", "xdp-drop"},
			want: []string{"--paths: xdp-drop does not send its frames back", "xdp-tx"}},
		{name: "latency bogus path", args: []string{"latency", "--paths", "bogus"},
			want: []string{`unknown path "bogus"`}},
		{name: "latency wait mode", args: []string{"latency", "--waits", "spin"},
			want: []string{`--waits: unknown wait mode "spin": use adaptive, busy, poll, busy-poll`}},
		{name: "latency rate 0", args: []string{"latency", "--rate", "0"},
			want: []string{"--rate 0"}},
		{name: "latency too many frames", args: []string{"latency", "--rate", "10000000", "-d", "1000s"},
			want: []string{"stamped frames: use 1..4294967296"}},
		{name: "latency layout", args: []string{"latency", "--layout", "C"},
			want: []string{`--layout: layout "C"`}},
		{name: "latency not root", user: true, args: []string{"latency"},
			want: []string{"latency needs root", "sudo"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			argv := append([]string{bin}, tc.args...)
			if tc.user && os.Geteuid() == 0 {
				argv = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"}, argv...)
			}
			p := startCmd(t, exec.Command(argv[0], argv[1:]...))
			checkRefused(t, p.wait(t), tc)
		})
	}
}

// checkRefused checks that a run ended with exit status 1 and one message
// on stderr that starts with "xdpeng: " and has every word tc wants.
func checkRefused(t *testing.T, r result, tc badInput) {
	t.Helper()
	msg := r.stderr
	switch {
	case r.signal != 0:
		t.Fatalf("killed:\n%s", r)
	case r.code != 1:
		t.Fatalf("exit status %d, want 1:\n%s", r.code, r)
	}
	if !strings.HasPrefix(msg, "xdpeng: ") {
		t.Errorf("stderr does not start with \"xdpeng: \":\n%s", r)
	}
	for _, w := range tc.want {
		if !strings.Contains(msg, w) {
			t.Errorf("message does not contain %q:\n%s", w, msg)
		}
	}
	if strings.Contains(msg, "xdpeng: xdpeng") {
		t.Errorf("the program name is repeated: %s", strings.TrimSpace(msg))
	}
	if strings.Contains(msg, "panic") || strings.Contains(msg, "goroutine ") {
		t.Errorf("crashed:\n%s", msg)
	}
}
