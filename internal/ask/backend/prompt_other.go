//go:build !linux

package backend

import "os"

func newPromptFile(dir, prompt string) (*os.File, error) { return newPromptFileIn(dir, prompt) }
