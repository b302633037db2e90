package backend

import (
	"io"
	"os"
	"path/filepath"
)

// newPromptFileIn writes the prompt to a new file of mode 0600 in relay's private
// temporary directory (removed with it after the run).
func newPromptFileIn(dir, prompt string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "prompt.txt"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	return fillPromptFile(f, prompt)
}

// fillPromptFile writes the prompt and rewinds, so the CLI reads it from the start
// through the offset it shares with relay.
func fillPromptFile(f *os.File, prompt string) (*os.File, error) {
	if _, err := io.WriteString(f, prompt); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
