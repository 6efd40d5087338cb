package env

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"golang.org/x/sys/unix"
)

const cpuinfo = `processor	: 0
vendor_id	: GenuineIntel
cpu family	: 6
model name	: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz
flags		: fpu vme

processor	: 1
model name	: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz
`

// fakeRoot is a machine's /proc and /sys as Collect reads them.
func fakeRoot() fstest.MapFS {
	return fstest.MapFS{
		"proc/cpuinfo":                  {Data: []byte(cpuinfo)},
		"sys/devices/system/cpu/online": {Data: []byte("0-3\n")},
		"sys/devices/system/cpu/vulnerabilities/spectre_v2": {Data: []byte(
			"Mitigation: Enhanced / Automatic IBRS; IBPB: conditional; RSB filling; PBRSB-eIBRS: SW sequence; BHI: BHI_DIS_S\n")},
		"proc/sys/net/core/bpf_jit_enable":   {Data: []byte("1\n")},
		"proc/sys/net/core/bpf_jit_harden":   {Data: []byte("0\n")},
		"proc/sys/net/core/bpf_jit_kallsyms": {Data: []byte("1\n")},
	}
}

func fakeUname() (unix.Utsname, error) {
	var u unix.Utsname
	copy(u.Release[:], "6.18.0-1-amd64")
	copy(u.Version[:], "#1 SMP PREEMPT_DYNAMIC Debian 6.18.1-1")
	copy(u.Machine[:], "x86_64")
	return u, nil
}

// rootJIT reads the BPF JIT sysctls from root, as Collect does from /.
func rootJIT(root fs.FS) func(string) (string, error) {
	return func(name string) (string, error) { return readLine(root, jitDir+name) }
}

func TestCollectFromFakeRoot(t *testing.T) {
	e := collect(fakeRoot(), fakeUname, rootJIT(fakeRoot()))
	want := Env{
		Kernel: "6.18.0-1-amd64", KernelBuild: "#1 SMP PREEMPT_DYNAMIC Debian 6.18.1-1", Arch: "x86_64",
		CPUModel:   "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz",
		OnlineCPUs: "0-3", OnlineCount: 4,
		SpectreV2: "Mitigation: Enhanced / Automatic IBRS; IBPB: conditional; RSB filling; PBRSB-eIBRS: SW sequence; BHI: BHI_DIS_S",
		BPFJIT:    JIT{Enable: "1", Harden: "0", Kallsyms: "1"},
	}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("collect =\n%+v\nwant\n%+v", e, want)
	}
}

func TestCollectNamesWhatItCannotRead(t *testing.T) {
	root := fakeRoot()
	delete(root, "sys/devices/system/cpu/vulnerabilities/spectre_v2") // an arch without it
	root["proc/cpuinfo"] = &fstest.MapFile{Data: []byte("processor\t: 0\nCPU part\t: 0xd0c\n")}
	root["sys/devices/system/cpu/online"] = &fstest.MapFile{Data: []byte("zero\n")}
	root["proc/sys/net/core/bpf_jit_harden"] = &fstest.MapFile{Data: []byte("")}
	delete(root, "proc/sys/net/core/bpf_jit_kallsyms")
	e := collect(root, func() (unix.Utsname, error) { return unix.Utsname{}, errors.New("no uname") }, rootJIT(root))
	got := strings.Join(e.Unknown, "\n")
	for _, want := range []string{"kernel: uname: no uname", "cpu_model: /proc/cpuinfo has no \"model name\" line",
		"online_cpus: /sys/devices/system/cpu/online:", "spectre_v2: open /sys/devices/system/cpu/vulnerabilities/spectre_v2",
		"bpf_jit.harden: /proc/sys/net/core/bpf_jit_harden is empty", "bpf_jit.kallsyms: open /proc/sys/net/core/bpf_jit_kallsyms: file does not exist"} {
		if !strings.Contains(got, want) {
			t.Errorf("Unknown = %q, want it to say %q", e.Unknown, want)
		}
	}
	if e.Kernel != "" || e.SpectreV2 != "" || e.OnlineCount != 0 || e.BPFJIT.Enable != "1" {
		t.Errorf("collect = %+v: want what was not read empty, the rest read", e)
	}
	if h := e.Header(); !strings.Contains(h, "kernel ?") || !strings.Contains(h, "not read: kernel: uname") {
		t.Errorf("header does not show what is unknown:\n%s", h)
	}
}

// On the machine itself: the mitigation is the file's content verbatim.
func TestCollectMatchesThisMachine(t *testing.T) {
	e := Collect()
	b, err := os.ReadFile("/sys/devices/system/cpu/vulnerabilities/spectre_v2")
	if err != nil {
		t.Skipf("no spectre_v2 file here: %v", err)
	}
	if want := strings.TrimSuffix(string(b), "\n"); e.SpectreV2 != want {
		t.Errorf("SpectreV2 = %q, want %q", e.SpectreV2, want)
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	if e.Kernel != cString(u.Release[:]) || e.Kernel == "" {
		t.Errorf("Kernel = %q, uname says %q", e.Kernel, cString(u.Release[:]))
	}
}

func TestJSONIsOneObject(t *testing.T) {
	e := collect(fakeRoot(), fakeUname, rootJIT(fakeRoot()))
	e.Layout, e.Driver, e.XDPMode, e.Queues, e.FrameSize = "A", "veth", "native", 1, 64
	row := struct {
		Path string `json:"path"`
		Env  Env    `json:"env"`
	}{"xdp-tx", e}
	b, err := json.Marshal(row)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Env map[string]any `json:"env"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	env := back.Env
	if env["kernel"] != "6.18.0-1-amd64" || env["queues"] != 1.0 || env["xdp_mode"] != "native" ||
		env["bpf_jit"].(map[string]any)["harden"] != "0" || !strings.HasPrefix(env["spectre_v2"].(string), "Mitigation: Enhanced") {
		t.Errorf("env object %s", b)
	}
	if _, ok := env["unknown"]; ok {
		t.Errorf("empty Unknown is in the JSON: %s", b)
	}
}

func TestHeader(t *testing.T) {
	e := collect(fakeRoot(), fakeUname, rootJIT(fakeRoot()))
	e.Layout, e.CPUs, e.Driver, e.XDPMode, e.Queues, e.FrameSize, e.Generator = "A", "generator 0, worker 1", "veth", "native", 1, 64, "xdpeng live frames"
	want := `kernel 6.18.0-1-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.18.1-1 (x86_64); CPU Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz; online CPUs 0-3 (4)
BPF JIT: enable 1, harden 0, kallsyms 1; spectre_v2: Mitigation: Enhanced / Automatic IBRS; IBPB: conditional; RSB filling; PBRSB-eIBRS: SW sequence; BHI: BHI_DIS_S
layout A; CPUs generator 0, worker 1; driver veth; XDP mode native; 1 queue(s); 64-byte frames; generator xdpeng live frames
`
	if got := e.Header(); got != want {
		t.Errorf("Header =\n%s\nwant\n%s", got, want)
	}
}

func TestComparable(t *testing.T) {
	base := collect(fakeRoot(), fakeUname, rootJIT(fakeRoot()))
	base.Layout, base.Queues, base.FrameSize = "A", 1, 64
	if err := base.Comparable(base); err != nil {
		t.Errorf("an environment is not comparable with itself: %v", err)
	}
	other := base
	other.SpectreV2 = "Mitigation: Retpolines"
	other.BPFJIT.Harden = "2"
	other.FrameSize = 1500
	err := base.Comparable(other)
	var m *MismatchError
	if !errors.As(err, &m) {
		t.Fatalf("Comparable = %v, want a *MismatchError", err)
	}
	var fields []string
	for _, d := range m.Diffs {
		fields = append(fields, d.Field)
	}
	if got := strings.Join(fields, ","); got != "spectre_v2,bpf_jit.harden,frame_size" {
		t.Errorf("differing fields %s, want spectre_v2,bpf_jit.harden,frame_size", got)
	}
	if !strings.Contains(err.Error(), `frame_size "64" vs "1500"`) {
		t.Errorf("error %q does not show the values", err)
	}

	// Neither could read the mitigation: not shown to be the same.
	root := fakeRoot()
	delete(root, "sys/devices/system/cpu/vulnerabilities/spectre_v2")
	a, b := collect(root, fakeUname, rootJIT(root)), collect(root, fakeUname, rootJIT(root))
	if err := a.Comparable(b); err == nil || !strings.Contains(err.Error(), `spectre_v2 "not read"`) {
		t.Errorf("two environments without spectre_v2: %v", err)
	}
}

// Every field of Env but OnlineCount and Unknown is compared, so a field
// added later cannot be forgotten.
func TestComparableCoversEveryField(t *testing.T) {
	compared := map[string]bool{}
	for _, v := range (Env{}).values() {
		compared[v[0]] = true
	}
	var walk func(reflect.Type, string)
	walk = func(typ reflect.Type, prefix string) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, prefix+name+".")
				continue
			}
			if name == "online_cpu_count" || name == "unknown" {
				continue
			}
			if !compared[prefix+name] {
				t.Errorf("field %s%s is not compared", prefix, name)
			}
		}
	}
	walk(reflect.TypeOf(Env{}), "")
}
