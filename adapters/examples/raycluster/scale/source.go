package main

import (
	"path/filepath"
	"runtime"
)

// sourceDir is this package's directory, inside the adapters module, where
// `go build` of the raycluster example runs.
func sourceDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "."
	}
	return filepath.Dir(file)
}
