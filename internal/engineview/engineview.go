// Package engineview lets xdpeng's own tests outside package engine (the
// lab's, which drive an engine on a test bed) look at what an engine keeps
// to itself. Package engine fills it in when it is initialised; nothing
// outside this repository can import it.
package engineview

import "github.com/xdpeng/xdpeng/xsk"

// Sockets returns the receiving socket of each queue of an *engine.Engine,
// in queue order. The sockets are the engine's: look, do not touch their
// rings.
var Sockets func(engine any) []*xsk.Socket
