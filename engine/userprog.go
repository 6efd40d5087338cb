package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
)

// LoadPinnedXSKMap opens the XSKMAP pinned at path (in a bpffs), for
// Config.XSKMap.
func LoadPinnedXSKMap(path string) (*ebpf.Map, error) {
	m, err := ebpf.LoadPinnedMap(path, nil)
	if err != nil {
		return nil, err
	}
	if m.Type() != ebpf.XSKMap {
		m.Close()
		return nil, fmt.Errorf("a map of type %v, not an XSKMAP", m.Type())
	}
	return m, nil
}

// UserProgram is an XDP program of the caller's, loaded from an ELF
// object, and the XSKMAP it redirects to: Config.Program and
// Config.XSKMap.
type UserProgram struct {
	Program *ebpf.Program
	XSKMap  *ebpf.Map
	// Name is the program's name, MapName the object's XSKMAP's.
	Name, MapName string
}

// LoadUserProgram loads the XDP program of the ELF object obj called name
// (its function or its section; "" takes the object's only XDP program),
// with the object's only XSKMAP, or xsks in its place if not nil. The
// object's other programs and maps are loaded with it and live as long as
// the process.
func LoadUserProgram(obj, name string, xsks *ebpf.Map) (*UserProgram, error) {
	cs, err := ebpf.LoadCollectionSpec(obj)
	if err != nil {
		return nil, err
	}
	var pick []string
	for n, ps := range cs.Programs {
		if ps.Type == ebpf.XDP && (name == "" || n == name || ps.SectionName == name) {
			pick = append(pick, n)
		}
	}
	slices.Sort(pick)
	switch {
	case len(pick) == 0 && name != "":
		return nil, fmt.Errorf("no XDP program named %s, or in section %s", name, name)
	case len(pick) == 0:
		return nil, errors.New("no XDP program in it")
	case len(pick) > 1:
		return nil, fmt.Errorf("%d XDP programs (%s): name one", len(pick), strings.Join(pick, ", "))
	}
	var maps []string
	for n, ms := range cs.Maps {
		if ms.Type == ebpf.XSKMap {
			maps = append(maps, n)
		}
	}
	if len(maps) != 1 {
		return nil, fmt.Errorf("%d XSKMAPs in it: the program must redirect to one", len(maps))
	}
	var opts ebpf.CollectionOptions
	if xsks != nil {
		opts.MapReplacements = map[string]*ebpf.Map{maps[0]: xsks}
	}
	coll, err := ebpf.NewCollectionWithOptions(cs, opts)
	if err != nil {
		return nil, err
	}
	return &UserProgram{Program: coll.Programs[pick[0]], XSKMap: coll.Maps[maps[0]], Name: pick[0], MapName: maps[0]}, nil
}
