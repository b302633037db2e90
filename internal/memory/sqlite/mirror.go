package sqlite

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relaydev/relay/internal/atomicfile"
	"github.com/relaydev/relay/internal/memory"
)

// mirror writes the human-readable copy of the store (threads/<id>/…). It is written after
// each commit and never read back, so a mirror failure never fails a request; the last
// error is kept for `relay doctor`. It is off unless asked for (Options.Mirror): it
// doubled the disk used and its state.json rewrites competed with patches for the CPU.
type mirror struct {
	off     bool   // every method does nothing
	root    string // $RELAY_HOME/threads
	lastErr atomic.Value

	mu      sync.Mutex
	dirty   map[string]func() []byte // thread → latest state document
	kick    chan struct{}
	done    chan struct{}
	stopped chan struct{}

	files     chan fileJob // artifact files, written off the commit path
	filesDone chan struct{}

	logMu sync.Mutex
	logs  map[string]*os.File // open events.log files
}

type fileJob struct {
	path    string
	content []byte
}

func newMirror(root string, on bool) *mirror {
	if !on {
		return &mirror{off: true, root: root}
	}
	m := &mirror{root: root, dirty: map[string]func() []byte{}, kick: make(chan struct{}, 1),
		done: make(chan struct{}), stopped: make(chan struct{}),
		files: make(chan fileJob, 64), filesDone: make(chan struct{}), logs: map[string]*os.File{}}
	go m.loop()
	go func() {
		defer close(m.filesDone)
		for j := range m.files {
			m.fail(writeFileAtomic(j.path, j.content))
		}
	}()
	return m
}

func (m *mirror) fail(err error) {
	if err != nil {
		m.lastErr.Store(err.Error())
	}
}

// Err returns the last mirror write error, or "".
func (m *mirror) Err() string {
	s, _ := m.lastErr.Load().(string)
	return s
}

func (m *mirror) threadDir(id string) string { return filepath.Join(m.root, id) }

// state schedules state.json of a thread to be rewritten; rewrites coalesce because a large
// state rewritten on every patch would dominate the patch cost.
func (m *mirror) state(id string, doc func() []byte) {
	if m.off {
		return
	}
	m.mu.Lock()
	m.dirty[id] = doc
	m.mu.Unlock()
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

func (m *mirror) loop() {
	defer close(m.stopped)
	for {
		select {
		case <-m.kick:
			time.Sleep(50 * time.Millisecond)
			m.flush()
		case <-m.done:
			m.flush()
			return
		}
	}
}

func (m *mirror) flush() {
	m.mu.Lock()
	d := m.dirty
	m.dirty = map[string]func() []byte{}
	m.mu.Unlock()
	for id, doc := range d {
		b := doc()
		if b == nil {
			continue
		}
		// Indent the stored bytes: same member order and numbers as the API, no decode.
		var pretty bytes.Buffer
		pretty.Grow(len(b) + len(b)/4)
		if json.Indent(&pretty, b, "", "  ") != nil {
			pretty.Reset()
			pretty.Write(b)
		}
		pretty.WriteByte('\n')
		m.fail(writeFileAtomic(filepath.Join(m.threadDir(id), "state.json"), pretty.Bytes()))
	}
}

func (m *mirror) close() {
	if m.off {
		return
	}
	close(m.done)
	<-m.stopped
	close(m.files)
	<-m.filesDone
	m.closeLogs()
}

// event appends one JSON line to threads/<id>/events.log; callers hold the write lock, so
// lines are in id order. Recently used logs stay open (appending is then one syscall).
func (m *mirror) event(e memory.Event) {
	if m.off {
		return
	}
	// Lines are written at commit, before a seq is known; a repair replays events read back
	// with one, and its lines must match the live ones.
	e.Seq = 0
	line, err := json.Marshal(e)
	if err != nil {
		m.fail(err)
		return
	}
	m.logMu.Lock()
	defer m.logMu.Unlock()
	f := m.logs[e.ThreadID]
	if f == nil {
		dir := m.threadDir(e.ThreadID)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			m.fail(err)
			return
		}
		if f, err = os.OpenFile(filepath.Join(dir, "events.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err != nil {
			m.fail(err)
			return
		}
		if len(m.logs) >= maxOpenLogs {
			for id, old := range m.logs { // drop an arbitrary one
				old.Close()
				delete(m.logs, id)
				break
			}
		}
		m.logs[e.ThreadID] = f
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		m.fail(err)
		f.Close()
		delete(m.logs, e.ThreadID)
	}
}

const maxOpenLogs = 32

func (m *mirror) closeLogs() {
	m.logMu.Lock()
	defer m.logMu.Unlock()
	for id, f := range m.logs {
		m.fail(f.Close())
		delete(m.logs, id)
	}
}

func (m *mirror) artifact(a memory.Artifact, content []byte) {
	if m.off {
		return
	}
	// Buffered: a slow disk slows writers down (backpressure) instead of growing memory.
	// The copy keeps the caller free to reuse its buffer.
	// Named by the ref relay shows (unique store-wide since the put drew it so), as people read it.
	m.files <- fileJob{filepath.Join(m.threadDir(a.ThreadID), "artifacts", memory.Short(a.Ref)+memory.ExtFor(a.Type, a.Mime)), bytes.Clone(content)}
}

// writeFileAtomic replaces a mirror file. No fsync: the mirror is rebuilt from the
// database when it falls behind, so a power loss costs nothing.
func writeFileAtomic(path string, b []byte) error {
	return atomicfile.Write(path, 0o600, atomicfile.Options{NoSync: true, MkdirPerm: 0o700}, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}
