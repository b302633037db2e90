//go:build !race

package testsupport

// RaceEnabled says the tests run with -race; binaries built for them are instrumented too.
const RaceEnabled = false
