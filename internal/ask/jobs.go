package ask

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/relaydev/relay/internal/atomicfile"
	"github.com/relaydev/relay/internal/run"
)

// JobStore keeps `relay ask --background` jobs: one directory per job under
// $RELAY_HOME/ask/jobs holding job.json (what was asked, by which process),
// request.json (what to ask, as whom), result.json (the answers, written by the job
// when it ends) and stderr.log.
type JobStore struct {
	Dir string
}

// Job is one background ask.
type Job struct {
	ID      string    `json:"id"`
	To      []string  `json:"to"`
	Prompt  string    `json:"prompt"` // the first 280 characters
	Thread  string    `json:"thread,omitempty"`
	Started time.Time `json:"started"`
	PID     int       `json:"pid"`
	// Status is derived when read: running, done, failed, or lost (the
	// process is gone without a result).
	Status string `json:"status"`
	// Exit is the job's exit code once it ended (0 answered).
	Exit *int `json:"exit,omitempty"`
}

// NewJob creates a job's directory and record; the caller starts the process
// and then calls SetPID.
func (s *JobStore) NewJob(to []string, prompt, thread string, now time.Time) (*Job, error) {
	j := &Job{ID: strings.ReplaceAll(uuid.NewString(), "-", "")[:12], To: to, Prompt: clipRunes(strings.TrimSpace(prompt), 280),
		Thread: thread, Started: now.UTC(), Status: "running"}
	if err := os.MkdirAll(s.dir(j.ID), 0o700); err != nil {
		return nil, err
	}
	return j, s.save(j)
}

func (s *JobStore) dir(id string) string { return filepath.Join(s.Dir, id) }

// Paths of a job's files.
func (s *JobStore) ResultPath(id string) string { return filepath.Join(s.dir(id), "result.json") }
func (s *JobStore) StderrPath(id string) string { return filepath.Join(s.dir(id), "stderr.log") }

// SpecPath is the job's request (0600: it holds the prompt), read by the job's process.
func (s *JobStore) SpecPath(id string) string { return filepath.Join(s.dir(id), "request.json") }

func (s *JobStore) save(j *Job) error {
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(s.dir(j.ID), "job.json"), append(b, '\n'), 0o600)
}

// SetPID records the job's process.
func (s *JobStore) SetPID(j *Job, pid int) error { j.PID = pid; return s.save(j) }

// Finish records the job's exit code (called by the job itself at its end).
func (s *JobStore) Finish(id string, code int) error {
	j, err := s.load(id)
	if err != nil {
		return err
	}
	j.Exit = &code
	return s.save(j)
}

func validJobID(id string) bool {
	if len(id) != 12 {
		return false
	}
	return strings.Trim(id, "0123456789abcdef") == ""
}

func (s *JobStore) load(id string) (*Job, error) {
	if !validJobID(id) {
		return nil, fmt.Errorf("%q is not a job id (12 hex digits, see relay ask jobs)", id)
	}
	b, err := os.ReadFile(filepath.Join(s.dir(id), "job.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no job %s (see relay ask jobs)", id)
	}
	if err != nil {
		return nil, err
	}
	var j Job
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("job %s is unreadable: %v", id, err)
	}
	j.ID = id
	j.Status = s.status(&j)
	return &j, nil
}

// Get reads one job, with its current status.
func (s *JobStore) Get(id string) (*Job, error) { return s.load(id) }

// status: the exit code once the job recorded one; else running while its
// process lives, lost when it is gone.
func (s *JobStore) status(j *Job) string {
	switch {
	case j.Exit != nil && *j.Exit == 0:
		return "done"
	case j.Exit != nil:
		return "failed"
	case run.Alive(j.PID):
		return "running"
	}
	return "lost"
}

// List reads every job, newest first.
func (s *JobStore) List() ([]*Job, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Job
	for _, e := range entries {
		if !e.IsDir() || !validJobID(e.Name()) {
			continue
		}
		if j, err := s.load(e.Name()); err == nil {
			out = append(out, j)
		}
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Started.After(out[k].Started) })
	return out, nil
}

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
