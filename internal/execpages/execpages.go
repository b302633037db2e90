// Package execpages gives back the memory a process's own code occupies once it is no
// longer running most of it.
//
// A Go binary's code and read-only data are mapped from its file, and the kernel maps
// them in 64 KB around every page touched, so starting relay's daemon (every package's
// init runs) leaves 18 MB of a 32 MB binary resident, counted in its RSS although it will
// not run again. Those pages are clean copies of the file: dropping them from the process
// loses nothing, the kernel keeps them in its page cache, and the code the daemon does run
// next maps back in on first use (minor faults, no disk read).
package execpages

// Stats says what Drop released.
type Stats struct {
	Mappings int   // read-only mappings of the executable released
	Bytes    int64 // their size (only the resident part counted in RSS)
	Kept     int   // read-only mappings kept: the dynamic loader wrote them (relocations)
}
