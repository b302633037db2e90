//go:build !linux

package execpages

// Drop does nothing here: only Linux says which mappings are the executable's.
func Drop() (Stats, error) { return Stats{}, nil }
