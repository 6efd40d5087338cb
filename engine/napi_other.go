//go:build !linux

package engine

func (n *napiState) restore() error { return nil }
